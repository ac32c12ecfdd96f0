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
  std::vector<std::string> notes;
  std::map<std::string, int> per_kind_overlaps;  // earlier holder's kind -> unexplained overlaps
  bool zklock_ok() const {
    return overlaps == 0 && stale_accepted == 0 && stuck == 0 && nodes_left == 0 && watches_left == 0 &&
           worker_failures == 0 && user_socket_stalls == 0 && fairness_violations == 0;
  }
};

struct pause_interval {
  std::string who;
  std::int64_t from = 0, to = 0;
};

struct section {
  std::string who;
  std::string side = "exclusive";  // exclusive, read, write, lease
  std::int64_t token = 0;
  std::int64_t acquired_at = 0;  // its acquire (the last before the grant)
  std::int64_t start = 0, end = 0;
  bool released_ok = false;
  std::int64_t released_at = 0;
  bool lost = false;
  std::int64_t child_events = -1;  // local-queue: the session's child watch events at the grant ("ev=N")
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
void check(run_result& r, const std::vector<record>& j, const std::vector<pause_interval>& pauses,
           const std::map<std::string, std::string>& kind_of, std::int64_t stuck_bound_ns, std::int64_t t_end,
           const recipe_rule& rule = {});

}  // namespace zklock::fault
