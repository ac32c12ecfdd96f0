// acquire_fsm taking a semaphore's lease (the semaphore's second step, behind its internal
// mutex), against the simulated lock dir (sim/lock_dir_sim.hpp).
#include "acquire_test.hpp"

TEST_CASE("a lease waits on the leases dir, takes the first freed lease, and removes its watch",
          "[unit][lock][semaphore]") {
  const std::string lease_prefix = "_c_ffffffff-0000-0000-0000-00000000000l-lease-";
  sim s(lock_kind::lease, lock_mode::wait, 2);
  auto a = s.add_foreign(lease_prefix);
  auto b = s.add_foreign(lease_prefix);
  s.run();
  REQUIRE_FALSE(s.completed);
  CHECK(s.watches.count(s.dir) == 1);  // one children watch, no data watch
  s.delete_foreign(b);  // any holder's release frees a lease (not only the one "ahead")
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());  // granted by a watched listing: the watch was removed
  (void)a;

  // cancellation at every step leaves no node and no watch
  for (int cancel_at = 0; cancel_at < 8; ++cancel_at) {
    CAPTURE(cancel_at);
    sim t(lock_kind::lease, lock_mode::wait, 1);
    auto h = t.add_foreign(lease_prefix);
    t.apply(t.fsm.start());
    int steps = 0;
    bool cancelled = false, released = false;
    while (!t.completed && steps < 50) {
      if (steps == cancel_at && !cancelled) {
        cancelled = true;
        t.apply(t.fsm.cancel(boost::asio::error::operation_aborted));
      }
      if (!t.step()) {
        if (released) break;
        released = true;
        t.delete_foreign(h);
      }
      ++steps;
    }
    REQUIRE(t.completed);
    if (t.fsm.result().ec) CHECK(t.ours() == 0);
    CHECK(t.blocker_watches().empty());
  }
}

TEST_CASE("the semaphore's internal mutex watches no node of its own, and two blockers as a mutex: its requests",
          "[unit][lock][semaphore]") {
  // (sim::requests counts the create and its pipelined listing as one)
  // Alone: the create and its listing, nothing more; no watch left to hand over.
  sim s(lock_mode::wait);
  s.fsm.set_watch_own_node(false);
  s.run();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.requests == 1);
  CHECK(s.watches.empty());
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::none);

  // Behind three (the queue served in order): the two nearest watched. The holder goes
  // unheard; the first waiter's deletion moves the window up (along the session's view, while
  // its predecessor still stands ahead: the holder's watch, asked, answers no_node); its
  // predecessor's deletion is the grant, with no listing.
  sim t(lock_mode::wait);
  t.fsm.set_watch_own_node(false);
  auto h = t.add_foreign(), w1 = t.add_foreign(), w2 = t.add_foreign();
  t.run();
  check_waiting_on(t, w2, false);
  CHECK(t.requests == 3);  // create-and-list, the two blockers' watches
  CHECK(t.watches == std::set<std::string>{join_path(t.dir, w1), join_path(t.dir, w2)});
  t.delete_foreign(h);
  t.drain();
  CHECK(t.requests == 3);  // nothing heard: not watched
  t.delete_foreign(w1);
  t.drain();
  check_waiting_on(t, w2, true);
  CHECK(t.requests == 4);  // the holder's watch (no_node), before the handoff
  check_granted_when_gone(t, w2);
  CHECK(t.requests == 4);  // none on the handoff
  CHECK(t.lists == 1);
  CHECK(t.watches.empty());
  CHECK(t.fsm.own_node_watch() == acquire_fsm::own_watch::none);

  // Its node deleted by someone else while it waits is not heard (nothing watches it): its
  // predecessor's deletion still grants it, beside the waiter behind. The semaphore stays safe:
  // a lease is granted by its position among the leases, whoever holds the internal mutex.
  sim u(lock_mode::wait);
  u.fsm.set_watch_own_node(false);
  auto p = u.add_foreign();
  u.run();
  REQUIRE(u.delete_ours());
  u.drain();
  REQUIRE_FALSE(u.completed);
  check_granted_when_gone(u, p);
  CHECK(u.ours() == 0);

  // After a reconnect it does not set one either (the blockers' watches the client set again).
  sim v(lock_mode::wait);
  v.fsm.set_watch_own_node(false);
  auto q = v.add_foreign();
  v.run();
  v.drop_connection([] { return true; });
  v.reconnect();
  v.drain();
  CHECK(v.fsm.own_node_watch() == acquire_fsm::own_watch::none);
  check_granted_when_gone(v, q);
  CHECK(v.watches.empty());
}

namespace {
// We wait on the leases dir behind the one lease, another's; it is released, and the listing
// our watch's event asks for frees our lease (its actions applied, no reply answered yet).
void free_our_lease_by_a_watched_listing(sim& s) {
  auto h = s.add_foreign(zklock::testing::lease_prefix);
  s.run();
  REQUIRE_FALSE(s.completed);
  REQUIRE(s.watches.count(s.dir) == 1);
  s.delete_foreign(h);
  REQUIRE(s.step());  // the dir's event: look again, watching
  REQUIRE(s.step());  // that listing frees our lease
}
}  // namespace

TEST_CASE("a lease granted by a watched listing completes with the dir's watch removal on its way",
          "[unit][lock][semaphore]") {
  sim s(lock_kind::lease, lock_mode::wait, 1);
  free_our_lease_by_a_watched_listing(s);
  REQUIRE(s.completed);  // granted now, not behind the removal's reply
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());  // the removal went out with the grant
  CHECK_FALSE(s.replies.empty());      // its reply comes after the completion
  s.drain();
  // a lease taken and released in the dir after the grant: no watch of ours hears it
  s.delete_foreign(s.add_foreign(zklock::testing::lease_prefix));
  s.drain();
  CHECK(s.completions == 1);
  CHECK(s.violation.empty());
}

TEST_CASE("lease: a grant ahead of the dir's watch removal, both lost with the connection, waits for the removal sent again",
          "[unit][lock][semaphore][fault]") {
  // The grant refreshes its contact first; the removal and the refresh are lost with the
  // connection: the grant waits for the removal after all, sent again after the reconnect.
  sim s(lock_kind::lease, lock_mode::wait, 1);
  s.contact_stale = [] { return true; };
  free_our_lease_by_a_watched_listing(s);  // the removal goes, the grant refreshes its contact
  REQUIRE_FALSE(s.completed);
  REQUIRE(s.refreshes == 1);
  s.drop_connection([] { return false; });  // the removal and the refresh fail with connection_loss
  CHECK_FALSE(s.completed);                 // the grant waits for the removal now
  CHECK(s.watches.count(s.dir) == 1);       // (the C client sets it again on the reconnect)
  s.reconnect();
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());  // the removal, sent again, took it away
  CHECK(s.completions == 1);
  CHECK(s.violation.empty());
}
