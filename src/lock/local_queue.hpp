// The two-level lock's runner (mutex_options::local_queue): carries out local_queue_fsm
// (src/sansio/local_queue_fsm.hpp). The acquires of one mutex object wait here; the node they
// share is acquired by the ordinary lock runner (start_acquire on a plain lock dir, so its
// guard, hold, lost-tracking and release are the mutex's own), and each local grant is a
// "local hold" (hold::local) on that node with its own fencing token.
#pragma once

#include "lock/lock_dir.hpp"

#include <zklock/detail/acquire_params.hpp>
#include <zklock/detail/pending.hpp>
#include <zklock/lock_guard.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace zklock::detail {

class local_queue;

/// `node_dir`: how the queue's node is acquired (a plain lock dir with the mutex's options:
/// identity, watched_blockers, lock_delay); its session is the queue's.
std::shared_ptr<local_queue> make_local_queue(std::shared_ptr<lock_dir> node_dir, int max_local_handoffs);
/// One acquire through a local-queue mutex (path validated by start_acquire).
void start_local_acquire(const std::shared_ptr<local_queue>& q, pending<void(error_code, lock_guard)>::ptr op,
                         acquire_params p);

/// The last release of a local hold of `q` (hold::release_one; `op` may be empty): a local
/// handoff to the next local waiter (nothing sent), or the node's release when none may have it.
void release_local_hold(local_queue& q, const std::shared_ptr<hold>& h, pending<void(error_code)>::ptr op);

/// A local holder's fencing token: the node's czxid in the high 48 bits, the local generation
/// (0 for the node's first holder) in the low 16 (see mutex_options).
constexpr std::int64_t local_fencing_token(std::int64_t czxid, std::uint32_t generation) noexcept {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(czxid) << 16) | (generation & 0xffffu));
}

}  // namespace zklock::detail
