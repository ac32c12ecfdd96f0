// What <zklock/lock_guard.hpp> needs from the library's internals: the hold a guard owns (only
// declared: src/lock/hold.hpp), the release ticket, and the hold's operations its templates call.
#pragma once

#include <zklock/detail/pending.hpp>
#include <zklock/detail/rebind.hpp>
#include <zklock/detail/session_ops.hpp>
#include <zklock/export.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace zklock::detail {

class hold;

/// The right to give back one hold, taken from a guard by async_release. Launched, it
/// releases; destroyed unlaunched (a deferred release never awaited), it releases in the
/// background. Either way exactly once, whatever became of the guard meanwhile.
class ZKLOCK_API release_ticket {
 public:
  release_ticket(std::shared_ptr<hold> h, asio::any_io_executor ex) noexcept : hold_(std::move(h)), ex_(std::move(ex)) {}
  release_ticket(release_ticket&& o) noexcept = default;
  release_ticket& operator=(release_ticket&&) = delete;
  ~release_ticket();
  void launch(void_handler h);

 private:
  std::shared_ptr<hold> hold_;  // null once launched, or for an empty or released guard
  asio::any_io_executor ex_;    // the guard's (empty for a default-constructed guard)
};
ZKLOCK_API void wait_lost(const std::shared_ptr<hold>& h, void_handler handler);
ZKLOCK_API void wait_deadline(const std::shared_ptr<hold>& h, std::chrono::steady_clock::duration lead, void_handler handler);
ZKLOCK_API void downgrade(const std::shared_ptr<hold>& h, void_handler handler);
ZKLOCK_API void wait_revoked(const std::shared_ptr<hold>& h, void_handler handler);
/// Launches every ticket; completes `h` once all are done, with the most telling error
/// (lock_lost, then release_pending, then any other).
ZKLOCK_API void release_all(std::vector<release_ticket> tickets, asio::any_io_executor ex, void_handler h);

}  // namespace zklock::detail
