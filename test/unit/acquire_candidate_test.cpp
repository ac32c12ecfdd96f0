// acquire_fsm as an election's candidate (Curator LeaderLatch's "-latch-" nodes), against the
// simulated lock dir (sim/lock_dir_sim.hpp).
#include "acquire_test.hpp"

TEST_CASE("candidates: a candidate behind one other is granted by its predecessor's deletion, without a listing",
          "[unit][lock][election]") {
  using K = lock_kind;
  // a candidate behind one other: granted by its predecessor's deletion, without a listing
  sim s(K::candidate, lock_mode::wait);
  CHECK(s.fsm.node_prefix().ends_with("-latch-"));
  auto a = s.add_foreign("_c_ffffffff-0000-0000-0000-000000000000-latch-");
  s.run();
  REQUIRE_FALSE(s.completed);
  check_granted_when_gone(s, a);
}
