// Setting up the ZooKeeper session: the connect string and credentials as given, the C
// client's log as zklock shows it, and connecting (racing with signals and --timeout).
#pragma once

#include "common.hpp"

#include <zklock/session.hpp>

#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace zklock_cli {

// ---------------------------------------------------------------------------------------------
// The C client's log
//
// By default its routine chatter while a server is unreachable (a "Connection refused" line and
// a "Delaying connection" line every few hundred ms, "Exceeded deadline by") is kept at debug
// level: zklock reports each unreachable server once in a line of its own, and counts the
// attempts for the message when it gives up. -v shows every line, -q only errors.

struct zk_log {
  zklock::log_level show = zklock::log_level::warn;
  struct server_failures {
    int attempts = 0;
    std::string reason;
    std::string last_line;  // the C client logs some failures twice
  };
  std::map<std::string, server_failures> failures;  // by "host:port"

  static std::string_view between(std::string_view m, std::string_view before, std::string_view after) {
    auto i = m.find(before);
    if (i == std::string_view::npos) return {};
    i += before.size();
    auto j = m.find(after, i);
    return j == std::string_view::npos ? std::string_view{} : m.substr(i, j - i);
  }

  void operator()(zklock::log_level level, std::string_view m) {
    while (!m.empty() && std::isspace(static_cast<unsigned char>(m.back()))) m.remove_suffix(1);
    // "Socket HOST:PORT zk retcode=-4, errno=111(Connection refused): ..."
    if (auto server = between(m, "Socket ", " zk retcode="); !server.empty()) {
      auto& f = failures[std::string(server)];
      if (f.last_line != m) {
        f.last_line = std::string(m);
        if (++f.attempts == 1 && show >= zklock::log_level::warn && show < zklock::log_level::debug)
          say(std::string(server) + ": " + std::string(between(m, "(", ")")) + " (retrying; -v shows each attempt)");
        f.reason = std::string(between(m, "(", ")"));
      }
      level = zklock::log_level::debug;
    } else if (m.find("Delaying connection after exhaustively trying") != std::string_view::npos ||
               m.find("Exceeded deadline by") != std::string_view::npos) {
      level = zklock::log_level::debug;
    }
    if (level <= show) std::fprintf(stderr, "zklock: [zookeeper] %.*s\n", static_cast<int>(m.size()), m.data());
  }

  // For the message when connecting fails: what each server answered, and how often we tried.
  std::string failure_summary() const {
    std::string r;
    for (const auto& [server, f] : failures)
      r += (r.empty() ? " (" : "; ") + server + ": " + f.reason + ", " + std::to_string(f.attempts) +
           (f.attempts == 1 ? " attempt" : " attempts");
    return r.empty() ? r : r + ")";
  }
};

zklock::session_options make_session_options(const common_options& o, const std::shared_ptr<zk_log>& log);

// Connects, racing with the termination signals and `deadline` (--timeout). Returns 0 when
// connected, else an exit status.
asio::awaitable<int> connect(zklock::session& s, asio::signal_set& sigs, const common_options& co, const zk_log& log,
                             steady::time_point deadline = steady::time_point::max());

// $ZKLOCK_CONNECT, else 127.0.0.1:2181.
std::string default_connect();

// The C client reports a host it cannot resolve as errno ENOENT ("No such file or
// directory"), after a log line: resolve them first, for a message that names the host.
std::optional<std::string> unresolvable_host(std::string_view connect);

// Digest credentials from --digest-file (first line) or $ZKLOCK_DIGEST, which is then removed
// from the environment: the command does not inherit the password.
std::optional<std::string> read_digest(const std::string& file, std::string& digest);

}  // namespace zklock_cli
