// The harness's child processes: the clients (zklock_fault_worker, CuratorWorker, kazoo_worker),
// `zklock exec` in the partition window; spawned with PR_SET_PDEATHSIG, reaped, ended.
#pragma once

#include "options.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace zklock::fault {

// One child process. A child not yet reaped when it goes out of scope (a run ended by an
// exception: a member that would not start again) is killed (SIGKILL) and reaped: no client
// outlives its run.
struct child {
  std::string who, kind;  // kind: zklock, curator, kazoo, exec
  pid_t pid = -1;
  int status = -1;  // wait status once reaped
  bool reaped = false;

  child() = default;
  child(child&& o) noexcept;
  ~child();
};

// fork + exec with PR_SET_PDEATHSIG (SIGKILL): a client never outlives the harness. Called from
// the main thread only (PDEATHSIG follows the forking thread).
pid_t spawn(const std::vector<std::string>& args, const std::string& log, const std::string& cwd = "");
// Waits up to `wait` for the child to exit; true once reaped (or gone).
bool reap(child& c, std::chrono::milliseconds wait);
// SIGCONT + SIGTERM, SIGKILL after `grace`.
void end_child(child& c, std::chrono::milliseconds grace);
// /proc/PID/stat's state letter ('T': stopped), '?' if unknown.
char proc_state(pid_t pid);
long rss_kb(pid_t pid);
// Polls a pidfd until the process exits: 1 when it did, 0 on timeout, -1 on error.
int wait_pidfd(pid_t pid, std::chrono::milliseconds bound);

// The command line of a client of `kind` (zklock, zklock-lib, curator, kazoo). `worker_args`:
// zklock_fault_worker's optional trailing arguments (its recipe, then its options).
std::vector<std::string> client_command(const std::string& kind, const options& o, std::uint16_t res_port,
                                        const std::string& connect, const std::string& path, const std::string& who,
                                        const std::string& mode, int session_timeout_ms,
                                        const std::vector<std::string>& worker_args = {});

}  // namespace zklock::fault
