// The refresh before a grant: a waiter whose contact with the server is stale refreshes it
// once before it grants, and a grant whose session ended under it is no grant.
#include "acquire_test.hpp"

TEST_CASE("a grant after a long wait refreshes the contact first, once, then grants", "[unit][lock][grant]") {
  sim s;
  int asked = 0;
  s.contact_stale = [&] { return ++asked, true; };  // always stale: refreshed once only
  auto head = s.add_foreign();
  s.run();
  CHECK(asked == 0);
  s.delete_foreign(head);  // our last blocker goes: the event grants, no request sent
  s.step();
  CHECK_FALSE(s.completed);
  CHECK(s.refreshes == 1);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(asked == 2);  // asked again after the refresh, which is not sent a second time
  CHECK(s.refreshes == 1);
}

TEST_CASE("a fresh contact grants without a refresh, also while disconnected nothing is refreshed", "[unit][lock][grant]") {
  sim s;
  s.contact_stale = [] { return false; };
  s.run();
  REQUIRE(s.completed);
  CHECK(s.refreshes == 0);
  CHECK(s.requests == 2);  // create-and-list, our node's watch
}

TEST_CASE("a grant whose session ended under it is no grant: the session's error", "[unit][lock][grant][fault]") {
  sim s;
  s.session_over_at_grant = [] { return error_code(errc::session_closed); };
  s.run();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_closed);
  CHECK(s.fsm.result().node.empty());
}

TEST_CASE("a refresh that finds the session over is no grant", "[unit][lock][grant][fault]") {
  sim s;
  s.contact_stale = [] { return true; };
  s.apply(s.fsm.start());
  s.step();
  s.step();  // create, listing: ours; the refresh goes
  REQUIRE(s.refreshes == 1);
  s.replies.clear();
  s.apply(s.fsm.on_refreshed(zk_errc::session_expired));
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
  // a connection lost under the refresh still grants: the hold's own checks take over
  sim t;
  t.contact_stale = [] { return true; };
  t.apply(t.fsm.start());
  t.step();
  t.step();
  t.replies.clear();
  t.apply(t.fsm.on_refreshed(zk_errc::connection_loss));
  REQUIRE(t.completed);
  CHECK_FALSE(t.fsm.result().ec);
}
