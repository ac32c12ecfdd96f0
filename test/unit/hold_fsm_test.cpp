// A held lock's release and lost-tracking without a server: every interleaving of release,
// connection loss, reconnect, expiry, the validity deadline and the release's reply.
#include "hold_fsm.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace zklock;
using namespace zklock::detail;

namespace {

// Drives a hold_fsm and records what it asks for.
struct driver {
  hold_fsm fsm;
  int sends = 0, losts = 0, completions = 0;
  error_code last_completion;
  bool in_flight = false;

  explicit driver(bool connected = true) : fsm(connected) {}

  void apply(const hold_fsm::actions& actions) {
    for (const auto& a : actions) {
      switch (a.type) {
        case hold_action::send_release:
          REQUIRE_FALSE(in_flight);  // one release request at a time
          in_flight = true;
          ++sends;
          break;
        case hold_action::report_lost:
          ++losts;
          break;
        case hold_action::complete_release:
          ++completions;
          last_completion = a.ec;
          break;
      }
    }
  }
  void reply(error_code ec) {
    REQUIRE(in_flight);
    in_flight = false;
    apply(fsm.on_release_reply(ec));
  }
  // the C client fails requests in flight when the connection drops
  void drop_connection() {
    if (in_flight) reply(zk_errc::connection_loss);
    apply(fsm.on_suspended());
  }
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

TEST_CASE("lost at the deadline while suspended; the session survived: the node is still deleted",
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
  // Inputs at random; after each step: at most one request in flight (checked by the
  // driver), nothing sent while the connection is down, at most one lost report, one answer
  // per waiting release. At the end, with the connection back and replies applied, a hold
  // whose session lives has its node deleted if it was released or lost.
  std::uint32_t seed = std::random_device{}();
  for (int run = 0; run < 2000; ++run) {
    std::mt19937 rng(seed + run);
    CAPTURE(seed, run);
    driver d(rng() % 4 != 0);
    bool connected = d.fsm.status() == lock_status::held, ended = false, released = false;
    int expected_completions = 0;  // every release that waits is answered exactly once
    for (int step = 0; step < 20; ++step) {
      int sends_before = d.sends;
      switch (rng() % 7) {
        case 0:
          d.drop_connection();
          connected = false;
          break;
        case 1: {
          bool same = rng() % 8 != 0;
          d.apply(d.fsm.on_connected(same));
          if (!ended) connected = true;
          if (!same) ended = true;
          break;
        }
        case 2:
          d.apply(d.fsm.on_session_ended());
          ended = true;
          connected = false;
          d.in_flight = false;  // requests of a dead session never answer
          break;
        case 3:
          d.apply(d.fsm.on_deadline());
          break;
        case 4: {
          bool waits = rng() % 2 == 0;
          int before = d.completions;
          d.apply(d.fsm.release(waits));
          expected_completions += waits;
          if (released && waits) CHECK(d.completions == before + 1);  // already_released at once
          released = true;
          break;
        }
        case 5:
          if (d.in_flight) d.reply(rng() % 3 == 0 ? error_code(zk_errc::no_node) : error_code{});
          break;
        case 6:
          if (d.in_flight) d.drop_connection(), connected = false;
          break;
      }
      if (d.sends > sends_before) CHECK((connected && !ended));
      CHECK(d.losts <= 1);
    }
    // settle: connection back, replies answered
    if (!ended) {
      d.apply(d.fsm.on_connected(true));
      while (d.in_flight) d.reply({});
      if (released || d.fsm.status() == lock_status::lost) CHECK(d.fsm.finished());
    }
    CHECK(d.completions == expected_completions);
  }
}
