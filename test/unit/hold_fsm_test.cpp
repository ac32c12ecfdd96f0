// A held lock's release and lost-tracking without a server: every interleaving of release,
// connection loss, reconnect, expiry, the validity deadline and the release's reply.
#include "fsm_property.hpp"
#include "sansio/hold_fsm.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace zklock;
using namespace zklock::detail;

namespace {

// The shared driver (fsm_property.hpp), its rules checked at the end of each test.
struct driver : zklock::testing::hold_driver {
  using hold_driver::hold_driver;
  driver(const driver&) = delete;
  ~driver() { CHECK(violation == ""); }
};

}  // namespace

TEST_CASE("release while connected: one request, success when it applies", "[unit][hold]") {
  driver d;
  CHECK(d.fsm.status() == lock_status::held);
  d.apply(d.fsm.release(true));
  CHECK(d.fsm.status() == lock_status::released);
  CHECK(d.sends == 1);
  CHECK(d.completions == 0);  // waits for the reply
  d.reply({});
  CHECK(d.completions == 1);
  CHECK_FALSE(d.last_completion);
  CHECK(d.fsm.finished());
  CHECK(d.losts == 0);
}

TEST_CASE("a release whose reply was lost: release_pending at once, sent again after the reconnect, "
          "and the retry that finds the node gone finishes it (it committed)", "[unit][hold][fault]") {
  driver d;
  d.apply(d.fsm.release(true));
  d.drop_connection();  // the transaction may have committed
  CHECK(d.completions == 1);
  CHECK(d.last_completion == errc::release_pending);
  CHECK(d.fsm.release_owed());
  d.apply(d.fsm.on_connected(true));
  CHECK(d.sends == 2);
  d.reply(zk_errc::no_node);  // the first one did commit
  CHECK(d.fsm.finished());
  CHECK(d.losts == 0);
  CHECK(d.completions == 1);  // the caller was answered once
}

TEST_CASE("the first release finding no node: someone else deleted it, lock_lost", "[unit][hold]") {
  driver d;
  d.apply(d.fsm.release(true));
  d.reply(zk_errc::no_node);
  CHECK(d.last_completion == errc::lock_lost);
  CHECK(d.fsm.finished());
}

TEST_CASE("release while suspended: release_pending at once, the delete goes after the reconnect",
          "[unit][hold][fault]") {
  driver d;
  d.drop_connection();
  CHECK(d.fsm.status() == lock_status::maybe_lost);
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == errc::release_pending);
  CHECK(d.sends == 0);  // nothing can be sent
  d.apply(d.fsm.on_connected(true));
  CHECK(d.sends == 1);
  d.reply({});
  CHECK(d.fsm.finished());
  CHECK(d.completions == 1);
}

TEST_CASE("release while suspended, then the session expires: nothing to send, finished", "[unit][hold][fault]") {
  driver d;
  d.drop_connection();
  d.apply(d.fsm.release(false));
  d.apply(d.fsm.on_session_ended());
  CHECK(d.sends == 0);
  CHECK(d.fsm.finished());
  CHECK(d.losts == 0);  // released first: nothing was lost
}

TEST_CASE("lost at the deadline while suspended, the session survived: the node is still deleted",
          "[unit][hold][fault]") {
  // the review's bug: a guard reported lost kept its node for the life of the session
  driver d;
  d.drop_connection();
  d.apply(d.fsm.on_deadline());
  CHECK(d.fsm.status() == lock_status::lost);
  CHECK(d.losts == 1);
  CHECK(d.sends == 0);
  d.apply(d.fsm.on_connected(true));  // same session: our node is still there
  CHECK(d.fsm.status() == lock_status::lost);  // lost is final
  CHECK(d.sends == 1);                          // deleted without waiting for the owner
  d.reply({});
  CHECK(d.fsm.finished());
  d.apply(d.fsm.release(true));  // the owner lets go later
  CHECK(d.last_completion == errc::lock_lost);
  CHECK(d.sends == 1);
}

TEST_CASE("lost at the deadline while connected (server stalled): the delete is sent at once", "[unit][hold][fault]") {
  driver d;
  d.apply(d.fsm.on_deadline());
  CHECK(d.losts == 1);
  CHECK(d.sends == 1);
  d.apply(d.fsm.on_deadline());  // reported once
  CHECK(d.losts == 1);
}

TEST_CASE("owner releases a lost hold before the reconnect: lock_lost, the delete still goes", "[unit][hold][fault]") {
  driver d;
  d.drop_connection();
  d.apply(d.fsm.on_deadline());
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == errc::lock_lost);
  CHECK(d.fsm.release_owed());
  d.apply(d.fsm.on_connected(true));
  CHECK(d.sends == 1);
}

TEST_CASE("a replaced session: the hold is lost and nothing is sent for the old node", "[unit][hold][fault]") {
  driver d;
  d.drop_connection();
  d.apply(d.fsm.on_connected(false));
  CHECK(d.fsm.status() == lock_status::lost);
  CHECK(d.losts == 1);
  CHECK(d.sends == 0);
  CHECK(d.fsm.finished());
}

TEST_CASE("expiry while the release is in flight: lock_lost", "[unit][hold][fault]") {
  driver d;
  d.apply(d.fsm.release(true));
  d.apply(d.fsm.on_session_ended());
  CHECK(d.last_completion == errc::lock_lost);
  d.reply(zk_errc::session_expired);  // the late reply changes nothing
  CHECK(d.completions == 1);
}

TEST_CASE("maybe_lost returns to held on a reconnect of the same session", "[unit][hold][fault]") {
  driver d;
  d.drop_connection();
  CHECK(d.fsm.status() == lock_status::maybe_lost);
  d.apply(d.fsm.on_connected(true));
  CHECK(d.fsm.status() == lock_status::held);
  CHECK(d.sends == 0);
}

TEST_CASE("a second release is already_released", "[unit][hold]") {
  driver d;
  d.apply(d.fsm.release(true));
  d.reply({});
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == errc::already_released);
  CHECK(d.sends == 1);
}

TEST_CASE("random interleavings keep the hold's invariants", "[unit][hold][property]") {
  // Inputs at random: release, connection loss, reconnect, expiry, the validity deadline, the
  // release's reply (fsm_property.hpp, shared with the fuzzer); the invariants are listed there.
  std::uint32_t seed = std::random_device{}();
  for (int run = 0; run < 2000; ++run) {
    CAPTURE(seed, run);
    zklock::testing::seeded_source rng(seed + run);
    auto broken = zklock::testing::run_hold_property(rng);
    INFO(broken.value_or(""));
    REQUIRE_FALSE(broken);
  }
}
