// The fault harness's checker on its own: synthetic journals, as the fenced
// resource would have recorded them, and what the checker must make of them. No server.
#include "checker.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace zklock::fault;

namespace {

constexpr std::int64_t ms = 1'000'000;  // journal times are ns

// A journal written by hand: times in ms, received when sent unless told otherwise; writes
// accepted unless told otherwise.
struct journal {
  std::vector<record> v;
  journal& add(std::string kind, std::string who, std::int64_t token, std::int64_t t_ms, std::string extra = "",
               int verdict = 0, std::int64_t recv_ms = -1) {
    record r;
    r.kind = std::move(kind);
    r.who = std::move(who);
    r.token = token;
    r.t_client = t_ms * ms;
    r.t_recv = (recv_ms < 0 ? t_ms : recv_ms) * ms;
    r.extra = std::move(extra);
    r.verdict = is_write(r.kind) ? (verdict == 0 ? 1 : verdict) : 0;
    v.push_back(std::move(r));
    return *this;
  }
  // acquire at `acq`, grant at `from` (token), a write every 5 ms, end at `to`, released ok
  journal& section(const std::string& who, std::int64_t token, std::int64_t acq, std::int64_t from, std::int64_t to,
                   const std::string& side = "") {
    add("acquire", who, 0, acq);
    add("grant", who, token, from, side.empty() ? "/l/n" : "/l/n side=" + side);
    for (std::int64_t t = from + 5; t < to; t += 5) add("write", who, token, t);
    add("end", who, token, to);
    add("released", who, token, to + 1, "ok");
    return *this;
  }
  // the journal in receive order, as the resource keeps it
  std::vector<record> sorted() const {
    auto j = v;
    std::stable_sort(j.begin(), j.end(), [](auto& a, auto& b) { return a.t_recv < b.t_recv; });
    return j;
  }
};

// `first` holds from 1 to 30 ms (token 10); `next`, granted at 25 (token 20), holds to 40:
// first's write at 26 and its end at 30 come after next's grant. `first_side`, `next_side`: the
// sections' sides ("" for the mutex's).
journal overran(const std::string& first, const std::string& next, const std::string& first_side = "",
                const std::string& next_side = "") {
  journal j;
  j.section(first, 10, 0, 1, 30, first_side).section(next, 20, 2, 25, 40, next_side);
  return j;
}

// `a` holds from 1 to 30 ms, `b` from 5 to 40, at once: a shared lock's two sides.
journal side_by_side(const std::string& a_side, const std::string& b_side) {
  journal j;
  j.section("a", 10, 0, 1, 30, a_side).section("b", 20, 2, 5, 40, b_side);
  return j;
}

// Three leases: a from 1 to 30 ms, b from 5 to 40, c from `c_from` to 60.
journal three_leases(std::int64_t c_from) {
  journal j;
  j.section("a", 10, 0, 1, 30, "lease").section("b", 20, 0, 5, 40, "lease").section("c", 30, 0, c_from, 60, "lease");
  return j;
}

// b holds from 10 to 30 ms (token 20); a, granted at 1 (token 10), wrote at 5 and then stopped
// (the test adds what it sent after).
journal stopped_writer() {
  journal j;
  j.section("b", 20, 0, 10, 30);
  j.add("acquire", "a", 0, 0).add("grant", "a", 10, 1).add("write", "a", 10, 5);
  return j;
}

const std::map<std::string, std::string> kinds = {
    {"a", "zklock"}, {"b", "zklock"}, {"c", "zklock"}, {"cur", "curator"}};
constexpr std::int64_t bound = 50'000 * ms;  // the stuck bound

run_result checked(const journal& j, const std::vector<pause_interval>& pauses = {}, const recipe_rule& rule = {},
                   std::int64_t t_end_ms = 1'000) {
  run_result r;
  check(r, j.sorted(), pauses, kinds, bound, t_end_ms * ms, rule);
  return r;
}

bool noted(const run_result& r, const std::string& what) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](auto& n) { return n.find(what) != std::string::npos; });
}

// `first` overran `next`'s grant (overran()) while `who` was stopped from `from_ms` to `to_ms`:
// when that pause `explains` the overrun the overlap is counted apart, else as an overlap.
void check_pause(const std::string& first, const std::string& next, const std::string& who, bool explains,
                 std::int64_t from_ms = 3, std::int64_t to_ms = 28) {
  INFO(first << " overran " << next << ", " << who << " paused from " << from_ms << " to " << to_ms << " ms");
  auto r = checked(overran(first, next), {{who, from_ms * ms, to_ms * ms}});
  CHECK(r.overlaps == (explains ? 0 : 1));
  CHECK(r.overlaps_paused == (explains ? 1 : 0));
}

}  // namespace

TEST_CASE("checker: a clean handoff has no overlap, no stale write, no stuck waiter", "[unit][fault]") {
  journal j;
  j.section("a", 10, 0, 1, 20).section("b", 20, 2, 25, 40).section("c", 30, 3, 45, 60);
  auto r = checked(j);
  CHECK(r.acquisitions == 3);
  CHECK(r.overlaps == 0);
  CHECK(r.overlaps_paused == 0);
  CHECK(r.stale_accepted == 0);
  CHECK(r.stale_rejected == 0);
  CHECK(r.stuck == 0);
  CHECK(r.lost == 0);
  // a released at 21, b granted at 25; b released at 41, c granted at 45
  CHECK(r.max_grant_delay_ms == Approx(4.0));
  CHECK(r.max_wait_ms == Approx(42.0));  // c: acquire at 3, grant at 45
  CHECK(r.writes == 13);                 // per section a grant, its writes (3, 2, 2) and an end
}

TEST_CASE("checker: a holder still writing after the next grant is an overlap", "[unit][fault]") {
  auto r = checked(overran("a", "b"));
  CHECK(r.overlaps == 1);
  CHECK(r.overlaps_paused == 0);
  CHECK(r.per_kind_overlaps["zklock"] == 1);
  CHECK(noted(r, "OVERLAP: a (token 10, zklock, exclusive) until +5 ms after b (exclusive) was granted"));
  // a's write at 26 and end at 30 (token 10) reached the resource after b's grant (token 20):
  // stale, and accepted here (every write in this journal is)
  CHECK(r.stale_accepted == 2);
}

TEST_CASE("checker: an overlap behind a paused holder is counted apart", "[unit][fault]") {
  check_pause("a", "b", "a", true);
  // a pause of another client, or of `a` outside its section, explains nothing
  check_pause("a", "b", "b", false);
  check_pause("a", "b", "a", false, 50, 60);
}

TEST_CASE("checker: an overlap is charged to the earlier holder's kind", "[unit][fault]") {
  auto r = checked(overran("cur", "a"));
  CHECK(r.overlaps == 1);
  CHECK(r.per_kind_overlaps["curator"] == 1);
  CHECK(r.per_kind_overlaps["zklock"] == 0);
}

TEST_CASE("checker: stale writes, accepted and rejected, by receive time", "[unit][fault]") {
  SECTION("a paused holder's write, rejected by the fencing check") {
    auto j = stopped_writer();
    // sent at 6 (before b's grant), received at 35 (after it): the resource refused it
    j.add("write", "a", 10, 6, "", -1, 35).add("lost", "a", 10, 36, "rejected");
    auto r = checked(j, {{"a", 6 * ms, 34 * ms}});
    CHECK(r.stale_rejected == 1);
    CHECK(r.stale_accepted == 0);
    CHECK(r.overlaps == 0);
    CHECK(r.overlaps_paused == 1);
    CHECK(r.lost == 1);
  }
  SECTION("the same write accepted is the failure the harness exists to find") {
    auto j = stopped_writer();
    j.add("write", "a", 10, 6, "", 1, 35);
    auto r = checked(j, {{"a", 6 * ms, 34 * ms}});
    CHECK(r.stale_accepted == 1);
    CHECK(r.stale_rejected == 0);
    CHECK(noted(r, "stale write ACCEPTED: write by a token 10"));
  }
  SECTION("a write received before the newer grant is not stale") {
    journal j;
    j.add("acquire", "a", 0, 0).add("grant", "a", 10, 1).add("end", "a", 10, 9, "", 1, 9);
    j.add("released", "a", 10, 9, "ok");
    j.add("acquire", "b", 0, 2).add("grant", "b", 20, 10).add("end", "b", 20, 15);
    auto r = checked(j);
    CHECK(r.stale_accepted == 0);
    CHECK(r.stale_rejected == 0);
  }
}

TEST_CASE("checker: stuck waiters", "[unit][fault]") {
  SECTION("a wait longer than the bound, then granted") {
    journal j;
    j.add("acquire", "a", 0, 0).add("grant", "a", 10, 60'000).add("end", "a", 10, 60'010);
    auto r = checked(j, {}, {}, 70'000);
    CHECK(r.stuck == 1);
    CHECK(noted(r, "a waited 60000 ms for the lock"));
    CHECK(r.max_wait_ms == Approx(60'000.0));
  }
  SECTION("a wait still open at the end, past the bound") {
    journal j;
    j.add("acquire", "a", 0, 0);
    auto r = checked(j, {}, {}, 60'000);
    CHECK(r.stuck == 1);
    CHECK(noted(r, "a still waiting after 60000 ms"));
    // within the bound it is not stuck
    CHECK(checked(j, {}, {}, 40'000).stuck == 0);
  }
  SECTION("a cancelled or failed acquire, an idle report end the wait") {
    for (auto end : {"acquire_error", "idle", "dead_grant"}) {
      journal j;
      j.add("acquire", "a", 0, 0).add(end, "a", 0, 1'000);
      auto r = checked(j, {}, {}, 60'000);
      CHECK(r.stuck == 0);
    }
  }
}

TEST_CASE("checker: dead grants, lost sections, stalled user sockets are counted", "[unit][fault]") {
  journal j;
  j.add("acquire", "a", 0, 0).add("dead_grant", "a", 10, 5, "status=maybe_lost");
  j.add("acquire", "b", 0, 0).add("grant", "b", 20, 6).add("lost", "b", 20, 20, "status=lost");
  j.add("user_socket_stall", "c", 0, 30, "no reply for 2000 ms");
  auto r = checked(j);
  CHECK(r.dead_grants == 1);
  CHECK(r.lost == 1);
  CHECK(r.user_socket_stalls == 1);
  CHECK(r.acquisitions == 1);
}

TEST_CASE("checker: several contenders of one process are told apart by name", "[unit][fault]") {
  // a storm worker's sessions "a.1", "a.2" contend with each other: an overlap between them is
  // one (only the same name is the same holder)
  CHECK(process_of("zklock-0.2") == "zklock-0");
  CHECK(process_of("zklock-0") == "zklock-0");
  CHECK(checked(overran("a.1", "a.2")).overlaps == 1);
}

TEST_CASE("checker: the shared lock lets readers overlap, never a writer", "[unit][fault]") {
  recipe_rule shared{"shared", 1};
  SECTION("two readers") {
    auto r = checked(side_by_side("read", "read"), {}, shared);
    CHECK(r.overlaps == 0);
    CHECK(r.reader_overlaps == 1);
    // a reader's writes after a later reader's grant are not stale
    CHECK(r.stale_accepted == 0);
    CHECK(r.stale_rejected == 0);
  }
  SECTION("a writer and a reader") {
    auto r = checked(side_by_side("write", "read"), {}, shared);
    CHECK(r.overlaps == 1);
    CHECK(r.write_sections == 1);
    CHECK(noted(r, "OVERLAP: a (token 10, zklock, write)"));
  }
  SECTION("a reader writing after a writer's grant is stale") {
    auto r = checked(overran("a", "b", "read", "write"), {}, shared);
    CHECK(r.overlaps == 1);
    CHECK(r.stale_accepted == 2);  // a's write at 26 and end at 30
  }
  SECTION("the same journal under the mutex rule is an overlap") {
    CHECK(checked(side_by_side("read", "read")).overlaps == 1);
  }
}

TEST_CASE("checker: the semaphore allows N sections at once, not N + 1", "[unit][fault]") {
  recipe_rule two{"semaphore", 2};
  SECTION("two leases at once") {
    auto r = checked(three_leases(45), {}, two);
    CHECK(r.overlaps == 0);
    CHECK(r.max_concurrent == 2);
    CHECK(r.at_capacity == 1);
    CHECK(r.over_capacity_writes == 0);
    CHECK(r.stale_accepted == 0);  // no token order between leases
  }
  SECTION("three at once") {
    auto r = checked(three_leases(10), {}, two);
    CHECK(r.overlaps == 1);
    CHECK(noted(r, "OVER CAPACITY: 3 sections at once when c was granted"));
    CHECK(r.over_capacity_writes > 0);
  }
  SECTION("three at once, one of them paused") {
    auto r = checked(three_leases(10), {{"a", 2 * ms, 29 * ms}}, two);
    CHECK(r.overlaps == 0);
    CHECK(r.overlaps_paused == 1);
  }
}

TEST_CASE("checker: local queue: an overlap of two coroutines of one process is counted as one within it",
          "[unit][fault]") {
  // p.1 hands over to p.2 (a local handoff: same node, generation 0 then 1) but keeps writing
  const std::int64_t node = std::int64_t(100) << 16;
  journal j;
  j.section("p.1", node | 0, 0, 1, 30).section("p.2", node | 1, 2, 25, 40).section("q.1", std::int64_t(200) << 16, 3, 45, 60);
  auto r = checked(j);
  CHECK(r.overlaps == 1);
  CHECK(r.overlaps_within == 1);
  CHECK(noted(r, "OVERLAP within p: p.1"));
  // across processes it is an overlap, not one within
  journal k;
  k.section("p.1", node | 0, 0, 1, 30).section("q.1", std::int64_t(200) << 16, 2, 25, 40);
  auto rk = checked(k);
  CHECK(rk.overlaps == 1);
  CHECK(rk.overlaps_within == 0);
}

TEST_CASE("checker: a paused process pauses every coroutine of it", "[unit][fault]") {
  // SIGSTOP stops the whole process: the pause was recorded for p.1 (whose grant fired it),
  // the section that overran is p.2's
  check_pause("p.2", "q.1", "p.1", true);
  // another process's pause explains nothing
  check_pause("p.2", "q.1", "r.1", false);
}

TEST_CASE("checker: local queue: the fairness bound", "[unit][fault]") {
  // q.1 waits from 0 to 100 while process p's node (czxid 100) grants its coroutines; "ev" is
  // p's session's child watch events at each grant: the event at 1 (q's node appeared) came
  // after the node's first grant in the wait
  const std::int64_t node = std::int64_t(100) << 16;
  auto run = [&](int grants_after_event, int bound, int first_ev = 0) {
    journal j;
    j.add("acquire", "q.1", 0, 0);
    std::int64_t t = 2;
    j.section("p.1", node | 0, 1, t, t + 5, "exclusive ev=" + std::to_string(first_ev));
    for (int g = 1; g <= grants_after_event; ++g) {
      t += 10;
      j.section("p." + std::to_string(g % 8 + 1), node | g, 1, t, t + 5, "exclusive ev=" + std::to_string(first_ev + 1));
    }
    j.add("grant", "q.1", std::int64_t(300) << 16, 100, "/l/n side=exclusive ev=0").add("end", "q.1", std::int64_t(300) << 16, 105);
    j.add("released", "q.1", std::int64_t(300) << 16, 106, "ok");
    recipe_rule lq{"local-queue", 1, bound};
    return checked(j, {}, lq);
  };
  SECTION("within the bound") {
    auto r = run(1, 1);
    CHECK(r.fairness_violations == 0);
    CHECK(r.fair_max == 1);
    CHECK(r.wait_grants_max == 2);
    CHECK(run(2, 2).fairness_violations == 0);
  }
  SECTION("past it") {
    auto r = run(2, 1);
    CHECK(r.fairness_violations == 1);
    CHECK(r.fair_max == 2);
    CHECK(noted(r, "FAIRNESS: p's node 100 made 2 grants after its child watch fired while q.1 waited (bound 1)"));
    CHECK(run(5, 2).fairness_violations == 1);
    CHECK_FALSE(r.zklock_ok());
  }
  SECTION("a waiter whose own session was closed waits no more: its node is gone from the queue") {
    // q's session is closed at 5 (local-close); q.1's failure is reported at 50. p's node
    // granted after the event at 12 and 22: nobody of q was queued any more
    auto with_close = [&](const std::string& closed) {
      journal j;
      j.add("acquire", "q.1", 0, 0);
      j.section("p.1", node | 0, 1, 2, 4, "exclusive ev=0");
      j.add("close", closed, 0, 5, "async_close after 1 handlers");
      for (int g = 1; g <= 2; ++g) j.section("p." + std::to_string(g + 1), node | g, 1, 2 + 10 * g, 4 + 10 * g, "exclusive ev=1");
      j.add("acquire_error", "q.1", 0, 50, "'the session was closed'");
      recipe_rule lq{"local-queue", 1, 1};
      return checked(j, {}, lq, 100);
    };
    CHECK(with_close("q").fairness_violations == 0);
    CHECK(with_close("r").fairness_violations == 1);  // another process's close changes nothing
  }
  SECTION("grants before the watch fired are not held against it") {
    // no event during the wait: p had not seen q's node (its session was cut off, say)
    journal j;
    j.add("acquire", "q.1", 0, 0);
    for (int g = 0; g < 6; ++g) j.section("p." + std::to_string(g + 1), node | g, 1, 2 + 10 * g, 7 + 10 * g, "exclusive ev=4");
    recipe_rule lq{"local-queue", 1, 1};
    auto r = checked(j, {}, lq, 100);
    CHECK(r.fairness_violations == 0);
    CHECK(r.fair_max == 0);
    CHECK(r.wait_grants_max == 6);
  }
  SECTION("each node of the process has its own count, and the bound is checked only when asked") {
    journal j;
    j.add("acquire", "q.1", 0, 0);
    j.section("p.1", node | 0, 1, 2, 7, "exclusive ev=0").section("p.2", node | 1, 1, 12, 17, "exclusive ev=1");
    const std::int64_t next = std::int64_t(101) << 16;
    j.section("p.3", next | 0, 1, 22, 27, "exclusive ev=1").section("p.4", next | 1, 1, 32, 37, "exclusive ev=2");
    recipe_rule lq{"local-queue", 1, 1};
    CHECK(checked(j, {}, lq, 100).fairness_violations == 0);
    CHECK(checked(j, {}, lq, 100).fair_max == 1);
    CHECK(run(5, 0).fairness_violations == 0);  // mutex rule: not checked
  }
}

// ensemble-gone, local-close, operator-delete: each fault's own rule (check_fault_rules).
TEST_CASE("fault rules: outages, session closes and node deletions", "[fault][checker]") {
  fault_bounds b;
  b.session_timeout_ns = 2'000 * ms;  // outage bound: down + 2,000 + 1,000 ms
  auto rules = [&](const journal& j, const std::vector<outage>& outs, const std::vector<node_deletion>& dels = {}) {
    run_result r;
    check_fault_rules(r, j.sorted(), outs, dels, b, 20'000 * ms);
    return r;
  };
  SECTION("ensemble-gone: waiters that fail with an expiry in time, a holder that stops in time") {
    journal j;
    j.add("acquire", "a", 0, 900).add("grant", "a", 10, 950, "/l/a").add("write", "a", 10, 2'500).add("lost", "a", 10, 2'700);
    j.add("acquire", "b", 0, 980).add("acquire_error", "b", 0, 3'050, "'the ZooKeeper session expired'");
    j.add("acquire", "c", 0, 1'500).add("acquire_error", "c", 0, 3'100, "'ZooKeeper session expired'");
    // a new session's acquire once the servers served again: not the outage's
    j.add("acquire", "b", 0, 4'600).add("grant", "b", 20, 4'700, "/l/b");
    auto r = rules(j, {{1'000 * ms, 4'500 * ms}});
    CHECK(r.injected == 1);
    CHECK(r.fault_waits == 3);
    CHECK(r.fault_failures == 0);
    CHECK(r.worst_fail_ms == Approx(2'050));
  }
  SECTION("ensemble-gone: the kills take 900 ms: the bound runs from the last one") {
    journal j;
    // a: within the bound from the last kill, not from the first
    j.add("acquire", "a", 0, 900).add("acquire_error", "a", 0, 4'500, "'the ZooKeeper session expired'");
    j.add("acquire", "b", 0, 980).add("acquire_error", "b", 0, 4'950, "'the ZooKeeper session expired'");
    auto r = rules(j, {{1'000 * ms, 6'000 * ms, 1'900 * ms}});
    CHECK(r.fault_waits == 2);
    CHECK(r.fault_failures == 1);
    CHECK(noted(r, "ENSEMBLE-GONE: b's acquire (waiting since -20 ms after the outage began) failed only 3950 ms "
                   "after it began (bound: session timeout + 1000 ms after every server was gone, 900 ms after it began)"));
    CHECK(r.worst_fail_ms == Approx(3'050));
  }
  SECTION("ensemble-gone: a waiter still waiting, one failing late, one failing with something else") {
    journal j;
    j.add("acquire", "a", 0, 900);  // never ends
    j.add("acquire", "b", 0, 980).add("acquire_error", "b", 0, 4'100, "'the ZooKeeper session expired'");
    j.add("acquire", "c", 0, 990).add("acquire_error", "c", 0, 3'000, "'connection loss'");
    j.add("acquire", "cur", 0, 995).add("grant", "cur", 9, 996, "/l/x").add("write", "cur", 9, 4'200);
    auto r = rules(j, {{1'000 * ms, 8'000 * ms}});
    CHECK(r.fault_failures == 4);
    CHECK(noted(r, "ENSEMBLE-GONE: a's acquire"));
    CHECK(noted(r, "ENSEMBLE-GONE: b's acquire (waiting since -20 ms after the outage began) failed only 3100 ms"));
    CHECK(noted(r, "ENSEMBLE-GONE: c's acquire failed with 'connection loss', not a session expiry"));
    CHECK(noted(r, "ENSEMBLE-GONE: cur (token 9) held until 3200 ms"));
    CHECK_FALSE(r.zklock_ok());
  }
  SECTION("ensemble-gone, operator-delete: an acquire its own deadline ended (threads mode) is the user's cancel") {
    // b's acquire || timer (150 ms) ended 160 ms after it was sent: not the outage's failure;
    // c's (100 ms) ended only at the expiry: its cancellation waited for the servers
    journal j;
    j.add("acquire", "b", 0, 1'200).add("acquire_error", "b", 0, 1'360, "deadline=150 'Connection timed out'");
    j.add("acquire", "c", 0, 1'300).add("acquire_error", "c", 0, 3'000, "deadline=100 'Connection timed out'");
    auto r = rules(j, {{1'000 * ms, 4'500 * ms}});
    CHECK(r.fault_waits == 2);
    CHECK(r.fault_failures == 1);
    CHECK(noted(r, "ENSEMBLE-GONE: c's acquire, cancelled by its own deadline of 100 ms, completed only 1700 ms after it was sent"));
    // the same report without the deadline: the library's error, not an expiry
    journal k;
    k.add("acquire", "b", 0, 1'200).add("acquire_error", "b", 0, 1'360, "'Connection timed out'");
    CHECK(rules(k, {{1'000 * ms, 4'500 * ms}}).fault_failures == 1);
    // a waiter whose node was deleted, its own deadline passing meanwhile: not a failure to queue again
    journal d;
    d.add("acquire", "c", 0, 3).add("acquire_error", "c", 0, 150, "deadline=140 'Connection timed out'");
    CHECK(rules(d, {}, {{"/l/c", "c", false, 100 * ms}}).fault_failures == 0);
  }
  SECTION("pause-close: each close within its bound, the probe not stalled") {
    journal j;
    j.add("hello", "p.1", 0, 0, "0x1").add("hello", "p.2", 0, 0, "0x2");
    j.add("close", "p.1", 0, 100, "async_close after 0 handlers").add("close", "p.2", 0, 100, "destroy after 0 handlers");
    j.add("closed", "p.1", 0, 1'600, "how=async_close took_ms=1001.5 probe=1 probe_late_ms=12.0 probe_call_ms=0.3");
    j.add("closed", "p.2", 0, 1'600, "how=destroy took_ms=0.2 probe=1 probe_late_ms=40.1 probe_call_ms=0.1");
    auto r = rules(j, {});
    CHECK(r.injected == 2);
    CHECK(r.fault_failures == 0);
    CHECK(r.close_ms == Approx(1001.5));
    CHECK(r.close_stall_ms == Approx(40.1));
    // a close that blocked: the probe's call waited 1,500 ms for the lock of the process
    j.add("close", "q.1", 0, 100, "async_close after 0 handlers");
    j.add("closed", "q.1", 0, 1'600, "how=async_close took_ms=2600 probe=1 probe_late_ms=3 probe_call_ms=1500");
    j.add("close", "q.2", 0, 100, "destroy after 0 handlers");
    j.add("closed", "q.2", 0, 1'600, "how=destroy took_ms=1502 probe=1 probe_late_ms=1 probe_call_ms=1");
    r = rules(j, {});
    CHECK(r.fault_failures == 3);
    CHECK(noted(r, "PAUSE-CLOSE: q.1's async_close took 2600 ms"));
    CHECK(noted(r, "PAUSE-CLOSE: while q.1's session closed"));
    CHECK(noted(r, "PAUSE-CLOSE: q.2's session destroyed: its destructor returned only after 1502 ms"));
  }
  SECTION("local-close: waiters fail, nobody is granted until the next session") {
    journal j;
    j.add("hello", "p", 0, 0, "0x1");
    j.add("acquire", "p.1", 0, 10).add("grant", "p.1", 5, 11, "/l/n");
    j.add("acquire", "p.2", 0, 12).add("acquire", "p.3", 0, 13);
    j.add("close", "p", 0, 20, "async_close after 3 handlers");
    j.add("acquire_error", "p.2", 0, 21, "'the session was closed'").add("acquire_error", "p.3", 0, 22, "'x'");
    j.add("hello", "p", 0, 100, "0x2");
    j.add("acquire", "p.2", 0, 101).add("grant", "p.2", 6, 102, "/l/m");
    auto r = rules(j, {});
    CHECK(r.injected == 1);
    CHECK(r.fault_waits == 2);
    CHECK(r.fault_failures == 0);
    CHECK(r.grants_after_close == 0);
    CHECK(r.worst_fail_ms == Approx(2));
  }
  SECTION("local-close: a local waiter granted after the close, one never answered") {
    journal j;
    j.add("hello", "p", 0, 0, "0x1");
    j.add("acquire", "p.1", 0, 10).add("acquire", "p.2", 0, 12);
    j.add("close", "p", 0, 20, "destroy after 0 handlers");
    j.add("dead_grant", "p.1", 7, 21, "status=released");  // a local grant after the session was closed looked like this
    auto r = rules(j, {});
    CHECK(r.grants_after_close == 1);
    CHECK(r.fault_failures == 2);
    CHECK(noted(r, "GRANT AFTER CLOSE: p.1 (dead_grant) 1 ms after p's destroy after 0 handlers"));
    CHECK(noted(r, "LOCAL-CLOSE: p.2's acquire ended by open"));
  }
  SECTION("local-close: a grant on its way when the close was taken is handed over lost; a live one, or one long after, fails") {
    // (the fault lanes' pause-close, threads mode: a dead grant 14 ms after the close's record)
    journal j;
    j.add("hello", "p", 0, 0, "0x1");
    j.add("acquire", "p.1", 0, 10).add("acquire", "p.2", 0, 11).add("acquire", "p.3", 0, 12);
    j.add("close", "p", 0, 20, "async_close after 0 handlers");
    j.add("dead_grant", "p.1", 7, 34, "status=lost");  // completed before the close, resumed after it
    j.add("grant", "p.2", 8, 35, "/l/n");              // a guard that still says held: a grant after the close
    j.add("dead_grant", "p.3", 9, 20 + 2'500, "status=lost");  // beyond the close's bound (2 s)
    auto r = rules(j, {});
    CHECK(r.lost_at_handover == 1);
    CHECK(r.grants_after_close == 2);
    CHECK(r.fault_failures == 2);
    CHECK(noted(r, "GRANT AFTER CLOSE: p.2 (grant) 15 ms after p's async_close after 0 handlers"));
    CHECK(noted(r, "GRANT AFTER CLOSE: p.3 (dead_grant) 2500 ms after p's async_close after 0 handlers"));
  }
  SECTION("operator-delete: the holder stops at once with node_deleted, the waiter queues again") {
    journal j;
    j.add("acquire", "a", 0, 0).add("grant", "a", 10, 1, "/l/a side=exclusive").add("write", "a", 10, 100);
    j.add("lost", "a", 10, 108, "status=lost").add("lost_cause", "a", 10, 109, "node_deleted");
    j.add("acquire", "b", 0, 2).add("grant", "b", 20, 106, "/l/b").add("end", "b", 20, 130);
    j.add("acquire", "c", 0, 3).add("grant", "c", 30, 300, "/l/c2");
    auto r = rules(j, {}, {{"/l/a", "a", true, 100 * ms}, {"/l/c", "c", false, 120 * ms}});
    CHECK(r.injected == 2);
    CHECK(r.fault_waits == 2);  // a's section, c's wait
    CHECK(r.fault_failures == 0);
    CHECK(r.worst_fail_ms == Approx(8));
    // the overlap count: a's section is over at the deletion, b's grant after it is not an overlap
    run_result o;
    check(o, j.sorted(), {}, kinds, bound, 1'000 * ms, {}, {{"/l/a", "a", true, 100 * ms}});
    CHECK(o.overlaps == 0);
    CHECK(o.overlaps_ended == 1);
    run_result without;
    check(without, j.sorted(), {}, kinds, bound, 1'000 * ms);
    CHECK(without.overlaps == 1);
  }
  SECTION("operator-delete: a holder that writes on, one lost for another cause, a waiter that fails") {
    journal j;
    j.add("acquire", "a", 0, 0).add("grant", "a", 10, 1, "/l/a").add("write", "a", 10, 900);
    j.add("acquire", "b", 0, 0).add("grant", "b", 20, 1'000, "/l/b").add("lost", "b", 20, 1'010, "status=lost");
    j.add("lost_cause", "b", 20, 1'011, "deadline_passed");
    j.add("acquire", "c", 0, 3).add("acquire_error", "c", 0, 1'200, "'no node'");
    auto r = rules(j, {}, {{"/l/a", "a", true, 100 * ms}, {"/l/b", "b", true, 1'005 * ms}, {"/l/c", "c", false, 1'100 * ms}});
    CHECK(r.fault_failures == 3);
    CHECK(noted(r, "OPERATOR-DELETE: a (token 10) wrote on for 800 ms after its node /l/a was deleted"));
    CHECK(noted(r, "OPERATOR-DELETE: b (token 20) lost its lock with cause 'deadline_passed', not node_deleted"));
    CHECK(noted(r, "OPERATOR-DELETE: c's acquire failed ('no node') 100 ms after its node /l/c was deleted"));
  }
}

TEST_CASE("fault rules: a closed session's holder is no holder after the close", "[fault][checker]") {
  // p.1 held when its owner destroyed the session; its lost report came late (the thread was
  // blocked in the destroy), after q's grant: not an overlap, but counted as ended-ovl
  journal j;
  j.add("hello", "p", 0, 0, "0x1");
  j.add("acquire", "p.1", 0, 1).add("grant", "p.1", 10, 2, "/l/p").add("write", "p.1", 10, 12);
  j.add("close", "p", 0, 15, "destroy after 9 handlers");
  j.add("acquire", "q", 0, 3).add("grant", "q", 20, 40, "/l/q").add("end", "q", 20, 60);
  j.add("lost", "p.1", 10, 45, "status=lost");
  run_result r;
  check(r, j.sorted(), {}, kinds, bound, 1'000 * ms);
  CHECK(r.overlaps == 0);
  CHECK(r.overlaps_ended == 1);
  journal k = j;
  k.v.erase(std::remove_if(k.v.begin(), k.v.end(), [](auto& x) { return x.kind == "close"; }), k.v.end());
  run_result without;
  check(without, k.sorted(), {}, kinds, bound, 1'000 * ms);
  CHECK(without.overlaps == 1);
}

TEST_CASE("fault rules: a deleted holder's in-flight write, accepted before its successor's first message", "[fault][checker]") {
  // a's node deleted at 100; a writes at 104 (received 106), b granted at 105 (received 107):
  // only the fencing check could have stopped a's write, and it was not late for it
  journal j;
  j.add("acquire", "a", 0, 0).add("grant", "a", 10, 1, "/l/a").add("write", "a", 10, 90);
  j.add("write", "a", 10, 104, "", 1, 106).add("lost", "a", 10, 108, "status=lost");
  j.add("acquire", "b", 0, 2).add("grant", "b", 20, 105, "/l/b", 1, 107).add("end", "b", 20, 130);
  run_result r;
  check(r, j.sorted(), {}, kinds, bound, 1'000 * ms, {}, {{"/l/a", "a", true, 100 * ms}});
  CHECK(r.stale_accepted == 0);
  CHECK(r.stale_after_taken == 1);
  CHECK(r.overlaps == 0);
  run_result without;
  check(without, j.sorted(), {}, kinds, bound, 1'000 * ms);
  CHECK(without.stale_accepted == 1);
}
