// The four-letter-word client of the tests, the benchmarks and try_lock_cost: one word ("ruok",
// "srvr", "stat", "cons", "wchc", "mntr", ...) to a server on 127.0.0.1, the whole reply back.
// Header-only, plain POSIX, so that bench/ (built without the tests) includes it too.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zklock::test {

/// Sends a four-letter word to 127.0.0.1:port and returns the whole reply, or "" on failure or
/// after `timeout`.
inline std::string four_letter(std::uint16_t port, const std::string& cmd,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<long long>(0, ms.count()));
  };
  auto wait_for = [&](short events) {
    for (;;) {
      pollfd p{fd, events, 0};
      int r = ::poll(&p, 1, left());
      if (r < 0 && errno == EINTR) continue;
      return r == 1 ? p.revents : short(0);
    }
  };
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) {
      ::close(fd);
      return {};
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (!(wait_for(POLLOUT) & POLLOUT) || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      return {};
    }
  }
  std::size_t sent = 0;
  while (sent < cmd.size()) {
    ssize_t n = ::send(fd, cmd.data() + sent, cmd.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!(wait_for(POLLOUT) & POLLOUT)) break;
    } else {
      break;
    }
  }
  if (sent == cmd.size()) {
    char buf[8192];
    for (;;) {  // the server closes the connection after its reply
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!(wait_for(POLLIN) & (POLLIN | POLLHUP | POLLERR))) break;  // timed out
      } else {
        break;
      }
    }
  }
  ::close(fd);
  return out;
}

/// The same to the first server of a connect string ("127.0.0.1:PORT,..."); "" when that server
/// is not on 127.0.0.1 (or localhost): the word goes to no other address.
inline std::string four_letter(const std::string& connect, const std::string& cmd,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) {
  const auto first = connect.substr(0, connect.find(','));
  const auto colon = first.rfind(':');
  if (colon == std::string::npos) return {};
  const auto host = first.substr(0, colon);
  if (host != "127.0.0.1" && host != "localhost") return {};
  try {
    const int port = std::stoi(first.substr(colon + 1));
    if (port <= 0 || port > 65535) return {};
    return four_letter(static_cast<std::uint16_t>(port), cmd, timeout);
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace zklock::test
