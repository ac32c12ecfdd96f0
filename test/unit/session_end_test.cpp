// The session ended -> which error: one rule (src/sansio/session_end.hpp) for operations that
// start, running ones and failed requests.
#include "acquire_test.hpp"
#include "sansio/session_end.hpp"

TEST_CASE("session ended: one rule for starting operations, running ones and failed requests", "[unit][lock][error]") {
  using st = session_state;
  // an operation that starts
  CHECK(session_end_error(st::closed) == errc::session_closed);
  CHECK(session_end_error(st::expired) == errc::session_expired);
  CHECK(session_end_error(st::disconnected) == errc::not_connected);
  CHECK(session_end_error(st::connecting) == errc::not_connected);
  CHECK_FALSE(session_end_error(st::suspended));
  CHECK_FALSE(session_end_error(st::connected));
  // an operation that ran on a session: not established any more means that session is gone
  CHECK(session_end_error(st::closed, true) == errc::session_closed);
  CHECK(session_end_error(st::expired, true) == errc::session_expired);
  CHECK(session_end_error(st::connecting, true) == errc::session_expired);
  CHECK(session_end_error(st::disconnected, true) == errc::session_expired);
  CHECK_FALSE(session_end_error(st::reconnected, true));
  CHECK(session_end_error(st::reconnected, true, true) == errc::session_expired);  // replaced
  // a request's error
  CHECK(session_end_error(error_code(zk_errc::closing)) == errc::session_closed);
  CHECK(session_end_error(error_code(errc::session_closed)) == errc::session_closed);
  CHECK(session_end_error(error_code(zk_errc::session_expired)) == errc::session_expired);
  CHECK(session_end_error(error_code(errc::not_connected)) == errc::session_expired);
  // every one of them is condition::session_lost
  for (auto s : {st::closed, st::expired, st::disconnected, st::connecting})
    for (bool ran : {false, true}) CHECK(session_end_error(s, ran) == condition::session_lost);
}

TEST_CASE("a request failing because the handle closed under a running acquire: session_expired", "[unit][lock][error]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.step();  // create
  s.replies.clear();
  s.apply(s.fsm.on_children(errc::not_connected, {}));
  s.drain();
  // the cleanup's delete fails the same way; the node went with the session
  while (!s.completed && !s.replies.empty()) s.step();
  if (!s.completed) s.apply(s.fsm.on_expired(errc::session_expired));
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
}

TEST_CASE("session ended: the session's state names why a held lock is lost", "[unit][lock][error]") {
  using st = session_state;
  // closed by its owner, whatever else
  CHECK(lost_cause_of(st::closed, false) == lost_cause::session_closed);
  CHECK(lost_cause_of(st::closed, true) == lost_cause::session_closed);
  // expired, replaced, or gone under a new connect
  CHECK(lost_cause_of(st::expired, false) == lost_cause::session_expired);
  CHECK(lost_cause_of(st::expired, true) == lost_cause::session_expired);
  CHECK(lost_cause_of(st::connected, true) == lost_cause::session_replaced);
  CHECK(lost_cause_of(st::reconnected, true) == lost_cause::session_replaced);
  CHECK(lost_cause_of(st::suspended, true) == lost_cause::session_expired);
  CHECK(lost_cause_of(st::connecting, false) == lost_cause::session_expired);
  CHECK(lost_cause_of(st::disconnected, false) == lost_cause::session_expired);
  // the same session, live: connected means the node went; suspended, the deadline passed
  CHECK(lost_cause_of(st::connected, false) == lost_cause::node_deleted);
  CHECK(lost_cause_of(st::reconnected, false) == lost_cause::node_deleted);
  CHECK(lost_cause_of(st::suspended, false) == lost_cause::deadline_passed);
}
