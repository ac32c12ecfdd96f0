// The fault harness's client side of the fenced resource (see harness.cpp, "resource"): one
// blocking loopback TCP connection, one line per message, one line per reply.
//   KIND WHO TOKEN T_NS [EXTRA...]      ->  "OK [HOLD <ms>]" or "REJECT <highest token seen>"
// T_NS is CLOCK_MONOTONIC in ns (std::chrono::steady_clock on Linux, Java's System.nanoTime,
// Python's time.monotonic_ns): every process on this machine reads the same clock.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zklock::fault {

inline std::int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class resource_client {
 public:
  resource_client(std::uint16_t port, std::string who) : who_(std::move(who)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("cannot connect to the resource on port " + std::to_string(port));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~resource_client() { ::close(fd_); }
  resource_client(const resource_client&) = delete;
  resource_client& operator=(const resource_client&) = delete;

  /// Sends one message stamped now and returns the reply line ("" if the harness is gone).
  std::string send(const std::string& kind, std::int64_t token, const std::string& extra = "") {
    std::string line = kind + " " + who_ + " " + std::to_string(token) + " " + std::to_string(mono_ns());
    if (!extra.empty()) line += " " + extra;
    line += "\n";
    for (std::size_t off = 0; off < line.size();) {
      ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return {};
      off += static_cast<std::size_t>(n);
    }
    std::string reply;
    char c;
    while (::read(fd_, &c, 1) == 1 && c != '\n') reply.push_back(c);
    return reply;
  }

 private:
  std::string who_;
  int fd_ = -1;
};

/// "OK HOLD 5000" -> 5000; otherwise `fallback`.
inline int hold_ms_of(const std::string& reply, int fallback) {
  auto at = reply.find("HOLD ");
  return at == std::string::npos ? fallback : std::stoi(reply.substr(at + 5));
}

}  // namespace zklock::fault
