// The holder's side of revocation (lock_guard::async_wait_revoked) without a server: when a
// read of our node's data completes the waiters, when the watch is set, re-armed and removed,
// and a random walk over writes, cancellations, connection loss and the hold's end.
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"
#include "sansio/revocation_fsm.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>

using namespace zklock;
using namespace zklock::detail;

namespace {

// Carries out the actions against a model of the server: our node's data and version, the
// data watch it holds for us, the requests in flight.
struct revocation_driver {
  revocation_fsm fsm;
  std::string data = "zklock/3";
  std::int32_t version = 0;
  std::optional<std::uint64_t> read_in_flight, remove_in_flight, registered, event_due;
  bool awaiting_connection = false, check_node = false;
  int completions = 0, revoked = 0, reads = 0, removals = 0;
  error_code last;
  int watches_at_once = 0;

  void apply(const revocation_fsm::actions& as) {
    for (const auto& a : as) {
      switch (a.type) {
        case sansio::request::get_data:
          CHECK(a.path.empty());  // the hold's node
          CHECK(a.slot == revocation_fsm::watch_slot);
          CHECK_FALSE(read_in_flight);
          read_in_flight = a.tag;
          ++reads;
          break;
        case sansio::request::remove_watch:
          CHECK(a.slot == revocation_fsm::watch_slot);
          CHECK_FALSE(remove_in_flight);
          remove_in_flight = a.tag;
          ++removals;
          break;
        case sansio::request::await_connection: awaiting_connection = true; break;
        case sansio::request::notify:
          switch (a.outcome_kind<revocation_outcome>()) {
            case revocation_outcome::check_node: check_node = true; break;
            case revocation_outcome::complete_waiters:
              ++completions;
              last = a.ec;
              if (!a.ec) ++revoked;
              break;
          }
          break;
        default: FAIL("a request revocation_fsm never makes: " << int(a.type));
      }
    }
  }
  void wait() { apply(fsm.add_waiter()); }
  void cancel() { apply(fsm.remove_waiter()); }
  // the server answers the read (which registers the watch)
  void answer_read(error_code ec = {}, bool connected = true) {
    REQUIRE(read_in_flight);
    auto g = *read_in_flight;
    read_in_flight.reset();
    if (!ec) {
      CHECK((!registered || *registered == g));
      registered = g;
    }
    apply(fsm.on_data(g, ec, data, version, connected));
  }
  void write(std::string d) {
    data = std::move(d);
    ++version;
    if (registered) {
      event_due = *registered;
      registered.reset();
    }
  }
  void deliver_event() {
    REQUIRE(event_due);
    auto g = *event_due;
    event_due.reset();
    apply(fsm.on_watch_event(g, {}, watch_event_type::changed));
  }
  // someone writes `d` into the node: its watch's event, then the read the machine asks for
  void written_and_read(std::string d) {
    write(std::move(d));
    deliver_event();
    answer_read();
  }
  void answer_remove(error_code ec = {}, bool connected = true) {
    REQUIRE(remove_in_flight);
    auto g = *remove_in_flight;
    remove_in_flight.reset();
    error_code result = ec;
    if (!ec) {
      if (registered && *registered == g) registered.reset();
      else result = zk_errc::no_watcher;
    }
    apply(fsm.on_watch_removed(g, result, connected));
  }
};

}  // namespace

TEST_CASE("revocation: no watch until someone waits, then one read with a watch", "[unit][revocation]") {
  revocation_driver d;
  CHECK(d.reads == 0);
  d.wait();
  CHECK(d.reads == 1);
  d.wait();  // a second waiter shares the read and its watch
  CHECK(d.reads == 1);
  d.answer_read();
  CHECK(d.completions == 0);
  CHECK(d.registered);
  d.write("__REVOKE__");
  d.deliver_event();
  CHECK(d.reads == 2);
  d.answer_read();
  CHECK(d.revoked == 1);  // both waiters, one completion action
  CHECK(d.fsm.waiters() == 0);
  // nobody waits now: the watch is taken back
  REQUIRE(d.remove_in_flight);
  d.answer_remove();
  CHECK_FALSE(d.registered);
  CHECK_FALSE(d.fsm.watch_pending());
}

TEST_CASE("revocation: a request written before the wait is seen by its first read, once", "[unit][revocation]") {
  revocation_driver d;
  d.write("__REVOKE__");
  d.wait();
  d.answer_read();
  CHECK(d.revoked == 1);
  d.answer_remove();
  // the holder kept the lock and waits again: the same request is not reported twice
  d.wait();
  d.answer_read();
  CHECK(d.revoked == 1);
  CHECK(d.registered);
  // a new request (the same bytes, a new version) is
  d.written_and_read("__REVOKE__");
  CHECK(d.revoked == 2);
}

TEST_CASE("revocation: other writes re-arm the watch and complete nothing", "[unit][revocation]") {
  revocation_driver d;
  d.wait();
  d.answer_read();
  for (std::string data : {"x", "", "zklock/2:downgraded", "__REVOKE__ "}) {
    d.written_and_read(data);
    CHECK(d.completions == 0);
    CHECK(d.registered);
  }
  d.written_and_read("__REVOKE__");
  CHECK(d.revoked == 1);
}

TEST_CASE("revocation: the last waiter cancelled removes the watch, a new waiter reads again", "[unit][revocation]") {
  revocation_driver d;
  d.wait();
  d.wait();
  d.answer_read();
  d.cancel();
  CHECK_FALSE(d.remove_in_flight);  // one waiter left
  d.cancel();
  REQUIRE(d.remove_in_flight);
  d.wait();  // while the removal is in flight
  CHECK(d.reads == 1);
  d.answer_remove();
  CHECK(d.reads == 2);  // read again for the new waiter
  d.answer_read();
  CHECK(d.registered);
  CHECK(d.completions == 0);
}

TEST_CASE("revocation: cancelled while the read is in flight, the watch it registers is removed",
          "[unit][revocation]") {
  revocation_driver d;
  d.wait();
  d.cancel();
  CHECK_FALSE(d.remove_in_flight);
  d.answer_read();
  REQUIRE(d.remove_in_flight);
  d.answer_remove();
  CHECK_FALSE(d.registered);
  CHECK(d.completions == 0);
}

TEST_CASE("revocation: a read lost with the connection goes again once connected", "[unit][revocation][fault]") {
  revocation_driver d;
  d.wait();
  d.answer_read(zk_errc::connection_loss, false);
  CHECK(d.awaiting_connection);
  CHECK(d.reads == 1);
  d.write("__REVOKE__");  // while disconnected
  d.apply(d.fsm.on_connected());
  CHECK(d.reads == 2);
  d.answer_read();
  CHECK(d.revoked == 1);
}

TEST_CASE("revocation: the hold's end completes the waiters, and what is in flight is ignored",
          "[unit][revocation]") {
  revocation_driver d;
  d.wait();
  d.apply(d.fsm.on_hold_ended(errc::lock_lost));
  CHECK(d.completions == 1);
  CHECK(d.last == errc::lock_lost);
  d.write("__REVOKE__");
  d.answer_read();
  CHECK(d.completions == 1);
  d.wait();  // the runner answers these itself; the machine adds nothing
  CHECK(d.reads == 1);
}

TEST_CASE("revocation: our node not found, or deleted, asks the hold to check it", "[unit][revocation]") {
  revocation_driver d;
  d.wait();
  d.answer_read(zk_errc::no_node);
  CHECK(d.check_node);
  CHECK(d.completions == 0);  // the hold reports the loss, which ends the waiters
  revocation_driver e;
  e.wait();
  e.answer_read();
  e.apply(e.fsm.on_watch_event(1, {}, watch_event_type::deleted));
  CHECK(e.check_node);
  CHECK(e.completions == 0);
}

TEST_CASE("revocation: random walk: one watch at most, none left when nobody waits, every waiter completed",
          "[unit][revocation][property]") {
  for (unsigned seed = 1; seed <= 2000; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    revocation_driver d;
    int waiting = 0;     // the runner's waiters
    bool connected = true;
    int expected_revocations = 0;
    std::int32_t last_reported = -1;
    for (int step = 0; step < 60; ++step) {
      switch (pick(9)) {
        case 0: d.wait(); if (!d.fsm.ended()) ++waiting; break;
        case 1: if (waiting > 0) { --waiting; d.cancel(); } break;
        case 2: d.write(pick(2) ? "__REVOKE__" : "x"); break;
        case 3: if (d.event_due) d.deliver_event(); break;
        case 4:
          if (d.read_in_flight) {
            bool is_request = d.data == "__REVOKE__" && d.version > last_reported;
            int before = d.revoked;
            d.answer_read(connected ? error_code{} : error_code(zk_errc::connection_loss), connected);
            if (connected && is_request && waiting > 0) {
              ++expected_revocations;
              last_reported = d.version;
            }
            CHECK(d.revoked - before <= 1);
          }
          break;
        case 5: if (d.remove_in_flight) d.answer_remove(connected ? error_code{} : error_code(zk_errc::connection_loss), connected); break;
        case 6: connected = !connected; break;
        case 7:
          if (connected && d.awaiting_connection) {
            d.awaiting_connection = false;
            d.apply(d.fsm.on_connected());
          }
          break;
        case 8: if (pick(10) == 0) d.apply(d.fsm.on_hold_ended(errc::already_released)); break;
      }
      if (d.completions > 0 && d.fsm.waiters() == 0) waiting = 0;  // a completion takes every waiter
      CHECK(d.fsm.waiters() == waiting);
      CHECK(d.revoked == expected_revocations);
      if (d.fsm.ended()) CHECK(d.fsm.waiters() == 0);
    }
    // settle: connected, everything answered and delivered
    connected = true;
    for (int i = 0; i < 20; ++i) {
      if (d.awaiting_connection) { d.awaiting_connection = false; d.apply(d.fsm.on_connected()); }
      if (d.event_due) d.deliver_event();
      if (d.read_in_flight) d.answer_read();
      if (d.remove_in_flight) d.answer_remove();
    }
    CHECK_FALSE(d.read_in_flight);
    CHECK_FALSE(d.remove_in_flight);
    if (!d.fsm.ended()) {
      // someone waits: exactly the one watch (or a request just reported them all);
      // nobody waits: no watch left on the server
      if (d.fsm.waiters() > 0) CHECK(d.registered);
      else CHECK_FALSE(d.registered);
    }
  }
}

TEST_CASE("revocation: the holders asked are those of the grant rule", "[unit][revocation][queue]") {
  auto names = [](const std::vector<queued_node>& q, const std::vector<std::size_t>& idx) {
    std::vector<std::string> r;
    for (auto i : idx) r.push_back(q[i].name);
    return r;
  };
  auto q = queue_order({"_c_b-lock-0000000002", "_c_a-lock-0000000001", "other-node"});
  CHECK(names(q, current_holders(q)) == std::vector<std::string>{"_c_a-lock-0000000001"});
  // readers ahead of the first writer hold; the writer and a reader behind it do not
  q = queue_order({"_c_a-__READ__0000000001", "_c_b-__READ__0000000002", "_c_c-__WRIT__0000000003",
                   "_c_d-__READ__0000000004"});
  CHECK(names(q, current_holders(q)) == std::vector<std::string>{"_c_a-__READ__0000000001", "_c_b-__READ__0000000002"});
  q = queue_order({"_c_c-__WRIT__0000000003", "_c_d-__READ__0000000004"});
  CHECK(names(q, current_holders(q)) == std::vector<std::string>{"_c_c-__WRIT__0000000003"});
  // a semaphore's leases: the first max_leases
  q = queue_order({"_c_a-lease-0000000001", "_c_b-lease-0000000002", "_c_c-lease-0000000003"});
  CHECK(current_holders(q, 2).size() == 2);
  CHECK(current_holders(q, 5).size() == 3);
  q = queue_order({"_c_a-latch-0000000007", "_c_b-latch-0000000008"});
  CHECK(names(q, current_holders(q)) == std::vector<std::string>{"_c_a-latch-0000000007"});
  CHECK(current_holders(queue_order({})).empty());
}
