// The C client's log as a program sees it by default: one line per unreachable server and
// outage, the retry chatter at debug level.
#include "engine/log_summary.hpp"

#include <catch2/catch.hpp>

using namespace zklock;
using namespace zklock::detail;

namespace {
const char* refused =
    "2026-11-24 21:16:20,635:15946:ZOO_ERROR@check_events@2985: Socket 127.0.0.1:56115 zk retcode=-4, "
    "errno=111(Connection refused): server refused to accept the client";
const char* refused_other =
    "2026-11-24 21:16:20,655:15946:ZOO_ERROR@check_events@2985: Socket 127.0.0.1:40000 zk retcode=-4, "
    "errno=111(Connection refused): server refused to accept the client";
const char* delaying =
    "2026-11-24 21:16:20,700:15946:ZOO_WARN@zookeeper_interest@2220: Delaying connection after exhaustively trying all "
    "servers [127.0.0.1:56115]";
// recv() at the end of the stream: the C client reports errno EHOSTDOWN.
const char* host_down =
    "2026-11-24 21:16:20,635:15946:ZOO_ERROR@check_events@3014: Socket 127.0.0.1:56115 zk retcode=-4, "
    "errno=112(Host is down): failed while receiving a server response";
// The same line logged a second later: another attempt.
std::string later(const char* line) {
  std::string l = line;
  l.replace(l.find(":20,"), 4, ":21,");
  return l;
}
const char* expired =
    "2026-11-24 21:15:55,335:15946:ZOO_ERROR@check_events@3048: Socket 127.0.0.1:46145 zk retcode=-112, "
    "errno=116(Stale file handle): sessionId=0x100001e74a60000 has expired.";
}  // namespace

TEST_CASE("log summary: one warn line per unreachable server and outage, the raw lines at debug", "[unit][log]") {
  log_summary sum;
  std::optional<log_summary::line> extra;
  int shown = 0;
  for (int attempt = 0; attempt < 30; ++attempt) {  // ~10 s of an outage
    for (const char* l : {refused, refused_other, delaying}) {
      auto level = sum.classify(log_level::error, l, extra);
      CHECK(level == log_level::debug);
      if (extra) {
        ++shown;
        CHECK(extra->level == log_level::warn);
        CHECK(extra->text.find("unreachable: Connection refused") != std::string::npos);
      }
    }
  }
  CHECK(shown == 2);  // one per server
  CHECK(sum.failures().find("127.0.0.1:56115: Connection refused, 1 attempt") != std::string::npos);
  // a line logged twice counts once; a new outage after a connection is reported again
  sum.on_connected();
  CHECK(sum.failures().empty());
  sum.classify(log_level::error, refused, extra);
  CHECK(extra);
  // news is not chatter: a session's expiry and other lines keep their level
  CHECK(sum.classify(log_level::error, expired, extra) == log_level::error);
  CHECK_FALSE(extra);
  CHECK(sum.classify(log_level::info, "2026-11-24 ZOO_INFO@log_env@1: Client environment:zookeeper.version=3.8.0", extra) ==
        log_level::info);
}

TEST_CASE("log summary: a failure the engine found (an answer that is not ZooKeeper's) is one attempt, with its reason",
          "[unit][log]") {
  log_summary sum;
  auto first = sum.note_failure("127.0.0.1:56115", "not a ZooKeeper server (answered \"HTTP/1.1 400\")");
  REQUIRE(first);
  CHECK(first->level == log_level::warn);
  CHECK(first->text.find("127.0.0.1:56115 unreachable: not a ZooKeeper server") != std::string::npos);
  // The C client's line about the same attempt (the connection it saw end) adds nothing.
  std::optional<log_summary::line> extra;
  CHECK(sum.classify(log_level::error, host_down, extra) == log_level::debug);
  CHECK_FALSE(extra);
  CHECK(sum.failures() == "127.0.0.1:56115: not a ZooKeeper server (answered \"HTTP/1.1 400\"), 1 attempt");
  CHECK_FALSE(sum.note_failure("127.0.0.1:56115", "not a ZooKeeper server (again)"));  // once per outage
  CHECK(sum.failures().find("2 attempts") != std::string::npos);
}

TEST_CASE("log summary: a server that closed the connection says so, not 'Host is down'", "[unit][log]") {
  log_summary sum;
  std::optional<log_summary::line> extra;
  // the first closed connection: nothing yet (the next attempt tells why)
  CHECK(sum.classify(log_level::error, host_down, extra) == log_level::debug);
  CHECK_FALSE(extra);
  CHECK(sum.causes() == "127.0.0.1:56115: the server closed the connection");
  // closed again: said as such
  CHECK(sum.classify(log_level::error, later(host_down), extra) == log_level::debug);
  REQUIRE(extra);
  CHECK(extra->text.find("Host is down") == std::string::npos);
  CHECK(extra->text.find("127.0.0.1:56115 unreachable: the server closed the connection") != std::string::npos);
  CHECK(sum.failures() == "127.0.0.1:56115: the server closed the connection, 2 attempts");
}

TEST_CASE("log summary: a server stopped under us is reported by its refusal, not the closed connection",
          "[unit][log]") {
  log_summary sum;
  std::optional<log_summary::line> extra;
  sum.classify(log_level::error, host_down, extra);
  CHECK_FALSE(extra);
  sum.classify(log_level::error, refused, extra);
  REQUIRE(extra);
  CHECK(extra->text.find("127.0.0.1:56115 unreachable: Connection refused") != std::string::npos);
  sum.classify(log_level::error, later(refused), extra);
  CHECK_FALSE(extra);  // once per outage
  CHECK(sum.causes() == "127.0.0.1:56115: Connection refused");
}

TEST_CASE("log summary: closing a session whose server does not answer is not a warning", "[unit][log]") {
  const char* close_wait =
      "2026-11-24 21:16:20,635:15946:ZOO_WARN@wait_for_session_to_be_closed@3811: Timed out (1500ms) during waiting "
      "for server's reply after sending a close request, sessionId=0x100001e74a60000";
  log_summary sum;
  std::optional<log_summary::line> extra;
  CHECK(sum.classify(log_level::warn, close_wait, extra) == log_level::debug);
  CHECK_FALSE(extra);
}
