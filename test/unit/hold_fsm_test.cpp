// A held lock's release and lost-tracking without a server: every interleaving of release,
// connection loss, reconnect, expiry, the validity deadline and the release's reply.
#include "sim/hold_sim.hpp"
#include "sansio/hold_fsm.hpp"

#include <catch2/catch.hpp>

#include <functional>

using namespace zklock;
using namespace zklock::detail;
using namespace std::chrono_literals;

namespace {

// The shared driver (sim/hold_sim.hpp), its rules checked at the end of each test.
struct checked_driver : zklock::testing::hold_driver {
  using hold_driver::hold_driver;
  checked_driver(const checked_driver&) = delete;
  ~checked_driver() { CHECK(violation == ""); }
};

// The connection comes back: the owed delete goes (the driver's `sends`th request) and applies,
// and the hold is finished, its caller answered once.
void check_released_after_reconnect(checked_driver& d, int sends) {
  d.apply(d.fsm.on_connected(true));
  CHECK(d.sends == sends);
  d.reply({});
  CHECK(d.fsm.finished());
  CHECK(d.completions == 1);
}

}  // namespace

TEST_CASE("release while connected: one request, success when it applies", "[unit][hold]") {
  checked_driver d;
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
  checked_driver d;
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
  checked_driver d;
  d.apply(d.fsm.release(true));
  d.reply(zk_errc::no_node);
  CHECK(d.last_completion == errc::lock_lost);
  CHECK(d.fsm.finished());
}

TEST_CASE("release while suspended: release_pending at once, the delete goes after the reconnect",
          "[unit][hold][fault]") {
  checked_driver d;
  d.drop_connection();
  CHECK(d.fsm.status() == lock_status::maybe_lost);
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == errc::release_pending);
  CHECK(d.sends == 0);  // nothing can be sent
  check_released_after_reconnect(d, 1);
}

TEST_CASE("release while suspended, then the session expires: nothing to send, finished", "[unit][hold][fault]") {
  checked_driver d;
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
  checked_driver d;
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
  checked_driver d;
  d.apply(d.fsm.on_deadline());
  CHECK(d.losts == 1);
  CHECK(d.sends == 1);
  d.apply(d.fsm.on_deadline());  // reported once
  CHECK(d.losts == 1);
}

TEST_CASE("owner releases a lost hold before the reconnect: lock_lost, the delete still goes", "[unit][hold][fault]") {
  checked_driver d;
  d.drop_connection();
  d.apply(d.fsm.on_deadline());
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == errc::lock_lost);
  CHECK(d.fsm.release_owed());
  d.apply(d.fsm.on_connected(true));
  CHECK(d.sends == 1);
}

TEST_CASE("a replaced session: the hold is lost and nothing is sent for the old node", "[unit][hold][fault]") {
  checked_driver d;
  d.drop_connection();
  d.apply(d.fsm.on_connected(false));
  CHECK(d.fsm.status() == lock_status::lost);
  CHECK(d.losts == 1);
  CHECK(d.sends == 0);
  CHECK(d.fsm.finished());
}

TEST_CASE("expiry while the release is in flight: lock_lost", "[unit][hold][fault]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  d.apply(d.fsm.on_session_ended());
  CHECK(d.last_completion == errc::lock_lost);
  d.reply(zk_errc::session_expired);  // the late reply changes nothing
  CHECK(d.completions == 1);
}

TEST_CASE("maybe_lost returns to held on a reconnect of the same session", "[unit][hold][fault]") {
  checked_driver d;
  d.drop_connection();
  CHECK(d.fsm.status() == lock_status::maybe_lost);
  d.apply(d.fsm.on_connected(true));
  CHECK(d.fsm.status() == lock_status::held);
  CHECK(d.sends == 0);
}

TEST_CASE("a second release is already_released", "[unit][hold]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  d.reply({});
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == errc::already_released);
  CHECK(d.sends == 1);
}

// ---------------------------------------------------------------------------------------------
// A delete the server refuses is never counted as done

TEST_CASE("a release the server throttles is sent again after a growing delay, and succeeds", "[unit][hold][fault]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  std::vector<std::chrono::milliseconds> delays;
  for (int i = 0; i < 3; ++i) {
    auto out = d.fsm.on_release_reply(zk_errc::throttled_op);
    d.in_flight = false;
    REQUIRE(out.size() == 1);
    CHECK(out[0].type == sansio::request::timer);  // backoff_release
    CHECK(out[0].slot == hold_fsm::backoff_timer);
    delays.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(out[0].after));
    d.apply(out);
    CHECK(d.fsm.release_owed());  // the session keeps the hold meanwhile
    CHECK(d.completions == 0);    // the caller waits for the outcome
    CHECK(d.sends == i + 1);      // nothing sent before the delay passed
    d.backoff_due();
    CHECK(d.sends == i + 2);
  }
  CHECK(delays == std::vector<std::chrono::milliseconds>{100ms, 200ms, 400ms});
  d.reply({});
  CHECK(d.completions == 1);
  CHECK_FALSE(d.last_completion);
  CHECK(d.fsm.finished());
  CHECK_FALSE(d.fsm.release_failure());
  CHECK(d.failures == 0);
}

TEST_CASE("a release throttled until the retries run out: the caller gets the error, the failure is reported",
          "[unit][hold][fault]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  for (int i = 0; i < hold_fsm::max_release_backoffs; ++i) {
    d.reply(zk_errc::throttled_op);
    CHECK(d.backoff_pending);
    d.backoff_due();
  }
  CHECK(d.sends == hold_fsm::max_release_backoffs + 1);
  d.reply(zk_errc::throttled_op);
  CHECK_FALSE(d.backoff_pending);
  CHECK(d.completions == 1);
  CHECK(d.last_completion == zk_errc::throttled_op);
  CHECK(d.failures == 1);
  CHECK(d.fsm.release_failure() == zk_errc::throttled_op);
  CHECK_FALSE(d.fsm.release_owed());
  CHECK_FALSE(d.fsm.finished());  // the node is still there
  // it goes with the session, and nothing more is said
  d.apply(d.fsm.on_session_ended());
  CHECK(d.fsm.finished());
  CHECK(d.completions == 1);
  CHECK(d.failures == 1);
}

TEST_CASE("a release refused by the ACL (no_auth): no retry, the caller and the log learn it", "[unit][hold][fault]") {
  for (bool waits : {true, false}) {
    checked_driver d;
    d.apply(d.fsm.release(waits));
    d.reply(zk_errc::no_auth);
    CHECK(d.sends == 1);
    CHECK_FALSE(d.backoff_pending);
    CHECK(d.completions == (waits ? 1 : 0));
    if (waits) CHECK(d.last_completion == zk_errc::no_auth);
    CHECK(d.failures == 1);  // reported whether or not a caller waits: never silent
    CHECK(d.fsm.release_failure() == zk_errc::no_auth);
    CHECK(d.fsm.status() == lock_status::released);
    CHECK_FALSE(d.fsm.release_owed());
    // a reconnect sends nothing more
    d.drop_connection();
    d.apply(d.fsm.on_connected(true));
    CHECK(d.sends == 1);
  }
}

TEST_CASE("the owed delete of a lost hold refused by the ACL: a later release gets that error", "[unit][hold][fault]") {
  checked_driver d;
  d.apply(d.fsm.on_deadline());  // lost while connected: the delete goes at once
  CHECK(d.sends == 1);
  d.reply(zk_errc::no_auth);
  CHECK(d.failures == 1);
  d.apply(d.fsm.release(true));
  CHECK(d.last_completion == zk_errc::no_auth);
  CHECK(d.sends == 1);
}

TEST_CASE("a throttled release whose connection drops during the delay: release_pending, retried after the reconnect",
          "[unit][hold][fault]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  d.reply(zk_errc::throttled_op);
  d.drop_connection();
  CHECK(d.completions == 1);
  CHECK(d.last_completion == errc::release_pending);
  d.backoff_due();  // the delay passes while the connection is down: nothing sent
  CHECK(d.sends == 1);
  check_released_after_reconnect(d, 2);
}

TEST_CASE("expiry during a throttled release's delay: lock_lost, nothing sent", "[unit][hold][fault]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  d.reply(zk_errc::throttled_op);
  d.apply(d.fsm.on_session_ended());
  CHECK(d.last_completion == errc::lock_lost);
  d.backoff_due();
  CHECK(d.sends == 1);
  CHECK(d.fsm.finished());
}

// ---------------------------------------------------------------------------------------------
// The validity deadline and the keepalive (hold_fsm::on_clock)

TEST_CASE("clock: a keepalive once a third of the session timeout passed without a reply, one at a time",
          "[unit][hold][deadline]") {
  checked_driver d;
  d.tick();
  CHECK(d.keepalives == 0);
  REQUIRE(d.timer);
  CHECK(*d.timer == d.last_ack + 1000ms);  // the refresh, before the deadline (last_ack + 2 s)
  d.advance(999ms);
  CHECK(d.keepalives == 0);
  d.advance(1ms);  // the timer fires at the refresh
  CHECK(d.keepalives == 1);
  REQUIRE(d.timer);
  CHECK(*d.timer == d.valid_until());  // the deadline is next
  d.advance(500ms);
  d.tick();  // another input meanwhile: no second keepalive while one is in flight
  CHECK(d.keepalives == 1);
  d.keepalive_reply({});  // contact: the deadline moves on
  CHECK(d.fsm.status() == lock_status::held);
  REQUIRE(d.timer);
  CHECK(*d.timer == d.now + 1000ms);
  CHECK(d.losts == 0);
}

TEST_CASE("clock: no keepalive while the connection is down, lost when the deadline passes", "[unit][hold][deadline][fault]") {
  checked_driver d;
  d.tick();
  d.drop_connection();
  d.tick();
  CHECK(d.fsm.status() == lock_status::maybe_lost);
  d.advance(1000ms);
  CHECK(d.keepalives == 0);
  CHECK(d.losts == 0);
  d.advance(999ms);
  CHECK(d.losts == 0);
  d.advance(1ms);  // valid_until: last reply + 3 s - 1 s
  CHECK(d.losts == 1);
  CHECK(d.fsm.status() == lock_status::lost);
  CHECK_FALSE(d.timer);
  CHECK(d.fsm.release_owed());  // the session may survive: the delete is still owed
}

TEST_CASE("clock: a server that stops answering while connected: the keepalive goes, the deadline still passes",
          "[unit][hold][deadline][fault]") {
  checked_driver d;
  d.tick();
  d.advance(1000ms);
  CHECK(d.keepalives == 1);
  d.advance(1000ms);  // no reply
  CHECK(d.losts == 1);
  CHECK(d.sends == 1);  // connected: the owed delete goes at once
}

TEST_CASE("clock: a keepalive that finds our node gone or another session's: lost", "[unit][hold][deadline]") {
  checked_driver d;
  d.tick();
  d.advance(1000ms);
  REQUIRE(d.keepalives == 1);
  d.keepalive_reply({}, false);
  CHECK(d.losts == 1);
  CHECK(d.fsm.status() == lock_status::lost);
  CHECK_FALSE(d.timer);
  // the check after a reconnect decides the same way; an error proves nothing
  checked_driver e;
  e.apply(e.fsm.on_node_checked(zk_errc::connection_loss, false));
  CHECK(e.losts == 0);
  e.apply(e.fsm.on_node_checked({}, true));
  CHECK(e.losts == 0);
  e.apply(e.fsm.on_node_checked({}, false));
  CHECK(e.losts == 1);
}

TEST_CASE("clock: deadline waiters are answered at their lead, the others with the loss", "[unit][hold][deadline]") {
  checked_driver d;
  d.tick();
  d.add_waiter(1500ms);  // due at valid_until - 1.5 s = last_ack + 500 ms
  d.add_waiter(5000ms);  // already due
  CHECK(d.deadline_answers == 1);
  REQUIRE(d.timer);
  CHECK(*d.timer == d.last_ack + 500ms);
  d.advance(500ms);
  CHECK(d.deadline_answers == 2);
  d.add_waiter(100ms);
  d.fsm.remove_deadline_waiter(d.next_waiter);  // cancelled
  d.deadline_waiters.erase(d.next_waiter);
  d.add_waiter(200ms);
  d.drop_connection();
  d.advance(3000ms);
  CHECK(d.deadline_answers == 3);  // the 200 ms one, before the loss
  CHECK(d.losts == 1);
}

TEST_CASE("clock: a local hold sends nothing and never loses on its own, it serves its waiters", "[unit][hold][deadline]") {
  checked_driver d(true, /*local=*/true);
  d.tick();
  CHECK_FALSE(d.timer);  // nothing to wait for
  d.add_waiter(1000ms);
  REQUIRE(d.timer);
  d.advance(5000ms);
  CHECK(d.deadline_answers == 1);
  d.tick();
  CHECK(d.keepalives == 0);
  CHECK(d.losts == 0);
  CHECK(d.fsm.status() == lock_status::held);
}

TEST_CASE("release of a local hold: nothing to delete, before or after a reconnect (its node is its queue's)",
          "[unit][hold]") {
  for (bool connected : {true, false}) {
    checked_driver d(connected, /*local=*/true);
    d.apply(d.fsm.release(false));
    CHECK(d.fsm.status() == lock_status::released);
    CHECK(d.fsm.finished());
    CHECK_FALSE(d.fsm.release_owed());
    d.apply(d.fsm.on_suspended());
    d.apply(d.fsm.on_connected(true));
    CHECK(d.sends == 0);
    CHECK(d.completions == 0);  // nobody waited
  }
  // a caller that waits is answered at once: success, or the loss it had
  checked_driver held(true, /*local=*/true);
  held.apply(held.fsm.release(true));
  CHECK(held.completions == 1);
  CHECK_FALSE(held.last_completion);
  checked_driver lost(true, /*local=*/true);
  lost.apply(lost.fsm.on_session_ended(make_lock_lost(lost_cause::node_deleted)));
  lost.apply(lost.fsm.release(true));
  CHECK(lost.completions == 1);
  CHECK(lost.last_completion == errc::lock_lost);
  CHECK(lost.sends == 0);
}

// ---------------------------------------------------------------------------------------------
// The lost error names its cause

TEST_CASE("the lost error names its cause and still is lock_lost", "[unit][hold][error]") {
  struct scenario {
    const char* name;
    std::function<void(checked_driver&)> lose;
    lost_cause cause;
    const char* says;
  };
  const scenario scenarios[] = {
      {"deadline", [](checked_driver& d) { d.tick(), d.drop_connection(), d.advance(2000ms); }, lost_cause::deadline_passed,
       "validity deadline"},
      {"expired", [](checked_driver& d) { d.apply(d.fsm.on_session_ended()); }, lost_cause::session_expired, "session expired"},
      {"closed", [](checked_driver& d) { d.apply(d.fsm.on_session_ended(make_lock_lost(lost_cause::session_closed))); },
       lost_cause::session_closed, "session was closed"},
      {"replaced", [](checked_driver& d) { d.apply(d.fsm.on_connected(false)); }, lost_cause::session_replaced, "replaced"},
      {"node deleted", [](checked_driver& d) { d.apply(d.fsm.on_node_checked({}, false)); }, lost_cause::node_deleted,
       "deleted by someone else"},
  };
  for (const auto& sc : scenarios) {
    CAPTURE(sc.name);
    checked_driver d;
    sc.lose(d);
    REQUIRE(d.losts == 1);
    CHECK(d.lost_error == errc::lock_lost);
    CHECK(d.lost_error == condition::lock_lost);
    CHECK(lock_lost_cause(d.lost_error) == sc.cause);
    CHECK_THAT(d.lost_error.message(), Catch::Contains(sc.says));
    CHECK(d.fsm.lost_error() == d.lost_error);
    // a later release says the same
    d.apply(d.fsm.release(true));
    CHECK(lock_lost_cause(d.last_completion) == sc.cause);
  }
  // a plain errc::lock_lost has no cause; other codes neither
  CHECK(lock_lost_cause(errc::lock_lost) == lost_cause::unknown);
  CHECK(lock_lost_cause(errc::lock_busy) == lost_cause::unknown);
  CHECK(make_lock_lost(lost_cause::deadline_passed) != errc::lock_busy);
  CHECK(make_lock_lost(lost_cause::deadline_passed).category().name() == std::string("zklock"));
}

// ---------------------------------------------------------------------------------------------
// Our node's watch (the runner's, from the acquire's create on): its deletion by anyone else is
// the hold's loss at once, however busy the session; our own release's delete is none.

TEST_CASE("a holder whose node is deleted by someone else is lost (node_deleted) at once, with nothing left to delete",
          "[unit][hold][own_node]") {
  checked_driver d;
  d.last_ack = d.now;  // a busy session: the keepalive is never due
  d.tick();
  d.apply(d.fsm.on_node_deleted());
  CHECK(d.losts == 1);
  CHECK(lock_lost_cause(d.lost_error) == lost_cause::node_deleted);
  CHECK(d.fsm.status() == lock_status::lost);
  CHECK(d.fsm.finished());  // nothing to delete
  CHECK_FALSE(d.fsm.release_owed());
  CHECK(d.keepalives == 0);  // told by the watch, not by a request
  // the release that follows sends nothing and says why
  d.apply(d.fsm.release(true));
  CHECK(d.sends == 0);
  CHECK(lock_lost_cause(d.last_completion) == lost_cause::node_deleted);
  // a second event (a late duplicate) changes nothing
  d.apply(d.fsm.on_node_deleted());
  CHECK(d.losts == 1);
}

TEST_CASE("our own release's delete fires our node's watch: no loss, the release succeeds", "[unit][hold][own_node]") {
  checked_driver d;
  d.apply(d.fsm.release(true));
  REQUIRE(d.sends == 1);
  d.apply(d.fsm.on_node_deleted());  // the event comes before the delete's reply
  CHECK(d.losts == 0);
  d.reply({});
  CHECK(d.completions == 1);
  CHECK_FALSE(d.last_completion);
  CHECK(d.fsm.finished());
}

TEST_CASE("a hold lost at its deadline whose node someone then deletes owes no delete any more",
          "[unit][hold][own_node]") {
  checked_driver d;
  d.tick();  // hold::start
  d.drop_connection();
  d.tick();
  d.advance(5000ms);  // past the deadline while disconnected: lost, a delete owed
  REQUIRE(d.losts == 1);
  REQUIRE(d.fsm.release_owed());
  d.connected = true;
  d.apply(d.fsm.on_connected(true));  // the owed delete goes...
  REQUIRE(d.sends == 1);
  d.apply(d.fsm.on_node_deleted());   // ...and its event comes: no second loss
  CHECK(d.losts == 1);
  CHECK(lock_lost_cause(d.lost_error) == lost_cause::deadline_passed);
  d.reply({});
  CHECK(d.fsm.finished());
  // and without the delete sent: the node's deletion settles what was owed
  checked_driver e;
  e.tick();
  e.drop_connection();
  e.tick();
  e.advance(5000ms);
  REQUIRE(e.fsm.release_owed());
  e.apply(e.fsm.on_node_deleted());  // (an event the client delivers after the reconnect)
  CHECK_FALSE(e.fsm.release_owed());
  CHECK(e.fsm.finished());
  CHECK(e.losts == 1);
}
