// The state machines' properties (sim/properties.hpp, shared with the fuzzer test/fuzz/fsm_fuzz.cpp)
// run from seeded inputs; the seed is printed on failure.
//
// acquire_fsm: random kinds, modes, queues, releases, arrivals, cancellations and expiries in
// random order. Invariants: one completion and nothing after it; a grant is what the grant rule
// says of the dir at that moment, with the node's czxid; a failure leaves no node of ours and no
// watch (unless the session expired, which takes both); never two nodes of ours; no request the
// state forbids; once nothing is left in the way, a wait ends.
//
// hold_fsm: release, connection loss, reconnect, expiry, the validity deadline, the release's
// reply at random; the invariants are listed at run_hold_property.
//
// The acquire and the hold as the library runs them (acquire_machine, hold_machine, through
// the runner) on several simulated sessions of one server (sim/lock_cluster.hpp): mutual
// exclusion, the fencing order, cleanup after a failure, liveness; listed at
// run_cluster_property.
#include "sim/lock_cluster.hpp"
#include "sim/properties.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace {
// `runs` runs of `property` (a run_*_property), seeded from seed + run. ZKLOCK_PROPERTY_SEED=<seed>
// replays a failure this printed (its seed; the run is counted from it).
template <class Property>
void check_property(int runs, Property property) {
  const char* replay = std::getenv("ZKLOCK_PROPERTY_SEED");
  const std::uint32_t seed = replay ? static_cast<std::uint32_t>(std::stoul(replay)) : std::random_device{}();
  for (int run = 0; run < runs; ++run) {
    CAPTURE(seed, run);
    zklock::testing::seeded_source rng(seed + run);
    auto broken = property(rng);
    INFO(broken.value_or(""));
    REQUIRE_FALSE(broken);
  }
}

auto lock_property(bool faults, bool watch_own_node = true) {
  return [faults, watch_own_node](zklock::testing::seeded_source& rng) {
    return zklock::testing::run_lock_property(rng, faults, watch_own_node);
  };
}
}  // namespace

// (acquire_fsm alone: the inputs the sessions below do not make, a foreign writer's downgrade,
// a zklock 2 holder's release, a forged mark, a refused delete; fewer runs since the sessions
// below run the acquire machine itself)
TEST_CASE("acquire_fsm property: random interleavings keep the invariants", "[unit][lock][property]") {
  check_property(1000, lock_property(false));
}

TEST_CASE("acquire_fsm property: with connection drops and reconnects", "[unit][lock][property][fault]") {
  // the same inputs plus the connection dropping (requests in flight fail with
  // connection_loss; a create or delete may have reached the server) and coming back
  check_property(1000, lock_property(true));
}

TEST_CASE("acquire_fsm property: without the own-node watch (the semaphore's internal mutex)",
          "[unit][lock][property][fault][semaphore]") {
  // the same invariants, our node's deletion by someone else heard only from a listing
  check_property(2000, lock_property(false, false));
  check_property(2000, lock_property(true, false));
}

TEST_CASE("acquire_fsm property: the fault interleavings it once found stay fixed", "[unit][lock][property][fault]") {
  // Seeds (seed + run) of runs that failed: a grant decided behind a watch removal the
  // connection's drop delayed, then our node deleted and queued again: the new node was granted
  // by that old decision, against the grant rule, or created beside the old one.
  for (std::uint32_t seed : {3240094610u + 585u, 863154362u + 1073u, 3596894185u + 674u, 1723328487u + 2063u}) {
    CAPTURE(seed);
    zklock::testing::seeded_source rng(seed);
    auto broken = zklock::testing::run_lock_property(rng, true);
    INFO(broken.value_or(""));
    CHECK_FALSE(broken);
  }
}

TEST_CASE("acquire_fsm property: a deep queue's window after a requeue stays fixed", "[unit][lock][property]") {
  // A seed (seed + run) of a run that failed: a reader queued again (its node deleted twice by
  // someone else) still had watches from before on blockers beyond its window of K + 1 (the view's
  // listing): all of them taken for watched, their deletions granted it with a mutex node ahead.
  zklock::testing::seeded_source rng(171532857u + 746u);
  auto broken = zklock::testing::run_lock_property(rng, false);
  INFO(broken.value_or(""));
  CHECK_FALSE(broken);
}

TEST_CASE("random interleavings keep the hold's invariants", "[unit][hold][property]") {
  check_property(2000, [](zklock::testing::seeded_source& rng) { return zklock::testing::run_hold_property(rng); });
}

TEST_CASE("acquire and hold on the runner, several sessions on one server: random interleavings keep the invariants",
          "[unit][lock][property]") {
  check_property(200, [](zklock::testing::seeded_source& rng) { return zklock::testing::run_cluster_property(rng, false); });
}

TEST_CASE("acquire and hold on the runner, several sessions on one server: with connection drops and expiries",
          "[unit][lock][property][fault]") {
  check_property(200, [](zklock::testing::seeded_source& rng) { return zklock::testing::run_cluster_property(rng, true); });
}
