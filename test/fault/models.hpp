// The models a run's history (history.hpp) is checked against, one per recipe and one per
// guarded resource, and liveness after the heal (docs/RELIABILITY.md, "Models"). No I/O:
// checker_test.cpp feeds each rule a hand-made violating history and a good one.
#pragma once

#include "history.hpp"

#include <string>
#include <vector>

namespace zklock::fault {

struct violation {
  std::string rule;  // "exclusion", "token-order", "permits", "acted-after-lost", ...
  std::string what;  // operation ids, times, tokens
};

// Every rule of the run's recipe, in this order; empty when every model holds.
//  exclusion (mutex, election, local-queue; shared: a writer against anyone): no two sections
//    whose holds overlap in real time, unless the earlier one lost the lock where it could not
//    see it at once: its process was stopped by the nemesis (SIGSTOP) between its grant and the
//    later one, or it was told by a notice of its own (its guard's validity passed, its guard
//    turned lost with a cause: node_deleted, session_expired, ...; a resource's refusal alone is
//    not one); it was told within T + 1 s of the later grant (its stopped time aside); and none
//    of its writes was accepted late: by the register after the later section's first accepted
//    write there, or by the znode when sent after the later section's grant;
//  token-order (the same recipes, conflicting sections): a later grant carries a higher token;
//    election: one leader per term (no two grants with one token);
//  lock-delay (the same recipes, when the run's lock-delay is on): a holder whose process the
//    nemesis stopped (SIGSTOP) for a session timeout or more while its section was open lost
//    its node with its session: no other process is granted before the stop + lock-delay
//    (less 100 ms of slack);
//  permits (semaphore): never more than N sections at once (sections told they lost their
//    lease, and sections whose holder the nemesis stopped (SIGSTOP) at the grant that overlaps
//    them, are not counted: a holder stopped past its lease writes late, and no token can
//    refuse a lease's write);
//  acted-after-lost (every recipe): no write sent after its section was told it lost the lock
//    (the worker's own check; the resource's refusal counts as told);
//  stale-write (register): an accepted write carries a token >= every token accepted before it
//    (shared: a reader's >= every writer's);
//  lost-update (znode): acknowledged increments in version order read the value the one before
//    wrote (each read-modify-write saw the last acknowledged update);
//  fenced-znode: no znode write sent after a conflicting later section's grant is accepted;
//  liveness: every acquire waiting at the heal or sent after it completes (granted or failed
//    with an error) by max(invoke, heal) + T + lock-delay + the margin (history_run), and
//    every exclusive waiter is granted (or fails) within T + lock-delay + margin of the lock
//    being free (no section holding it) while it waited;
//  fairness (local-queue): check_fairness's bound (checker.hpp).
std::vector<violation> check_models(const history& h);

}  // namespace zklock::fault
