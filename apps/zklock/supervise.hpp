// Supervising the command while the lock is held: signals passed on, the child reaped, and the
// command stopped before the lock can be lost.
#pragma once

#include "child.hpp"
#include "common.hpp"

#include <zklock/lock_guard.hpp>
#include <zklock/session.hpp>

#include <sys/types.h>

namespace zklock_cli {

struct supervised_exit {
  int wstatus = 0;        // the command's wait status
  bool lost = false;      // the command was terminated for the lock's sake: exit 76
  bool max_hold = false;  // --max-hold ran out (the command was told to stop): exit 77
};

// Runs until the command `pid` has exited. The lock's validity deadline (the server cannot
// expire our session before it) is kept ahead by the library while ZooKeeper answers. If it
// answers no more, the command gets SIGTERM --kill-grace before the deadline (at most 2/5 of
// the session timeout) and SIGKILL when the guard turns lost (at the deadline), so it is gone
// before any successor can be granted; a reply that moves the deadline on meanwhile spares it.
// A loss seen first (the session expired, our node deleted) gets SIGTERM and, after
// --kill-grace, SIGKILL. --max-hold after the lock was granted: SIGTERM, and SIGKILL after
// the grace. Signals zklock catches go to `child.pid` (our init passes them on in a PID
// namespace). Once the command has exited, whatever it left running is killed.
// Why the lock was lost, from errc::lock_lost's cause: "our node was deleted (...)", "session expired", ...
std::string lost_reason(const zklock::session& s, const error_code& ec);

asio::awaitable<supervised_exit> supervise(zklock::session& s, zklock::lock_guard& guard, const started_command& child,
                                           const exec_options& o, asio::signal_set& sigs);

}  // namespace zklock_cli
