// A lock dir as one recipe object sees it (a mutex, a shared_mutex, a semaphore's two dirs, a
// multi_lock's entries): its path, its session, and the reentrant owner's hold. Acquires start
// here (start_acquire, lock_dir.cpp); the runner that carries them out is acquire_op.hpp.
#pragma once

#include "engine/session_impl.hpp"

#include <zklock/detail/acquire_params.hpp>
#include <zklock/mutex.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace zklock::detail {

class hold;
class local_queue;

/// Reentrancy (async_acquire with an owner_id), the one rule for every lock object (a lock
/// dir, a mutex's local queue): the owner that holds through it now gets another guard on its
/// hold while that still holds; a read hold is never made a write hold (the write would wait
/// behind our own read; a write hold covers reading, as Curator's reentrant read-under-write).
struct reentrant_hold {
  std::weak_ptr<hold> held;
  std::optional<owner_id> owner;  // empty: held by an acquire without an owner

  /// Completes `op` when `p`'s owner holds here already (another guard, or
  /// errc::upgrade_refused); false when the acquire goes on.
  bool reenter(const acquire_params& p, const pending<void(error_code, lock_guard)>::ptr& op);
};

struct lock_dir {
  std::shared_ptr<session_impl> s;
  std::string path;
  error_code path_error;  // reported by every operation; nothing is sent
  reentrant_hold owned;  // the hold currently owned through this object by a named owner
  int max_leases = 1;  // lock_kind::lease: how many hold at once (a semaphore's leases dir)
  int max_watched = mutex_options{}.watched_blockers;  // mutex_options::watched_blockers (K): blockers a waiter watches at once
  // Our node watched from its create on, waiting and holding (acquire_fsm::set_watch_own_node);
  // off only for the semaphore's internal mutex (src/recipes/semaphore.cpp says why)
  bool watch_own_node = true;
  std::string identity;  // after the marker in our nodes' data (session_options::identity by default)
  // mutex_options::local_queue: every acquire goes to the local queue (src/lock/local_queue.hpp)
  std::shared_ptr<local_queue> local;
  lock_metering metering = lock_metering::full;  // what its acquires count (src/engine/lock_metrics.hpp)
  std::chrono::milliseconds lock_delay{0};  // mutex_options::lock_delay
  std::int64_t beacon_session = 0;  // the session whose lock-delay beacon was created (acquire_fsm.hpp)
};

}  // namespace zklock::detail
