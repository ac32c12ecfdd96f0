// Our node's delete refused by the server: one backoff for an acquire's cleanup and a hold's
// release alike (100 ms, 200 ms, ... at most max_backoffs times), and one log line.
#include "sansio/acquire_fsm.hpp"
#include "sansio/hold_fsm.hpp"
#include "sansio/node_delete_backoff.hpp"

#include <catch2/catch.hpp>

using namespace zklock;
using namespace zklock::detail;
using namespace std::chrono_literals;

TEST_CASE("a delete refused for now is sent again after 100 ms, 200 ms, ..., max_backoffs times", "[unit][delete_backoff]") {
  delete_backoff b;
  CHECK(b.after_refusal(zk_errc::throttled_op) == 100ms);
  CHECK(b.after_refusal(zk_errc::system_error) == 200ms);
  CHECK(b.after_refusal(zk_errc::throttled_op) == 400ms);
  CHECK(b.after_refusal(zk_errc::throttled_op) == 800ms);
  CHECK(b.after_refusal(zk_errc::throttled_op) == 1600ms);
  CHECK_FALSE(b.after_refusal(zk_errc::throttled_op));  // used up: refused for good
}

TEST_CASE("a delete refused for good is not sent again", "[unit][delete_backoff]") {
  delete_backoff b;
  CHECK_FALSE(b.after_refusal(zk_errc::no_auth));
  CHECK(b.after_refusal(zk_errc::throttled_op) == 100ms);  // (a refusal for good uses no backoff)
}

TEST_CASE("the acquire's cleanup and the hold's release share the one backoff", "[unit][delete_backoff]") {
  STATIC_REQUIRE(acquire_fsm::max_delete_backoffs == delete_backoff::max_backoffs);
  STATIC_REQUIRE(hold_fsm::max_release_backoffs == delete_backoff::max_backoffs);
}

TEST_CASE("a node refused for good is logged with its path and the server's reason", "[unit][delete_backoff]") {
  auto line = delete_refused_message("/locks/a/_c_x-lock-0000000001", zk_errc::no_auth);
  CHECK(line.find("/locks/a/_c_x-lock-0000000001") != std::string::npos);
  CHECK(line.find(error_code(zk_errc::no_auth).message()) != std::string::npos);
  CHECK(line.find("blocks the lock until the session ends") != std::string::npos);
}
