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
    bool reported = false;  // its line was said
  };
  std::map<std::string, server_failures> failures;  // by "host:port"
  std::string resolve_failure;  // the C client's resolver failed: why

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
        ++f.attempts;
        // recv() found the end of the stream: the C client says errno 112 ("Host is down") for a
        // server that closed the connection (it stopped, or would not serve us). Said as such,
        // and only when the next attempt fails the same way: a server that stopped refuses the
        // next one, and that ("Connection refused") is the cause worth telling.
        bool closed = m.find("errno=112(") != std::string_view::npos;
        f.reason = closed ? std::string("the server closed the connection") : std::string(between(m, "(", ")"));
        if (!f.reported && (!closed || f.attempts > 1)) {
          f.reported = true;
          if (show >= zklock::log_level::warn && show < zklock::log_level::debug)
            say(std::string(server) + ": " + f.reason + " (retrying; -v shows each attempt)");
        }
      }
      level = zklock::log_level::debug;
    } else if (auto why = m.find("resolve_hosts"); why != std::string_view::npos) {
      // "ZOO_ERROR@resolve_hosts@947: getaddrinfo: Name or service not known": the C client
      // could not resolve a host that getaddrinfo resolved for us (unresolvable_host): said
      // once, by connect(), with what the connect string was
      auto reason = m.substr(why);
      if (auto colon = reason.rfind(": "); colon != std::string_view::npos) reason.remove_prefix(colon + 2);
      resolve_failure = std::string(reason);
      level = zklock::log_level::debug;
    } else if (m.find("Delaying connection after exhaustively trying") != std::string_view::npos ||
               m.find("Exceeded deadline by") != std::string_view::npos) {
      level = zklock::log_level::debug;
    }
    if (level <= show) std::fprintf(stderr, "zklock: [zookeeper] %.*s\n", static_cast<int>(m.size()), m.data());
  }

  // For the message when connecting fails: what each server answered, and how often we tried
  // (" (HOST:PORT: Connection refused, 12 attempts)"); empty when none answered.
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
