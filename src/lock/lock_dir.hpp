// A lock dir as one recipe object sees it (a mutex, a shared_mutex, a semaphore's two dirs, a
// multi_lock's entries): its path, its session, and the reentrant owner's hold. Acquires start
// here (start_acquire, lock_dir.cpp); the runner that carries them out is acquire_op.hpp.
#pragma once

#include "engine/session_impl.hpp"

#include <zklock/mutex.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace zklock::detail {

struct hold;
class local_queue;

struct lock_dir {
  std::shared_ptr<session_impl> s;
  std::string path;
  error_code path_error;  // reported by every operation; nothing is sent
  // reentrancy: the hold currently owned through this object by a named owner
  std::weak_ptr<hold> owned;
  owner_id owner;
  int max_leases = 1;  // lock_kind::lease: how many hold at once (a semaphore's leases dir)
  int max_watched = mutex_options{}.watched_blockers;  // mutex_options::watched_blockers (K): blockers a waiter watches at once
  std::string identity;  // after the marker in our nodes' data (session_options::identity by default)
  // mutex_options::local_queue: every acquire goes to the local queue (src/lock/local_queue.hpp)
  std::shared_ptr<local_queue> local;
  lock_metering metering = lock_metering::full;  // what its acquires count (src/lock/metrics.hpp)
};

}  // namespace zklock::detail
