// hold_machine carried out by the runner (src/lock/runner.hpp) against the simulated session
// (sim/session_sim.hpp), as hold.cpp runs it: the session's state followed (follow_session),
// our node's watch in its slot, the release's delete, a revocation read through the node's
// watch, and the local mode that sends nothing. Each test fails if the runner's wiring of what
// it checks breaks (a state change not delivered, a watch not waited for, a step not sent).
#include "lock/runner.hpp"
#include "sansio/hold_machine.hpp"
#include "sim/session_sim.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::detail;
using zklock::testing::session_sim;
using zklock::testing::watch_ptr;

namespace hold_machine_sim {

const std::string dir = "/l";
const std::string node = "/l/_c_1-lock-0000000001";

// What hold.cpp's hook hands the hold, recorded.
struct recording_hook {
  using op_type = pending<void(error_code)>;
  std::vector<std::pair<hold_outcome, error_code>> outcomes;
  template <class Runner>
  void on_outcome(Runner&, const sansio::request& a) {
    outcomes.emplace_back(a.outcome_kind<hold_outcome>(), a.ec);
  }
  bool saw(hold_outcome what) const {
    for (const auto& [o, ec] : outcomes)
      if (o == what) return true;
    return false;
  }
  error_code ec_of(hold_outcome what) const {
    for (const auto& [o, ec] : outcomes)
      if (o == what) return ec;
    return {};
  }
};
using sim_hold = runner<hold_machine, recording_hook, session_sim>;
static_assert(follows_and_writes<session_sim>);

struct fixture {
  asio::io_context io;
  std::shared_ptr<session_sim> s = std::make_shared<session_sim>(io.get_executor());
  std::shared_ptr<sim_hold> r;

  explicit fixture(bool local = false, bool sets_watch = true) {
    s->add(dir, "");
    s->add_ephemeral(node, "me");
    s->wire.clear();
    r = std::make_shared<sim_hold>(s, nullptr,
                                   hold_machine({.node = node, .session_id = s->session_id(), .local = local,
                                                 .watches_node = !local}),
                                   recording_hook{});
    r->start(r->machine().start(r->seen()));
    // a grant's hold adopts the acquire's watch; none here: the hold sets its own
    if (sets_watch) r->execute(r->machine().adopt_node_watch(false, false, nullptr, r->seen()));
    settle();
  }
  hold_machine& m() { return r->machine(); }
  lock_status status() { return m().fsm().status(); }
  const recording_hook& hook() { return r->hook(); }
  void settle() {
    io.restart();
    while (io.poll() > 0) {
    }
  }
};

TEST_CASE("hold on the runner: our node's watch is set, and its deletion by someone else is the loss",
          "[runner][hold]") {
  fixture f;
  CHECK(f.s->wire == std::vector<std::string>{"get_data " + node + " watch"});
  CHECK(f.s->watches() == 1);
  CHECK(f.status() == lock_status::held);
  f.s->erase(node);  // an administrator's delete
  f.settle();
  CHECK(f.status() == lock_status::lost);
  REQUIRE(f.hook().saw(hold_outcome::report_lost));
  CHECK(f.hook().ec_of(hold_outcome::report_lost) == make_lock_lost(lost_cause::node_deleted));
  CHECK(f.hook().saw(hold_outcome::signal_lost));
}

TEST_CASE("hold on the runner: the session's state is followed (suspended, reconnected, expired)",
          "[runner][hold]") {
  fixture f;
  f.s->disconnect();
  f.settle();
  CHECK(f.status() == lock_status::maybe_lost);
  CHECK(f.m().status(f.s->state()) == lock_status::maybe_lost);
  f.s->wire.clear();
  f.s->reconnect();
  f.settle();
  CHECK(f.status() == lock_status::held);
  // the node checked after the reconnect (its watch is still set: no second one)
  CHECK(f.s->wire == std::vector<std::string>{"exists " + node});
  CHECK(f.hook().outcomes.empty());
  SECTION("expired") {
    f.s->expire();
    f.settle();
    CHECK(f.status() == lock_status::lost);
    CHECK(f.hook().ec_of(hold_outcome::report_lost) == make_lock_lost(lost_cause::session_expired));
    CHECK(f.m().fsm().finished());  // the node went with the session: nothing owed
  }
  SECTION("suspended, then expired") {
    f.s->disconnect();
    f.s->expire();
    f.settle();
    CHECK(f.status() == lock_status::lost);
    CHECK(f.hook().ec_of(hold_outcome::report_lost) == make_lock_lost(lost_cause::session_expired));
  }
}

TEST_CASE("hold on the runner: the release deletes our node (the downgrade mark first, in one step)",
          "[runner][hold]") {
  fixture f;
  const std::string mark = dir + "/_c_2-read-0000000002";
  SECTION("plain") {
    f.s->wire.clear();
    f.r->execute(f.m().release(true, f.r->seen()));
    f.settle();
    CHECK(f.s->wire == std::vector<std::string>{"remove " + node});
  }
  SECTION("with a downgrade mark") {
    f.s->add_ephemeral(mark);
    f.m().set_downgrade_mark(mark);
    f.s->wire.clear();
    f.r->execute(f.m().release(true, f.r->seen()));
    f.settle();
    CHECK(f.s->wire == std::vector<std::string>{"remove " + mark, "remove " + node});
    CHECK(!f.s->has(mark));
  }
  CHECK(!f.s->has(node));
  CHECK(f.status() == lock_status::released);
  REQUIRE(f.hook().saw(hold_outcome::complete_release));
  CHECK(f.hook().ec_of(hold_outcome::complete_release) == error_code{});
  CHECK(!f.m().fsm().release_owed());
  CHECK(!f.hook().saw(hold_outcome::report_lost));  // our own delete fired our watch: no loss
}

TEST_CASE("hold on the runner: a release while disconnected is sent once connected again", "[runner][hold]") {
  fixture f;
  f.s->disconnect();
  // the session's changes reach the hold posted: heard before the release, or not yet (a caller
  // that saw the suspension first, through its own async_wait_state, releases at once): the
  // release goes by the state at the call either way, nothing sent into the reconnect
  SECTION("the hold heard the suspension") { f.settle(); }
  SECTION("the hold has not heard it yet") {}
  f.s->wire.clear();
  f.r->execute(f.m().release(true, f.r->seen()));
  f.settle();
  CHECK(f.hook().ec_of(hold_outcome::complete_release) == errc::release_pending);
  CHECK(f.m().fsm().release_owed());
  CHECK(f.s->wire.empty());
  f.s->reconnect();
  f.settle();
  CHECK(f.s->wire == std::vector<std::string>{"remove " + node});
  CHECK(!f.s->has(node));
  CHECK(!f.m().fsm().release_owed());
}

TEST_CASE("hold on the runner: a revocation request is read through our node's watch", "[runner][hold]") {
  fixture f;
  f.s->wire.clear();
  f.r->execute(f.m().add_revocation_waiter(f.r->seen()));
  f.settle();
  CHECK(f.s->wire.empty());  // answered by the watch's read: no request
  f.s->set(node, std::string(revoke_message));
  f.settle();
  // the watch fired (changed): set again by a read, which is the request
  CHECK(f.s->wire == std::vector<std::string>{"get_data " + node + " watch"});
  REQUIRE(f.hook().saw(hold_outcome::revoked));
  CHECK(f.hook().ec_of(hold_outcome::revoked) == error_code{});
  CHECK(f.status() == lock_status::held);  // cooperative: still ours
  CHECK(f.s->watches() == 1);
}

TEST_CASE("hold on the runner: a local hold follows the connection and sends nothing", "[runner][hold]") {
  fixture f(/*local=*/true);
  CHECK(f.s->wire.empty());
  f.s->disconnect();
  f.settle();
  CHECK(f.status() == lock_status::maybe_lost);
  f.s->reconnect();
  f.settle();
  CHECK(f.status() == lock_status::held);
  f.r->execute(f.m().release(true, f.r->seen()));
  f.r->execute(f.m().end_released(f.r->seen()));
  f.settle();
  CHECK(f.s->wire.empty());  // the node is its queue's
  CHECK(f.s->has(node));
  CHECK(f.status() == lock_status::released);
  CHECK(f.hook().ec_of(hold_outcome::complete_release) == error_code{});
}

TEST_CASE("hold on the runner: the acquire's watch on our node is adopted into its slot", "[runner][hold]") {
  fixture f(/*local=*/false, /*sets_watch=*/false);
  watch_ptr w;
  std::optional<data_result> read;
  f.s->get_data(node, &w, detail::data_handler([&](error_code, data_result d) { read = std::move(d); }));
  f.settle();
  REQUIRE(read);
  f.r->adopt_watch(hold_machine::node_watch, w);
  f.r->execute(f.m().adopt_node_watch(true, false, &*read, f.r->seen()));
  f.settle();
  CHECK(f.s->wire == std::vector<std::string>{"get_data " + node + " watch"});  // the acquire's only
  CHECK(f.s->watches() == 1);
  f.s->erase(node);
  f.settle();
  CHECK(f.hook().ec_of(hold_outcome::report_lost) == make_lock_lost(lost_cause::node_deleted));
}

TEST_CASE("hold on the runner: kept data is written back over a revocation request (set_data)", "[runner][hold]") {
  fixture f;
  f.r->execute(f.m().keep_data("me", f.r->seen()));
  f.settle();
  f.s->wire.clear();
  f.s->set(node, std::string(revoke_message));
  f.settle();
  INFO(Catch::rangeToString(f.s->wire));
  CHECK(f.hook().saw(hold_outcome::revoked));
  REQUIRE(f.s->wire.size() >= 2);
  CHECK(f.s->wire[0] == "get_data " + node + " watch");
  CHECK(f.s->wire[1] == "set_data " + node);
  CHECK(f.s->data_of(node) == "me");
  CHECK(f.status() == lock_status::held);
  CHECK(f.s->watches() == 1);  // our node's watch, set again
}

// A hold's runner lives as long as its owner keeps it: its timer and watch wait hold it weakly.
struct weak_hook : recording_hook {
  static constexpr bool weak_waits = true;
  int steps = 0;
  template <class Runner>
  void after_step(Runner&) {
    ++steps;
  }
};

TEST_CASE("hold on the runner: weak_waits and after_step", "[runner][hold]") {
  asio::io_context io;
  auto s = std::make_shared<session_sim>(io.get_executor());
  s->add(dir, "");
  s->add_ephemeral(node);
  auto settle = [&] {
    io.restart();
    while (io.poll() > 0) {
    }
  };
  auto start = [&](auto r) {
    const auto watches = s->watches();
    r->start(r->machine().start(r->seen()));
    r->execute(r->machine().adopt_node_watch(false, false, nullptr, r->seen()));
    settle();
    CHECK(s->watches() == watches + 1);  // its node watch, waited for
    return std::weak_ptr(r);
  };
  auto weak = start(std::make_shared<runner<hold_machine, weak_hook, session_sim>>(
      s, nullptr, hold_machine({.node = node, .session_id = s->session_id()}), weak_hook{}));
  CHECK(weak.expired());  // the timer and the watch did not keep it
  auto strong = std::make_shared<sim_hold>(s, nullptr, hold_machine({.node = node, .session_id = s->session_id()}),
                                           recording_hook{});
  auto r = std::make_shared<runner<hold_machine, weak_hook, session_sim>>(
      s, nullptr, hold_machine({.node = node, .session_id = s->session_id()}), weak_hook{});
  r->start(r->machine().start(r->seen()));
  CHECK(r->hook().steps == 1);  // after each step, empty or not
  r->execute({});
  CHECK(r->hook().steps == 2);
  auto kept = start(std::move(strong));
  REQUIRE(!kept.expired());  // (without weak_waits, its timer keeps it)
  auto k = kept.lock();      // released, so that nothing waits when the io_context goes
  k->execute(k->machine().release(false, k->seen()));
  k->execute(k->machine().end_released(k->seen()));
  settle();
}

}  // namespace hold_machine_sim
