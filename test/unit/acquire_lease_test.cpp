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
