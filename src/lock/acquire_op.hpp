// The lock runner: one acquire, carried out. It feeds acquire_fsm (src/sansio/acquire_fsm.hpp) the
// replies, watch events, session changes, the timeout and cancellation, and carries out the
// requests it asks for on the session. Every recipe's acquire step goes through it.
#pragma once

#include "lock/lock_dir.hpp"

#include <zklock/detail/acquire_params.hpp>
#include <zklock/detail/pending.hpp>
#include <zklock/lock_guard.hpp>

#include <memory>

namespace zklock::detail {

/// Runs one acquire of `dir` for `op` (validated by start_acquire: path, session state).
void run_acquire(std::shared_ptr<lock_dir> dir, pending<void(error_code, lock_guard)>::ptr op, acquire_params p);

}  // namespace zklock::detail
