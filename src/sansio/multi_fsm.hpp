// multi_lock's all-or-nothing as a sans-I/O state machine: take the locks one after another
// (in the caller's order: multi_lock sorts by path), and on an error, a cancellation or the
// timeout give back every lock taken, and complete only once those releases are settled
// (acknowledged by the server, or reported pending while the connection is down), so that
// whoever runs next in the handler finds them free. It speaks request.hpp: its acquires and
// releases are notify outcomes (multi_outcome), its end request::complete. multi_lock.cpp
// carries them out (one acquire at a time, the rollback's releases together): a composed
// operation over lock runners, since what it starts are operations, not requests.
#pragma once

#include "sansio/request.hpp"

#include <zklock/error.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zklock::detail {

/// What multi_fsm asks beside its completion (request::complete): the sub-locks' acquires and
/// releases are operations of their own (lock runners), not ZooKeeper requests, so they are its
/// outcomes (request::notify, `id` the lock's index), carried out by multi_lock.cpp.
enum class multi_outcome : std::uint8_t {
  acquire,  ///< acquire lock `id` (the next one)
  release,  ///< give back lock `id` (rollback), and report on_released(id)
};

class multi_fsm {
 public:
  using actions = std::vector<sansio::request>;

  explicit multi_fsm(std::size_t count) noexcept : count_(count) {}

  actions start();
  /// The acquire under way completed: ec empty means lock `taken()` is now held.
  actions on_acquired(error_code ec);
  /// Cancellation (or the timeout, with its error) arrived. The runner also cancels the acquire
  /// under way, whose completion follows as on_acquired.
  actions cancel(error_code reason);
  /// A rollback release completed (its outcome does not change ours).
  actions on_released(std::size_t index);

  /// How many locks are held now (0..count), the first ones in order.
  std::size_t taken() const noexcept { return taken_; }
  bool done() const noexcept { return phase_ == phase::done; }

 private:
  enum class phase { idle, acquiring, rolling_back, done };
  actions roll_back(error_code ec);

  std::size_t count_;
  std::size_t taken_ = 0;
  std::size_t releases_left_ = 0;
  phase phase_ = phase::idle;
  error_code cancelled_;  // a cancellation arrived while acquiring
  error_code result_;
};

}  // namespace zklock::detail
