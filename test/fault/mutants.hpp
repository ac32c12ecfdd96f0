// The workers' mutants: deliberately broken uses of the library, one rule broken each, switched
// on by the harness's --mutant NAME (the worker's "mutant:NAME" option; never in the library's
// build). The checker must catch each (docs/RELIABILITY.md, "Mutants").
#pragma once

#include <string>
#include <vector>

namespace zklock::fault {

struct mutant_info {
  std::string name, recipe, breaks;
};

inline const std::vector<mutant_info>& mutants() {
  static const std::vector<mutant_info> v = {
      {"ignore-lost", "mutex",
       "keeps writing after its guard's validity passed (lock_lost) and after a resource refused it"},
      {"leader-keeps-leading", "election",
       "a leader keeps writing after its leadership's validity passed and after a resource refused it"},
      {"local-ignore-lost", "local-queue",
       "a coroutine keeps writing after its guard's validity passed and after a resource refused it"},
      {"leak-release", "mutex", "says it released but keeps the guard: its node is never deleted"},
      {"read-as-write", "shared", "takes the read side for sections it uses as a writer's"},
      {"timeout-as-grant", "semaphore", "an acquire whose 5 ms deadline passed writes as if it held a lease"},
      {"skip-lock-delay", "mutex",
       "takes the lock with lock-delay 0 while the run's lock-delay is on (2 session timeouts unless --lock-delay)"},
      {"grant-on-any-predecessor", "mutex",
       "a lock of its own on the session's requests that grants on the deletion of any node ahead, not the last"},
      {"data-change-as-grant", "mutex",
       "a lock of its own on the session's requests that grants when the node ahead's data changes"},
  };
  return v;
}

}  // namespace zklock::fault
