// Reading and observing an election's leader (observe_leader_fsm) without a server: the reads,
// the one watch and its removal, a revocation request in the leader's node, connection loss,
// the session's end, cancellation of every type at every step, and a random walk over all of
// them against a model of the server.
#include "sansio/observe_leader_fsm.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/error.hpp>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::detail;
namespace asio = boost::asio;

namespace {

const std::string path = "/e";
std::string node_name(int seq) {
  std::string digits = std::to_string(seq);
  return "_c_" + std::to_string(seq) + "-latch-" + std::string(10 - digits.size(), '0') + digits;
}
std::string node_path(int seq) { return path + "/" + node_name(seq); }

// The server: the election path's candidates (sequence -> data), our one watch, the request in
// flight; the driver carries the machine's actions out against it, as election.cpp does.
struct observer_driver {
  observe_leader_fsm fsm;
  bool path_exists = true;
  std::map<int, std::string> candidates;
  int next_seq = 1;
  bool connected = true;

  enum class req { none, list, read_head, watch_node, watch_children, watch_creation, remove };
  req in_flight = req::none;
  std::string in_flight_node;
  enum class watch_kind { data, children, creation };
  struct watch {
    watch_kind kind;
    std::string node;
  };
  std::optional<watch> registered;  // in the server's (and the C client's) tables
  std::optional<watch> last_set;    // the watch the machine set last (what remove_watch removes)
  bool waiting = false, event_due = false, awaiting_connection = false, timer = false;
  int completions = 0, requests = 0;
  error_code ec;
  std::optional<leader_info> leader;

  explicit observer_driver(observe_leader_fsm::mode m, std::optional<leader_info> known = std::nullopt)
      : fsm(path, m, std::move(known)) {}

  std::optional<leader_info> head() const {
    if (candidates.empty()) return std::nullopt;
    auto& [seq, data] = *candidates.begin();
    return leader_info{data, node_path(seq), seq};
  }
  int candidate(std::string data) {
    path_exists = true;
    int seq = next_seq++;
    candidates[seq] = std::move(data);
    changed_children();
    return seq;
  }
  void resign_head() {
    REQUIRE_FALSE(candidates.empty());
    auto n = node_path(candidates.begin()->first);
    candidates.erase(candidates.begin());
    fire_if(watch_kind::data, n);
    changed_children();
  }
  void write_head(std::string data) {
    REQUIRE_FALSE(candidates.empty());
    candidates.begin()->second = std::move(data);
    fire_if(watch_kind::data, node_path(candidates.begin()->first));
  }
  void changed_children() { fire_if(watch_kind::children, path), fire_if(watch_kind::creation, path); }
  void fire_if(watch_kind k, const std::string& n) {
    if (!registered || registered->kind != k || registered->node != n) return;
    registered.reset();
    if (waiting) event_due = true;  // delivered later (posted)
  }

  void apply(const observe_leader_fsm::actions& as) {
    using tag = observe_leader_fsm::tag;
    for (const auto& a : as) {
      switch (a.type) {
        case sansio::request::get_children:
          CHECK(a.path == path);
          CHECK(a.tag == tag::children);
          send(a.slot == sansio::request::no_slot ? req::list : req::watch_children, path);
          break;
        case sansio::request::get_data:
          CHECK(a.tag == tag::data);
          send(a.slot == sansio::request::no_slot ? req::read_head : req::watch_node, a.path);
          break;
        case sansio::request::exists:
          CHECK(a.path == path);
          CHECK(a.tag == tag::exists);
          CHECK(a.slot == observe_leader_fsm::watch_slot);
          send(req::watch_creation, path);
          break;
        case sansio::request::wait_watch:
          CHECK(a.slot == observe_leader_fsm::watch_slot);
          CHECK_FALSE(waiting);
          waiting = true;
          break;
        case sansio::request::remove_watch:
          CHECK(a.slot == observe_leader_fsm::watch_slot);
          waiting = false, event_due = false;
          if (!registered) {  // fired, or never registered: nothing to remove (the runner answers)
            apply(fsm.on(sansio::input{.type = sansio::input::reply, .tag = a.tag}));
            break;
          }
          send(req::remove, registered->node);
          break;
        case sansio::request::await_connection:
          CHECK_FALSE(awaiting_connection);
          awaiting_connection = true;
          break;
        case sansio::request::timer:
          CHECK(a.slot == observe_leader_fsm::restore_timer);
          timer = true;
          break;
        case sansio::request::cancel_timer:
          CHECK(a.slot == observe_leader_fsm::restore_timer);
          timer = false;
          break;
        case sansio::request::complete:
          ++completions;
          ec = a.ec;
          leader = fsm.result();
          break;
        default: FAIL("a request observe_leader_fsm never makes: " << int(a.type));
      }
    }
  }
  void send(req r, std::string n = {}) {
    CHECK(in_flight == req::none);  // one request at a time
    in_flight = r;
    in_flight_node = std::move(n);
    ++requests;
  }

  // The server answers the request in flight (connected), or it is lost with the connection.
  void answer() {
    REQUIRE(in_flight != req::none);
    auto r = std::exchange(in_flight, req::none);
    if (!connected) {
      if (r == req::remove) return apply(fsm.on_watch_removed(zk_errc::connection_loss));
      if (r == req::watch_creation) return apply(fsm.on_exists(zk_errc::connection_loss, false));
      if (r == req::list || r == req::watch_children) return apply(fsm.on_children(zk_errc::connection_loss, {}));
      return apply(fsm.on_data(zk_errc::connection_loss, {}, 0));
    }
    std::vector<std::string> names;
    for (auto& [seq, data] : candidates) names.push_back(node_name(seq));
    switch (r) {
      case req::list:
      case req::watch_children:
        if (!path_exists) return apply(fsm.on_children(zk_errc::no_node, {}));
        if (r == req::watch_children) set_watch({watch_kind::children, path});
        // the runner's form of the reply (request.hpp's input)
        return apply(fsm.on({.type = sansio::input::reply, .tag = observe_leader_fsm::tag::children, .value = children_result{names, {}}}));
      case req::read_head:
      case req::watch_node: {
        const leader_info* found = nullptr;
        std::optional<leader_info> info;
        for (auto& [seq, data] : candidates)
          if (node_path(seq) == in_flight_node) info = leader_info{data, in_flight_node, seq}, found = &*info;
        if (!found) return apply(fsm.on_data(zk_errc::no_node, {}, 0));
        if (r == req::watch_node) set_watch({watch_kind::data, in_flight_node});
        node_stat st;
        st.ctime = found->since;
        return apply(fsm.on({.type = sansio::input::reply, .tag = observe_leader_fsm::tag::data, .value = data_result{found->identity, st}}));
      }
      case req::watch_creation:
        set_watch({watch_kind::creation, path});  // exists sets a watch either way
        return apply(fsm.on({.type = sansio::input::reply,
                              .tag = observe_leader_fsm::tag::exists,
                              .value = path_exists ? std::optional<node_stat>(node_stat{}) : std::nullopt}));
      case req::remove:
        registered.reset();
        return apply(fsm.on_watch_removed({}));
      case req::none: break;
    }
  }
  void set_watch(watch w) {
    CHECK_FALSE(registered);  // one watch at a time
    registered = w;
    last_set = w;
  }
  void deliver_event() {
    REQUIRE(event_due);
    event_due = false;
    waiting = false;
    apply(fsm.on({.type = sansio::input::watch_fired, .tag = observe_leader_fsm::tag::watch_fired}));
  }
  void drop() {
    connected = false;
    if (in_flight != req::none) answer();  // lost with the connection
  }
  void reconnect() {
    connected = true;
    if (std::exchange(awaiting_connection, false)) apply(fsm.on({.type = sansio::input::connection}));
  }
  void start_and_settle() {
    apply(fsm.start(session_state::connected));
    settle();
  }
  // Answers and delivers until nothing moves.
  void settle() {
    for (int i = 0; i < 100; ++i) {
      if (in_flight != req::none && connected) answer();
      else if (event_due) deliver_event();
      else if (awaiting_connection && connected) reconnect();
      else return;
    }
    FAIL("never settles");
  }
};

// Completed once, reporting `identity` as the leader, with no watch left registered.
void check_reported(const observer_driver& d, const std::string& identity) {
  REQUIRE(d.completions == 1);
  REQUIRE(d.leader);
  CHECK(d.leader->identity == identity);
  CHECK_FALSE(d.registered);
}

}  // namespace

TEST_CASE("observe_leader_fsm: read once: nobody, the head, the head gone between the reads", "[unit][election][observe]") {
  SECTION("no path") {
    observer_driver d(observe_leader_fsm::mode::read_once);
    d.path_exists = false;
    d.start_and_settle();
    CHECK(d.completions == 1);
    CHECK_FALSE(d.ec);
    CHECK_FALSE(d.leader);
    CHECK(d.fsm.finished());
  }
  SECTION("the head, with its identity and ctime") {
    observer_driver d(observe_leader_fsm::mode::read_once);
    d.candidate("alpha"), d.candidate("beta");
    d.start_and_settle();
    REQUIRE(d.leader);
    CHECK(d.leader->identity == "alpha");
    CHECK(d.leader->node == node_path(1));
    CHECK(d.leader->since == 1);
    CHECK(d.requests == 2);
    CHECK_FALSE(d.registered);
  }
  SECTION("the head resigned between the listing and the read: listed again") {
    observer_driver d(observe_leader_fsm::mode::read_once);
    d.candidate("alpha"), d.candidate("beta");
    d.apply(d.fsm.start(session_state::connected));
    d.answer();  // the listing
    d.resign_head();
    d.settle();
    REQUIRE(d.leader);
    CHECK(d.leader->identity == "beta");
  }
  SECTION("an ended session: its error, nothing sent") {
    for (auto [st, want] : {std::pair{session_state::closed, error_code(errc::session_closed)},
                            std::pair{session_state::expired, error_code(errc::session_expired)},
                            std::pair{session_state::disconnected, error_code(errc::not_connected)},
                            std::pair{session_state::connecting, error_code(errc::not_connected)}}) {
      observer_driver d(observe_leader_fsm::mode::read_once);
      d.apply(d.fsm.start(st));
      CHECK(d.ec == want);
      CHECK(d.requests == 0);
      CHECK(d.fsm.finished());
    }
  }
}

TEST_CASE("observe_leader_fsm: completes when the leader changes, one watch at a time, none left",
          "[unit][election][observe]") {
  SECTION("known leader: a data watch on its node; its resignation reported with the next") {
    observer_driver d0(observe_leader_fsm::mode::read_once);
    d0.candidate("alpha"), d0.candidate("beta");
    observer_driver d(observe_leader_fsm::mode::until_changed, d0.head());
    d.candidates = d0.candidates, d.next_seq = d0.next_seq;
    d.start_and_settle();
    CHECK(d.completions == 0);
    REQUIRE(d.registered);
    CHECK(d.registered->kind == observer_driver::watch_kind::data);
    CHECK(d.registered->node == node_path(1));
    d.candidate("gamma");  // a follower queueing is no change
    d.settle();
    CHECK(d.completions == 0);
    d.resign_head();
    d.settle();
    check_reported(d, "beta");
    CHECK(d.fsm.finished());
  }
  SECTION("nobody: a child watch on the empty path; an exists watch on a missing one") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.path_exists = false;
    d.start_and_settle();
    REQUIRE(d.registered);
    CHECK(d.registered->kind == observer_driver::watch_kind::creation);
    d.candidate("alpha");
    d.settle();
    check_reported(d, "alpha");
  }
  SECTION("a leader other than `known`: at once, no watch") {
    observer_driver d(observe_leader_fsm::mode::until_changed, leader_info{"old", node_path(99), 99});
    d.candidate("alpha");
    d.start_and_settle();
    REQUIRE(d.completions == 1);
    CHECK(d.leader->identity == "alpha");
    CHECK(d.requests == 2);
  }
  SECTION("changed between the read and the watch: the watch set for nothing is removed") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.apply(d.fsm.start(session_state::connected));
    d.answer();  // empty: nobody leads, as known
    REQUIRE(d.in_flight == observer_driver::req::watch_children);
    d.candidate("alpha");  // before the watch's reply
    d.answer();
    CHECK(d.in_flight == observer_driver::req::remove);
    d.settle();
    check_reported(d, "alpha");
  }
}

TEST_CASE("observe_leader_fsm: a revocation request does not change who leads", "[unit][election][observe][revoke]") {
  SECTION("the known leader's node reads __REVOKE__, then its identity again: no completion") {
    observer_driver d(observe_leader_fsm::mode::until_changed, leader_info{"alpha", node_path(1), 1});
    d.candidate("alpha");
    d.start_and_settle();
    d.write_head("__REVOKE__");
    d.settle();
    CHECK(d.completions == 0);
    REQUIRE(d.registered);  // watching the same node again
    d.write_head("alpha");  // the leader wrote its identity back
    d.settle();
    CHECK(d.completions == 0);
    d.resign_head();
    d.settle();
    CHECK(d.completions == 1);
    CHECK_FALSE(d.leader);
  }
  SECTION("a leader first seen with __REVOKE__: reported once it wrote its identity back") {
    for (auto m : {observe_leader_fsm::mode::read_once, observe_leader_fsm::mode::until_changed}) {
      observer_driver d(m);
      d.candidate("__REVOKE__");
      d.start_and_settle();
      CHECK(d.completions == 0);
      CHECK(d.timer);
      d.write_head("alpha");
      d.settle();
      CHECK_FALSE(d.timer);
      check_reported(d, "alpha");
    }
  }
  SECTION("a leader that never writes it back (Curator's): reported as it is after the restore wait") {
    observer_driver d(observe_leader_fsm::mode::read_once);
    d.candidate("__REVOKE__");
    d.start_and_settle();
    REQUIRE(d.timer);
    d.apply(d.fsm.on_restore_timeout());
    d.settle();
    check_reported(d, "__REVOKE__");
  }
}

TEST_CASE("observe_leader_fsm: connection loss and the session's end", "[unit][election][observe]") {
  SECTION("a read lost with the connection is made again once connected") {
    observer_driver d(observe_leader_fsm::mode::read_once);
    d.candidate("alpha");
    d.apply(d.fsm.start(session_state::connected));
    d.drop();
    CHECK(d.awaiting_connection);
    CHECK(d.completions == 0);
    d.reconnect();
    d.settle();
    REQUIRE(d.completions == 1);
    CHECK(d.leader->identity == "alpha");
  }
  SECTION("not_connected from a request is the session's end, not a lost connection") {
    observer_driver d(observe_leader_fsm::mode::read_once);
    d.apply(d.fsm.start(session_state::connected));
    d.in_flight = observer_driver::req::none;
    d.apply(d.fsm.on_children(errc::not_connected, {}));
    CHECK(d.ec == errc::session_expired);
    CHECK_FALSE(d.awaiting_connection);
  }
  SECTION("the session ends while waiting for the connection") {
    for (auto [why, want] : {std::pair{error_code(errc::session_expired), error_code(errc::session_expired)},
                             std::pair{error_code(errc::session_closed), error_code(errc::session_closed)}}) {
      observer_driver d(observe_leader_fsm::mode::until_changed);
      d.apply(d.fsm.start(session_state::connected));
      d.drop();
      d.apply(d.fsm.on_session_ended(why));
      CHECK(d.ec == want);
      CHECK(d.fsm.finished());
    }
  }
  SECTION("the watch taken by the session's end") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.start_and_settle();
    REQUIRE(d.waiting);
    d.apply(d.fsm.on_watch_fired(errc::session_closed));
    CHECK(d.ec == errc::session_closed);
  }
}

TEST_CASE("observe_leader_fsm: cancellation removes the watch, and while disconnected terminal and partial complete at once",
          "[unit][election][observe][cancel]") {
  SECTION("connected: the watch is removed, then operation_aborted") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.candidate("alpha");
    d.start_and_settle();
    CHECK(d.completions == 1);  // alpha differs from nobody
    observer_driver w(observe_leader_fsm::mode::until_changed, d.head());
    w.candidates = d.candidates;
    w.start_and_settle();
    REQUIRE(w.registered);
    w.apply(w.fsm.cancel(asio::error::operation_aborted, false, true));
    CHECK(w.completions == 0);  // not before the removal
    w.settle();
    CHECK(w.completions == 1);
    CHECK(w.ec == asio::error::operation_aborted);
    CHECK_FALSE(w.registered);
    CHECK(w.fsm.finished());
  }
  SECTION("disconnected: terminal completes at once, the watch is removed after the reconnect") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.start_and_settle();
    REQUIRE(d.registered);
    d.connected = false;
    d.apply(d.fsm.cancel(asio::error::operation_aborted, false, false));
    CHECK(d.completions == 1);
    CHECK(d.ec == asio::error::operation_aborted);
    d.answer();  // the removal, lost with the connection
    CHECK(d.awaiting_connection);
    CHECK(d.registered);  // the C client sets it again
    CHECK_FALSE(d.fsm.finished());
    d.reconnect();
    d.settle();
    CHECK_FALSE(d.registered);
    CHECK(d.fsm.finished());
    CHECK(d.completions == 1);
  }
  SECTION("disconnected: total waits for the removal") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.start_and_settle();
    d.connected = false;
    d.apply(d.fsm.cancel(asio::error::operation_aborted, true, false));
    d.answer();
    CHECK(d.completions == 0);
    d.reconnect();
    d.settle();
    CHECK(d.completions == 1);
    CHECK(d.ec == asio::error::operation_aborted);
    CHECK_FALSE(d.registered);
  }
  SECTION("waiting for the connection after a lost read: terminal at once, nothing left") {
    observer_driver d(observe_leader_fsm::mode::until_changed);
    d.apply(d.fsm.start(session_state::connected));
    d.drop();
    REQUIRE(d.awaiting_connection);
    d.apply(d.fsm.cancel(asio::error::operation_aborted, false, false));
    CHECK(d.completions == 1);
    CHECK(d.fsm.finished());
  }
  SECTION("cancelled at every step, connected or not, terminal or total: once, and no watch left") {
    for (int step = 0; step < 12; ++step)
      for (bool total : {false, true})
        for (bool disconnect : {false, true}) {
          CAPTURE(step, total, disconnect);
          observer_driver d(observe_leader_fsm::mode::until_changed, leader_info{"alpha", node_path(1), 1});
          d.candidate("alpha");
          d.apply(d.fsm.start(session_state::connected));
          for (int i = 0; i < step; ++i) {
            if (i == 3) d.write_head("__REVOKE__");
            if (i == 6) d.write_head("alpha");
            if (d.in_flight != observer_driver::req::none) d.answer();
            else if (d.event_due) d.deliver_event();
          }
          if (disconnect) d.connected = false;
          d.apply(d.fsm.cancel(asio::error::operation_aborted, total, d.connected));
          if (disconnect && !total) CHECK(d.completions == 1);  // at once
          if (disconnect && d.in_flight != observer_driver::req::none) d.answer();  // lost with the connection
          if (disconnect && d.registered) CHECK(d.completions == (total ? 0 : 1));  // total: after the removal
          d.reconnect();
          d.settle();
          CHECK(d.completions == 1);
          CHECK(d.ec == asio::error::operation_aborted);
          CHECK_FALSE(d.registered);
          CHECK(d.fsm.finished());
        }
  }
}

TEST_CASE("observe_leader_fsm: random walk: one watch, one completion, a change reported, nothing left",
          "[unit][election][observe][property]") {
  std::mt19937 rng(20261125);
  for (int run = 0; run < 2000; ++run) {
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const auto m = pick(4) == 0 ? observe_leader_fsm::mode::read_once : observe_leader_fsm::mode::until_changed;
    observer_driver d0(m);
    d0.path_exists = pick(4) != 0;
    for (int k = pick(3); k > 0; --k) d0.candidate("c" + std::to_string(k));
    const auto known = pick(2) ? d0.head() : std::nullopt;
    observer_driver d(m, known);
    d.path_exists = d0.path_exists, d.candidates = d0.candidates, d.next_seq = d0.next_seq;
    d.apply(d.fsm.start(session_state::connected));
    bool cancelled = false, timed_out = false;
    std::string trace;
    for (int step = 0; step < 40 && !d.fsm.finished(); ++step) {
      switch (pick(11)) {
        case 0: case 1: case 2:
          if (d.in_flight != observer_driver::req::none && d.connected) d.answer(), trace += "a";
          break;
        case 3: if (d.event_due) d.deliver_event(), trace += "e"; break;
        case 4: d.candidate("n" + std::to_string(step)), trace += "c"; break;
        case 5: if (!d.candidates.empty()) d.resign_head(), trace += "r"; break;
        case 6: if (!d.candidates.empty()) d.write_head(pick(2) ? "__REVOKE__" : "w" + std::to_string(step)), trace += "w"; break;
        case 7: if (d.connected) d.drop(), trace += "d"; else d.reconnect(), trace += "u"; break;
        case 8:
          if (!cancelled && pick(3) == 0) {
            cancelled = true;
            d.apply(d.fsm.on({.type = sansio::input::cancelled, .ec = asio::error::operation_aborted, .total = pick(2) == 0, .connected = d.connected}));
            trace += "x";
          }
          break;
        case 9:
          if (d.timer)
            d.timer = false, timed_out = true,
            d.apply(d.fsm.on({.type = sansio::input::timer_due, .tag = observe_leader_fsm::tag::restore_due})), trace += "t";
          break;
        case 10: if (!d.connected && d.in_flight != observer_driver::req::none) d.answer(), trace += "l"; break;
      }
      INFO(trace);
      REQUIRE(d.completions <= 1);
    }
    // the end: connected, every reply and event delivered, a restore timer fires, a last cancel
    if (d.in_flight != observer_driver::req::none && !d.connected) d.answer();
    d.reconnect();
    d.settle();
    if (d.timer) d.timer = false, timed_out = true, d.apply(d.fsm.on_restore_timeout()), d.settle();
    if (!d.fsm.completed()) d.apply(d.fsm.cancel(asio::error::operation_aborted, false, true)), cancelled = true, d.settle();
    INFO(trace);
    CHECK(d.completions == 1);
    CHECK(d.fsm.finished());
    CHECK_FALSE(d.registered);
    CHECK(d.in_flight == observer_driver::req::none);
    if (!d.ec && d.leader && !timed_out) CHECK(d.leader->identity != "__REVOKE__");
    if (!d.ec && m == observe_leader_fsm::mode::until_changed && !cancelled) CHECK(d.leader != known);
    if (d.ec) CHECK(d.ec == asio::error::operation_aborted);
  }
}
