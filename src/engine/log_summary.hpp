// What of the C client's log a program sees by default. While a server is unreachable the C
// client logs a failure line per attempt (several a second: "Socket HOST:PORT zk retcode=-4,
// errno=111(Connection refused): ...", "Delaying connection after exhaustively trying all
// servers", "Exceeded deadline by N ms") at error level. The summary reports each server's
// failure once (a closed connection, the C client's "Host is down", by the cause of the next
// attempt: a stopped server refuses it), in a line of zklock's own at warn level, keeps the raw lines at debug level, and
// starts over once a connection is established. Sans-I/O: lines in, lines out.
#pragma once

#include <zklock/types.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace zklock::detail {

class log_summary {
 public:
  struct line {
    log_level level;
    std::string text;
  };
  /// A line of the C client: the level it is kept at (debug for routine retry chatter), and a
  /// summary line to emit before it, if any (the first failure of a server since the last
  /// connection).
  log_level classify(log_level level, std::string_view message, std::optional<line>& summary);
  /// A failure of `server` the engine found itself (an answer that is not ZooKeeper's): counted,
  /// its reason kept; the C client's line about the same attempt is then not counted again.
  /// Returns the summary line when it is the server's first failure since the last connection.
  std::optional<line> note_failure(std::string_view server, std::string reason);
  /// A connection was established: report the next outage afresh.
  void on_connected() noexcept { failures_.clear(); }
  /// "HOST:PORT: reason, N attempts; ..." for the servers that failed since the last
  /// connection (empty when none did).
  std::string failures() const;
  /// "HOST:PORT: reason; ..." for the same servers, without counts: the cause a connect
  /// timeout's error carries (a message with a bounded set of values).
  std::string causes() const;

 private:
  struct server_failures {
    int attempts = 0;
    std::string reason;
    std::string last_line;  // the C client logs some failures twice
    bool noted = false;     // note_failure counted the attempt the C client's next line is about
    bool reported = false;  // its summary line was emitted
  };
  /// The server's summary line, unless emitted already in this outage.
  static std::optional<line> first_summary(std::string_view server, server_failures& f);
  std::map<std::string, server_failures, std::less<>> failures_;
};

}  // namespace zklock::detail
