// One acquire, carried out: acquire_machine (src/sansio/acquire_machine.hpp, over acquire_fsm) on
// the one runner (runner.hpp), which feeds it the replies, watch events, session changes, the
// timeout and cancellation; the acquire's hook makes a grant a hold. Every recipe's acquire step
// goes through it.
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
