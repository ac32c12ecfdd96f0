// The harness's command line (CLI11). Every flag keeps the name and meaning it had when argv
// was parsed by hand: ctest (CMakeLists.txt) and docs/RELIABILITY.md call them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zklock::fault {

struct options {
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::vector<std::string> peers;  // --interop: curator, kazoo or both
  bool interop = false;
  std::vector<std::string> scenarios;
  int runs = 1;
  int faults = 1;
  int clients = 3;
  int session_timeout_ms = 3000;
  int hold_ms = 20;
  int stuck_bound_ms = 0;  // 0: 5 session timeouts + 10 s
  std::string work;
  bool keep = false;
  std::string json;
  std::string window;  // zklock, curator, kazoo, all
  int window_runs = 3;
  int window_session_timeout_ms = 6000;
  std::string recipe = "mutex";  // mutex, shared (zklock::shared_mutex), semaphore
  int leases = 2;                // semaphore: max_leases
  int write_percent = 30;        // shared: the share of acquisitions taking the write side
  int coroutines = 8;            // local-queue: coroutines per worker process on one mutex object
  int max_local_handoffs = 1;    // local-queue: mutex_options::max_local_handoffs
  std::string history;           // DIR: each run's history (history.hpp), one JSON-lines file per run
  std::string check;             // DIR: check the histories recorded there (no servers), then exit
  std::string mutant;            // the workers' mutant (mutants.hpp), "" for none
  bool list_mutants = false;
  int threads = 1;               // the zklock workers' io_context threads (threads mode when > 1)
  int lock_delay_ms = -1;        // the zklock workers' mutex_options::lock_delay (mutex); -1: 0, or 2 T for skip-lock-delay
  std::string caught_by;         // --pass with --mutant: the model whose catch comes first
  std::vector<std::string> passes;  // --pass=ARGS, each a pass with these options on one ensemble
  // a run's waits around its faults (run.cpp): "long" 300 ms after the warm-up, 200-1000 ms
  // before each fault, 1 s after the heal; "short" 100 ms, 100-400 ms, and after the heal until
  // every client was granted again (at least 250 ms, at most a session timeout + 1 s)
  std::string waits = "long";
};

// The scenario lists, built from the nemesis's table of faults (nemesis.cpp):
// the default set (no --scenarios), which the short CI pass runs, and "mixed";
extern const std::vector<std::string> all_scenarios;
// the faults run only when named (--scenarios; "--scenarios every" runs both lists): see
// docs/RELIABILITY.md;
extern const std::vector<std::string> extra_scenarios;
// what "mixed" draws from (the seeded draw indexes this list).
extern const std::vector<std::string> fault_kinds;

std::vector<std::string> split(const std::string& s, char sep);

// Parses argv into `o`. Returns -1 to go on, else the exit status (0 after --help, 2 on a
// usage error, with a message on stderr).
int parse_options(int argc, char** argv, options& o);

// The options of one --pass: argv's but its --pass options, then the pass's own ARGS (split at
// spaces; the later of an option given twice wins). Returns as parse_options.
int parse_pass(int argc, char** argv, const std::string& pass, options& o);

}  // namespace zklock::fault
