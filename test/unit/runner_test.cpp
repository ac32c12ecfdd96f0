// The runner (src/lock/runner.hpp) carrying out a machine against the simulated session
// (sim/session_sim.hpp): the same runner the library uses, templated over its session. Here
// observe_leader_fsm, as election.cpp runs it: its reads and the wire they make, its one watch
// waited for and fired, its removal on a cancellation taken on the executor, a read lost with
// the connection made again once connected (await_connection).
#include "lock/runner.hpp"
#include "sansio/local_queue_fsm.hpp"
#include "sansio/observe_leader_fsm.hpp"
#include "sim/session_sim.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::detail;
using zklock::testing::session_sim;

// (a named namespace: the unit tests build in unity batches, beside other files' helpers)
namespace runner_sim {

const std::string path = "/e";
std::string node_path(int seq) {
  std::string digits = std::to_string(seq);
  return path + "/_c_" + std::to_string(seq) + "-latch-" + std::string(10 - digits.size(), '0') + digits;
}

// election.cpp's hook: the completion's leader is the machine's result.
struct observer_hook {
  using op_type = pending<void(error_code, std::optional<leader_info>)>;
  template <class Runner>
  void on_outcome(Runner& r, const sansio::request& q) {
    if (q.type == sansio::request::complete) r.op()->complete(q.ec, r.machine().result());
  }
};
using sim_observer = runner<observe_leader_fsm, observer_hook, session_sim>;

struct fixture {
  asio::io_context io;
  std::shared_ptr<session_sim> s = std::make_shared<session_sim>(io.get_executor());
  asio::cancellation_signal cancel;
  std::optional<error_code> ec;
  std::optional<leader_info> leader;

  fixture() {
    s->add(path, "");
    s->add(node_path(1), "alice");
    s->add(node_path(2), "bob");
  }
  // As election.cpp's start_observer, on the simulated session.
  void start(observe_leader_fsm::mode m, std::optional<leader_info> known = std::nullopt) {
    ec.reset();
    leader.reset();
    auto h = asio::bind_executor(io.get_executor(), asio::bind_cancellation_slot(cancel.slot(), [this](error_code e, std::optional<leader_info> l) {
      ec = e;
      leader = std::move(l);
    }));
    start_operation<observer_hook::op_type::signature>(s, std::move(h), [this, m, known](auto op) mutable {
      auto r = std::make_shared<sim_observer>(s, op, observe_leader_fsm(path, m, std::move(known)), observer_hook{});
      r->start(r->machine().start(s->state()));
    });
    settle();
  }
  // Runs what is ready (poll: a waiting operation's work keeps run() from returning).
  void settle() {
    io.restart();
    while (io.poll() > 0) {
    }
  }
};


TEST_CASE("runner over a simulated session: observe_leader_fsm reads the leader", "[runner][observe]") {
  fixture f;
  f.start(observe_leader_fsm::mode::read_once);
  REQUIRE(f.ec == error_code{});
  REQUIRE(f.leader);
  CHECK(f.leader->identity == "alice");
  CHECK(f.leader->node == node_path(1));
  CHECK(f.s->wire == std::vector<std::string>{"get_children " + path, "get_data " + node_path(1)});
  CHECK(f.s->watches() == 0);
}

TEST_CASE("runner over a simulated session: observe_leader_fsm waits on its one watch for the change",
          "[runner][observe]") {
  fixture f;
  f.start(observe_leader_fsm::mode::read_once);
  const auto alice = *f.leader;
  f.s->wire.clear();
  f.start(observe_leader_fsm::mode::until_changed, alice);
  CHECK(!f.ec);  // waiting
  CHECK(f.s->watches() == 1);
  f.s->erase(node_path(1));  // alice resigns
  f.settle();
  REQUIRE(f.ec == error_code{});
  REQUIRE(f.leader);
  CHECK(f.leader->identity == "bob");
  CHECK(f.s->watches() == 0);  // fired: none left behind
  INFO(Catch::rangeToString(f.s->wire));
  CHECK(f.s->wire.front() == "get_children " + path);
  CHECK(f.s->wire.back() == "get_data " + node_path(2));
}

TEST_CASE("runner over a simulated session: a cancellation removes the watch before completing",
          "[runner][observe]") {
  fixture f;
  f.start(observe_leader_fsm::mode::read_once);
  const auto alice = *f.leader;
  f.start(observe_leader_fsm::mode::until_changed, alice);
  REQUIRE(!f.ec);
  REQUIRE(f.s->watches() == 1);
  SECTION("terminal") { f.cancel.emit(asio::cancellation_type::terminal); }
  SECTION("total") { f.cancel.emit(asio::cancellation_type::total); }
  f.settle();
  CHECK(f.ec == asio::error::operation_aborted);
  CHECK(f.s->watches() == 0);
  CHECK(f.s->wire.back().rfind("remove_watch ", 0) == 0);
}

TEST_CASE("runner over a simulated session: a read lost with the connection goes again once connected",
          "[runner][observe]") {
  fixture f;
  f.s->disconnect();
  f.start(observe_leader_fsm::mode::read_once);
  CHECK(!f.ec);  // waiting for the connection (await_connection)
  CHECK(f.s->wire == std::vector<std::string>{"get_children " + path});
  f.s->reconnect();
  f.settle();
  REQUIRE(f.ec == error_code{});
  REQUIRE(f.leader);
  CHECK(f.leader->identity == "alice");
  CHECK(f.s->wire.size() == 3);  // the listing again, then the head's read
}

// local_queue.cpp's machine: the lock dir's listing with its child watch (tagged with the node's
// epoch), the watch waited for, the outcomes to the hook, before_input ahead of each input.
struct queue_hook {
  using op_type = pending<void(error_code)>;
  std::vector<local_outcome> outcomes;
  int looked = 0;  // before_input calls
  template <class Runner>
  void before_input(Runner&, const sansio::input&) { ++looked; }
  template <class Runner>
  void on_outcome(Runner&, const sansio::request& a) { outcomes.push_back(a.outcome_kind<local_outcome>()); }
};
using sim_queue = runner<local_queue_machine, queue_hook, session_sim>;

TEST_CASE("runner over a simulated session: local_queue_machine lists the lock dir and hears its changes",
          "[runner][local_queue]") {
  asio::io_context io;
  auto s = std::make_shared<session_sim>(io.get_executor());
  const std::string dir = "/q", ours = "_c_1-lock-0000000001";
  s->add(dir, "");
  s->add_ephemeral(dir + "/" + ours);
  auto r = std::make_shared<sim_queue>(s, nullptr, local_queue_machine(dir, 2), queue_hook{});
  auto settle = [&] {
    io.restart();
    while (io.poll() > 0) {
    }
  };
  auto& m = r->machine();
  r->start({sansio::request::follow()});
  r->execute(m.step(m.fsm().enqueue(1, false)));
  REQUIRE(r->hook().outcomes == std::vector<local_outcome>{local_outcome::acquire_node});
  m.next_epoch();  // the node's acquire
  m.node_acquired(ours);
  r->execute(m.step(m.fsm().on_node_acquired({})));
  s->wire.clear();
  r->execute(m.step(m.fsm().enqueue(2, false)));  // a waiter behind the holder: is anyone else queued?
  settle();
  CHECK(s->wire == std::vector<std::string>{"get_children " + dir + " watch"});
  CHECK(r->hook().looked == 1);  // before the listing's reply
  r->execute(m.step(m.fsm().release(1)));
  CHECK(r->hook().outcomes.back() == local_outcome::grant);  // nobody else: handed on locally
  CHECK(s->watches() == 1);
  s->add(dir + "/_c_2-lock-0000000002", "");  // another process queues: the child watch fires
  settle();
  CHECK(s->watches() == 0);
  s->wire.clear();
  r->execute(m.step(m.fsm().enqueue(3, false)));  // what we knew is stale: listed again
  settle();
  CHECK(s->wire == std::vector<std::string>{"get_children " + dir + " watch"});
  SECTION("the other process is served: the node is released after its grants") {
    r->execute(m.step(m.fsm().release(2)));
    CHECK(r->hook().outcomes.back() == local_outcome::release_node);
  }
  SECTION("an event of a node given up is stale") {
    m.next_epoch();
    s->wire.clear();
    s->add(dir + "/_c_3-lock-0000000003", "");
    settle();
    CHECK(s->watches() == 0);  // fired
    CHECK(s->wire.empty());    // and not heard: no listing asked
  }
}

}  // namespace runner_sim
