// The checker: replays the fenced resource's journal (journal.hpp) of one run and counts what
// broke the recipe's property: overlapping sections (apart from those behind a paused holder),
// stale writes accepted or rejected by the fencing check, stuck waiters, and the grant delays.
// No I/O: checker_test.cpp feeds it synthetic journals.
#pragma once

#include "journal.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zklock::fault {

struct run_result {
  std::string scenario;
  int run = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> faults;  // what the nemesis did
  int acquisitions = 0;
  int overlaps = 0;          // real-time overlaps of critical sections, not explained by a pause
  int overlaps_paused = 0;   // overlaps where the earlier holder was paused (SIGSTOP)
  int stale_accepted = 0;    // writes by a holder after a newer holder was granted, accepted
  int stale_rejected = 0;    // the same, rejected by the fencing check
  int writes = 0;
  double max_grant_delay_ms = 0;  // lock free (released) -> next grant
  double max_wait_ms = 0;
  int stuck = 0;
  int nodes_left = -1;
  int watches_left = -1;
  long rss_before_kb = 0, rss_after_kb = 0;  // sum over the zklock clients
  int lost = 0;           // sections ended by a lost lock
  int dead_grants = 0;     // guards handed out already past their validity deadline
  int peer_leftovers = 0;  // nodes and watches left by Curator / kazoo clients
  int self_pauses = 0;      // holders stopped between their check and their write
  int foreign_writes = 0;   // foreign-write: setData calls by the nemesis session on lock nodes
  int user_socket_stalls = 0;  // storm: a user socket on a worker's io_context went unanswered
  int worker_failures = 0;
  // shared: write sections; reader pairs that overlapped (the read side really shared)
  int write_sections = 0;
  int reader_overlaps = 0;
  // semaphore: most sections at once (holders paused during theirs not counted), grants that
  // made it N, writes that reached the resource while N other sections were open
  int max_concurrent = 0;
  int at_capacity = 0;
  int over_capacity_writes = 0;
  // local-queue: overlaps (of `overlaps`) between two coroutines of one process; the fairness
  // bound (see recipe_rule::max_local_handoffs): the most grants one node of a process made,
  // while a waiter of another process waited, after its session's child watch had reported a
  // change (fair_max), and the nodes past the bound (fairness_violations); the most grants of
  // one other process during one wait, however made (wait_grants_max: reported only)
  int overlaps_within = 0;
  int fair_max = 0;
  int fairness_violations = 0;
  int wait_grants_max = 0;
  // ensemble-gone, local-close, operator-delete: each fault's own rule (check_fault_rules)
  int injected = 0;          // outages, session closes, node deletions that happened
  int fault_waits = 0;       // waits and sections the rule followed
  int fault_failures = 0;    // of those, the ones that broke the rule (must be 0)
  double worst_fail_ms = 0;  // the slowest failure or loss it expected, ms after the fault
  int grants_after_close = 0;   // local-close: acquires that succeeded after their session's close (must be 0)
  // local-close: grants already on their way to their handler when the session closed, handed
  // over lost (a dead grant, status=lost, within the close's bound): not used, and not a grant
  // after the close (the library's contract; see check_fault_rules)
  int lost_at_handover = 0;
  // pause-close: the slowest async_close, and the closing process's probe session's worst
  // stall (its timer's lateness or its session_id() call) during a close, ms
  double close_ms = 0;
  double close_stall_ms = 0;
  // operator-delete, local-close: overlaps with a holder after its node was deleted or its
  // session closed by its owner (reported; its writes after that are the fencing check's)
  int overlaps_ended = 0;
  // writes such a holder sent after its node was deleted (its session closed) that reached the
  // resource after its successor's grant but before the successor's first message, so accepted
  // (reported, not stale-acc: nothing could stop them but the fencing check)
  int stale_after_taken = 0;
  // the history's models (models.hpp): violations (must be 0), the first one's rule, the
  // znode writes acknowledged (its lost-update check's material)
  int model_violations = 0;
  std::string first_violation;
  int znode_writes = 0;
  // grants (sections handed out) before the nemesis's first fault, from it to the heal, and from
  // the heal to the clients' stop: the material each fault's checks had (run.cpp)
  int grants_before = 0, grants_during = 0, grants_after = 0;
  std::string phases;  // the run's phases, ms each (run.cpp), for the report
  std::vector<std::string> notes;
  std::map<std::string, int> per_kind_overlaps;  // earlier holder's kind -> unexplained overlaps
  bool zklock_ok() const {
    return overlaps == 0 && stale_accepted == 0 && stuck == 0 && nodes_left == 0 && watches_left == 0 &&
           worker_failures == 0 && user_socket_stalls == 0 && fairness_violations == 0 && fault_failures == 0 &&
           model_violations == 0;
  }
};

struct pause_interval {
  std::string who;
  std::int64_t from = 0, to = 0;
};

// ensemble-gone: servers going down from `down` (the first kill), every one gone from `gone`
// (the last kill returned: the member was reaped; 0: at `down`), until `up` (serving again). A
// client whose server is killed last keeps its session until then: its session timeout runs
// from `gone` (a kill of a JVM took up to a second on a loaded machine).
struct outage {
  std::int64_t down = 0, up = 0, gone = 0;
};

// operator-delete: another session deleted a contender's `node` (its full path) at `at`; `who`
// owned it (its session's "hello"; "" if unknown); `holder`: the nemesis deleted the node of a
// section it had just seen granted, else a node queued behind it.
struct node_deletion {
  std::string node, who;
  bool holder = false;
  std::int64_t at = 0;
};

// The bounds the fault rules check (check_fault_rules), from the session timeout T.
struct fault_bounds {
  std::int64_t session_timeout_ns = 0;
  // ensemble-gone: every acquire waiting (and every section held) while no server served ends
  // by the outage's start + T + this: the local expiry fires T after the connection was lost,
  // which is the last kill at the latest; the margin covers the three kills, the timer firing
  // late on a loaded machine and the report
  std::int64_t outage_margin_ns = 1'000'000'000;
  // operator-delete: a holder whose node was deleted reports lost (cause node_deleted) by then:
  // "at once", from its own node's watch (a keepalive, every T/3, would miss it)
  std::int64_t deleted_holder_ns() const { return session_timeout_ns / 4; }
  // local-close: every acquire waiting on a closed (destroyed) session fails by then
  std::int64_t close_ns() const { return session_timeout_ns; }
  // threads mode: an acquire ended by the worker's own deadline (acquire || timer, reported
  // "deadline=MS") ends by its invoke + the deadline + this: the library answers a cancellation
  // at once, without waiting for a server (one that waited for the outage would end at the
  // session's expiry)
  std::int64_t cancel_margin_ns = 500'000'000;
  // pause-close: async_close completes by the library's bound against a server that does not
  // answer (1 s, session.hpp) + outage_margin_ns; while sessions close, the closing process's
  // probe session (idle, on another strand) is never stalled (its 5 ms timer late, or its
  // session_id() call, which takes the C client's lock of the process) longer than
  // stall_bound_ns: a close that blocked the thread or held that lock over its wait stalled
  // everything 1.5 s per close; a loaded 2-core machine's timers are late by up to about 100 ms
  std::int64_t close_bound_ns = 1'000'000'000;
  std::int64_t stall_bound_ns = 500'000'000;
};

struct section {
  std::string who;
  std::string node;  // the guard's node_path(), from the grant (zklock clients)
  std::string side = "exclusive";  // exclusive, read, write, lease
  std::int64_t token = 0;
  std::int64_t acquired_at = 0;  // its acquire (the last before the grant)
  std::int64_t start = 0, end = 0;
  bool released_ok = false;
  std::int64_t released_at = 0;
  bool lost = false;
  std::int64_t child_events = -1;  // local-queue: the session's child watch events at the grant ("ev=N")
  // when the lock was taken from it while it held: another session deleted its node
  // (operator-delete), or its owner closed or destroyed its session (local-close)
  std::int64_t taken_at = 0;
  // the end that counts for overlaps: a holder's section is over once its lock was taken (the
  // lock is the successor's from then on; its late writes are the fencing check's)
  std::int64_t effective_end() const { return taken_at ? std::min(end, taken_at) : end; }
};

// What the recipe lets hold together: the mutex (and the election, and the local-queue mutex)
// nothing, the shared lock readers, the semaphore up to N (capacity) of anything.
//
// local-queue also checks the fairness bound (mutex_options::max_local_handoffs, > 0 here). A
// node of a process grants at most max_local_handoffs local holders unless a listing made while
// it held showed nobody else queued, and a child watch event makes that listing stale (every
// such event costs it the exemption until the next listing). So while a waiter of another
// process Q waits, the grants of one node of a process P that came after P's session got a
// child watch event (the worker sends its session's count with each grant, "ev=N"; counted
// from the node's first grant within the wait) are at most max_local_handoffs - 1 in the
// implementation; more than max_local_handoffs is a violation (one grant of slack).
// Conservative: an event about a third process's node counts too, and while P's connection
// is down no event arrives, so nothing is counted.
struct recipe_rule {
  std::string recipe = "mutex";
  int capacity = 1;
  int max_local_handoffs = 0;  // local-queue: the fairness bound to check (0: not checked)
  bool conflict(const section& a, const section& b) const {
    return recipe != "shared" || !is_reader(a.side) || !is_reader(b.side);
  }
};

// The longest wait for a grant while the lock (a lease) was free, for the shared lock and the
// semaphore: from the moment fewer than `capacity` conflicting sections started before this one
// were held (a holder's successful release; or this one's acquire, if later) to its grant.
// Grants that followed a holder's loss (no release seen) are not counted, as for the mutex.
// The semaphore's grants go one at a time through its internal mutex (FIFO): a waiter behind
// another waits for that one's grant too, so its wait counts from the previous grant at the
// earliest.

// An acquire's wait: from its "acquire" to its grant, failure or idle report (or the run's end).
struct wait_interval {
  std::string who;
  std::int64_t from = 0, to = 0;
};

// local-queue's fairness bound, see recipe_rule (checker.cpp).
void check_fairness(run_result& r, const std::vector<section>& v, const std::vector<wait_interval>& waits,
                    int max_local_handoffs);

// The longest wait for a grant while the lock (a lease) was free, for the shared lock and the
// semaphore (see checker.cpp).
double max_free_grant_delay_ms(const std::vector<section>& v, const recipe_rule& rule);

// Fills r's counts and notes from the journal `j`. `pauses`: when which holder was stopped
// (overlaps behind them are counted apart); `kind_of`: who -> client kind (zklock, curator,
// kazoo), for the per-kind overlap counts; a wait longer than `stuck_bound_ns`, or still open
// at `t_end` past it, is a stuck waiter.
// `deletions`: operator-delete's, whose holders' sections end for the overlap count at the
// deletion (as a closed session's do at the worker's "close").
void check(run_result& r, const std::vector<record>& j, const std::vector<pause_interval>& pauses,
           const std::map<std::string, std::string>& kind_of, std::int64_t stuck_bound_ns, std::int64_t t_end,
           const recipe_rule& rule = {}, const std::vector<node_deletion>& deletions = {});

// The rules of ensemble-gone (`outages`), local-close (the workers' "close" records) and
// operator-delete (`deletions`), counted in r's injected, fault_waits, fault_failures,
// worst_fail_ms, grants_after_close, with a note per failure:
//  - outage: every acquire waiting at some moment of [down, up) fails with an expiry, and every
//    section open at `down` ends, by down + T + outage_margin;
//  - close: no acquire of the closed session's contenders succeeds between the close and their
//    next session's hello; every acquire of theirs waiting then fails by close_ns. A grant whose
//    completion was already queued when the close was taken still reaches its handler, with a
//    guard that says lost (as an Asio operation that completed before its cancel reports
//    success; integration test "a grant racing async_close at every step never hands out an
//    owning guard"): a dead grant with status=lost within close_ns of the close is that
//    (lost_at_handover), not a failure; any other grant then is one;
//  - a close's "closed" report (pause-close): async_close took at most close_bound_ns +
//    outage_margin_ns, and the probe was stalled at most stall_bound_ns;
//  - an acquire the worker's own deadline ended ("deadline=MS", threads mode) is the user's
//    cancellation, not a failure the outage or the deletion made: not judged as one, but it
//    must end by its invoke + MS + cancel_margin_ns;
//  - deletion: a holder's section ends with "lost" by deleted_holder_ns and its "lost_cause" is
//    node_deleted; no wait of the node's owner that spans the deletion fails (it queues again).
void check_fault_rules(run_result& r, const std::vector<record>& j, const std::vector<outage>& outages,
                       const std::vector<node_deletion>& deletions, const fault_bounds& b, std::int64_t t_end);

}  // namespace zklock::fault
