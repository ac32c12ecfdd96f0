// What one acquire asks for: the recipes' public classes fill it, the lock runner and the lock
// state machine read it. No Asio here: src/sansio includes it.
#pragma once

#include <zklock/types.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace zklock::detail {

/// Wait in the queue, or give up when blocked (a try-lock: looks before it writes; or, when
/// its caller has just looked itself with acquire_fsm::probe, writes at once: the semaphore's
/// lease after its internal mutex).
enum class lock_mode { wait, try_once, try_after_probe };

struct acquire_params {
  lock_mode mode = lock_mode::wait;
  lock_kind kind = lock_kind::exclusive;
  /// Gives up with errc::lock_timeout after this long (max: never).
  std::chrono::steady_clock::duration timeout = std::chrono::steady_clock::duration::max();
  /// Reentrant acquire: this owner gets another guard on its hold when it holds already.
  std::optional<owner_id> owner = std::nullopt;
  /// What our node is created with instead of the lock's marker (acquire_fsm::node_data): set
  /// by start_acquire to the marker and the lock dir's identity ("zklock/3 web-1:4242"); an
  /// election passes its participant id.
  std::optional<std::string> node_data = std::nullopt;
};

}  // namespace zklock::detail
