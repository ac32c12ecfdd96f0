// Connecting and identities without a server: which handshake answers cannot be ZooKeeper's, error
// codes that carry their own message, and the node data that carries an identity.
#include "engine/handshake.hpp"
#include "error_message.hpp"
#include "engine/client_id.hpp"
#include "sansio/acquire_fsm.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"

#include <zklock/error.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <unistd.h>

using namespace zklock;
using namespace zklock::detail;
using namespace std::chrono_literals;

TEST_CASE("handshake: an HTTP answer read as ZooKeeper's is implausible, real servers' answers are not",
          "[unit][connect]") {
  // "HTTP/1.1 400 Bad Request" read as the C client reads a connect response
  CHECK(implausible_handshake(10000ms, 0x20343030, 0x2042616420526571));
  // any four printable bytes are over 6 days
  CHECK(implausible_handshake(10000ms, 0x20202020, 0x0100000000000001));
  CHECK(implausible_handshake(10000ms, 4000, 0));   // session id 0: the server refused a session
  CHECK(implausible_handshake(10000ms, 0, 0x100));   // no timeout
  CHECK(implausible_handshake(10000ms, -5, 0x100));  // negative (a high first byte)
  // what a server grants: the asked timeout clamped to [min, max] (min may be above what we ask)
  CHECK_FALSE(implausible_handshake(10000ms, 10000, 0x1000a3f2e5c0007));
  CHECK_FALSE(implausible_handshake(10000ms, 4000, 0x1000a3f2e5c0007));      // clamped down
  CHECK_FALSE(implausible_handshake(1000ms, 4000, 0x1000a3f2e5c0007));       // raised to the minimum
  CHECK_FALSE(implausible_handshake(1000ms, 3600000, -0x7f00000000000001));  // server id 129 and up: negative ids
  CHECK_FALSE(implausible_handshake(48h, 48 * 3600000LL, 0x100));            // a long one that was asked for
  CHECK(implausible_handshake(1000ms, 25 * 3600000LL, 0x100));               // far beyond asked and any minimum
  auto why = implausible_handshake(10000ms, 0x20343030, 0x2042616420526571);
  REQUIRE(why);
  CHECK(*why == "a session timeout of 540291120 ms for 10000 ms asked");
}

TEST_CASE("an error code with its own message still compares as its errc and its condition", "[unit][error]") {
  error_code plain = errc::connect_timeout;
  error_code detailed = with_message(errc::connect_timeout, "could not connect: 127.0.0.1:1: Connection refused");
  CHECK(detailed.message() == "could not connect: 127.0.0.1:1: Connection refused");
  CHECK(detailed == errc::connect_timeout);
  CHECK(detailed == plain);
  CHECK(detailed.category() == zklock_category());
  CHECK(std::string(detailed.category().name()) == "zklock");
  CHECK(detailed == condition::session_lost);
  CHECK(detailed != errc::not_connected);
  CHECK(detailed != condition::connection_lost);
  // the same message is the same category object; another value of it says its own message
  CHECK(&with_message(errc::connect_timeout, detailed.message()).category() == &detailed.category());
  CHECK(detailed.category().message(static_cast<int>(errc::lock_busy)) == error_code(errc::lock_busy).message());
  // the new codes: their own messages, and no session was established
  for (auto e : {errc::not_zookeeper, errc::unresolvable_host}) {
    error_code ec = e;
    CHECK(ec.message().find("unknown") == std::string::npos);
    CHECK(ec == condition::session_lost);
    CHECK(with_message(e, "x") == e);
  }
}


TEST_CASE("identity: the host's pid, and the parent session from $ZKLOCK_SESSION", "[unit][connect]") {
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  // not in a nested PID namespace here: the pid alone
  ::unsetenv(parent_session_variable);
  CHECK(default_identity() == std::string(host) + ":" + std::to_string(::getpid()));
  CHECK(node_identity(std::nullopt) == default_identity());
  CHECK(node_identity(std::string("web-1")) == "web-1");
  ::setenv(parent_session_variable, "0x1000a3f2e5c0007", 1);
  CHECK(node_identity(std::string("web-1")) == "web-1 parent=0x1000a3f2e5c0007");
  CHECK(node_identity(std::string()) == "");  // no identity: the marker alone
  const std::string with_parent = node_identity(std::nullopt);
  auto parts = split_parent(with_parent);
  CHECK(parts.identity == default_identity());
  CHECK(parts.parent == 0x1000a3f2e5c0007);
  for (const char* bad : {"", "0x", "1000a3f2e5c0007", "0xzz", "0x10000000000000000"}) {
    ::setenv(parent_session_variable, bad, 1);
    CHECK(node_identity(std::string("web-1")) == "web-1");
  }
  ::unsetenv(parent_session_variable);
  CHECK(split_parent("a b parent=0x7 parent=0x9").identity == "a b parent=0x7");
  CHECK(split_parent("a b parent=0x7 parent=0x9").parent == 9);
}
