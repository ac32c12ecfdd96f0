// A run's history: what every client did, as operations with invoke and completion times, and
// every write to the two guarded resources (the register of resource.hpp, a ZooKeeper node
// written behind the guard's check op), as JSON lines (docs/RELIABILITY.md, "Histories").
// Built from the register's journal (journal.hpp: every client reports each step to it, with
// its own CLOCK_MONOTONIC time, the clock every process on the machine reads, and the register
// stamps what it receives with the same clock), written per run by `--history DIR`, read back
// by `--check DIR`; models.hpp checks it. No I/O but the two file functions.
#pragma once

#include "journal.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zklock::fault {

// The run's header line ("type":"run").
struct history_run {
  std::string scenario, recipe = "mutex";
  int run = 0;
  std::uint64_t seed = 0;
  int capacity = 1;            // semaphore: N leases; else 1
  int max_local_handoffs = 0;  // local-queue: the fairness bound checked (0: not checked)
  std::int64_t session_timeout_ns = 0, lock_delay_ns = 0;
  std::int64_t liveness_margin_ns = 5'000'000'000;  // see models.hpp, liveness
  std::int64_t heal_ns = 0;  // every fault healed (0: unknown; liveness not checked)
  std::int64_t end_ns = 0;   // the history's end (clients stopped)
  std::string mutant;        // the workers' mutant, "" for none
};

// An acquire ("type":"acquire"), from its invoke to its completion; its grant's section.
struct h_acquire {
  int id = 0;
  std::string process;            // the contender (WHO, or WHO.i)
  std::string side = "exclusive";  // exclusive, read, write, lease
  std::int64_t invoke_ns = 0, complete_ns = 0;  // complete_ns 0: never completed
  std::string outcome = "indeterminate";        // ok, error, indeterminate
  std::string error;                            // outcome error: the error's message
  std::int64_t token = 0;                       // ok: the grant's fencing token
  std::string node;                             // ok: the guard's node
  // ok: the section it opened: it stopped using the lock at stop_ns (its end write, its report
  // of a loss or its release; 0: never); last_write_ns its last write's invoke; told_lost_ns
  // when it was told it lost the lock (its guard's validity passed or a resource refused a
  // write; 0: never); how (the guard's status, "refused").
  std::int64_t stop_ns = 0, last_write_ns = 0, told_lost_ns = 0;
  std::string told_how;
  // ok: why its guard turned lost, as the worker reported it (async_wait_lost's cause:
  // node_deleted, session_expired, ...; "not-lost(...)" or "unknown(...)" when the guard still
  // held after a resource refused it; "" when nothing was reported; lost_cause_not_recorded in
  // a history written before the field existed)
  std::string lost_cause;
  std::int64_t child_events = -1;  // local-queue: its session's child watch events at the grant
  std::int64_t hold_end() const { return std::max(stop_ns, last_write_ns); }
};

inline const std::string lost_cause_not_recorded = "(not recorded)";

// A write to a guarded resource ("type":"write"): "register" (resource.hpp: accepts a token >=
// the highest accepted) or "znode" (a counter node: read, then set to read + 1 behind the
// guard's check op; `version` the node's version after an accepted write).
struct h_write {
  int id = 0, acquire = 0;  // acquire: the id of the section's acquire
  std::string process, resource = "register";
  std::int64_t token = 0;
  std::int64_t invoke_ns = 0, complete_ns = 0;
  std::string outcome;  // ok (accepted), refused (the fencing check), error, indeterminate
  std::string error;
  std::int64_t read = -1, value = -1, version = -1;  // znode
  bool fenced = true;                                // znode: sent behind the check op
};

// A process stopped by the nemesis (SIGSTOP, "type":"pause"): `process` the contender it
// stopped (and with it every contender of its process).
struct h_pause {
  std::string process;
  std::int64_t from_ns = 0, to_ns = 0;
};

struct history {
  history_run run;
  std::vector<h_acquire> acquires;
  std::vector<h_write> writes;
  std::vector<h_pause> pauses;
  // whether `who` (a contender) was stopped by the nemesis at `t`
  bool paused_at(const std::string& who, std::int64_t t) const {
    for (auto& p : pauses)
      if (process_of(p.process) == process_of(who) && p.from_ns <= t && t <= p.to_ns) return true;
    return false;
  }
};

// From the register's journal of one run (`run` filled by the caller).
history history_of(const std::vector<record>& j, history_run run);

// One JSON object per line: the run, then the acquires, the writes, the pauses.
void write_history(const std::string& file, const history& h);
// Throws std::runtime_error with the file and line on a malformed line.
history read_history(const std::string& file);

}  // namespace zklock::fault
