// multi_lock's all-or-nothing as a sans-I/O state machine: take the locks one after another
// (in the caller's order: multi_lock sorts by path), and on an error, a cancellation or the
// timeout give back every lock taken, and complete only once those releases are settled
// (acknowledged by the server, or reported pending while the connection is down), so that
// whoever runs next in the handler finds them free. The runner (src/recipes/multi_lock.cpp)
// carries out the actions: one acquire at a time, the rollback's releases together.
#pragma once

#include <zklock/error.hpp>

#include <cstddef>
#include <vector>

namespace zklock::detail {

struct multi_action {
  enum kind {
    acquire,   ///< acquire lock `index` (the next one)
    release,   ///< give back lock `index` (rollback), and report on_released(index)
    complete,  ///< the operation is over with `ec`; when ec is empty every lock is held
  };
  kind type;
  std::size_t index = 0;
  error_code ec;
};

class multi_fsm {
 public:
  using actions = std::vector<multi_action>;

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
