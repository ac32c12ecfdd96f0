// What the recipes made of several acquires share (the semaphore's two steps, a multi_lock's
// locks): one deadline across the steps, and cancellation forwarded to the step under way.
#pragma once

#include "engine/hooks.hpp"
#include "lock/lock_dir.hpp"

#include <zklock/detail/pending.hpp>
#include <zklock/mutex.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>
#include <chrono>
#include <memory>

namespace zklock::detail {

// Cancellation is forwarded to the step under way, whose own cleanup runs before it completes.
template <class Derived, class Result>
class chained_acquire : public std::enable_shared_from_this<Derived> {
 public:
  chained_acquire(typename pending<void(error_code, Result)>::ptr op, std::chrono::steady_clock::duration timeout)
      : op_(std::move(op)) {
    if (timeout != std::chrono::steady_clock::duration::max()) deadline_ = std::chrono::steady_clock::now() + timeout;
  }

 protected:
  void forward_cancellation() {
    cancel_ = cancel_hook(op_, this->weak_from_this(), [](chained_acquire& self, asio::cancellation_type t) {
      self.cancelled_ = true;
      self.cancel_type_ = t;
      self.inner_.emit(t);
    });
  }
  std::chrono::steady_clock::duration remaining() const {
    if (deadline_ == std::chrono::steady_clock::time_point::max()) return std::chrono::steady_clock::duration::max();
    return std::max(deadline_ - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
  }
  // The next step: acquire `state` with `kind`, bound to our inner cancellation signal.
  template <class F>
  void step(const std::shared_ptr<lock_dir>& dir, lock_mode mode, lock_kind kind, F on_done) {
    start_acquire(dir,
                  asio::bind_cancellation_slot(inner_.slot(),
                                               [self = this->shared_from_this(), on_done](error_code ec, lock_guard g) {
                                                 (static_cast<Derived&>(*self).*on_done)(ec, std::move(g));
                                               }),
                  {.mode = mode, .kind = kind, .timeout = remaining()});
  }

  typename pending<void(error_code, Result)>::ptr op_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  asio::cancellation_signal inner_;
  bool cancelled_ = false;
  asio::cancellation_type cancel_type_ = asio::cancellation_type::none;  // what cancelled_ was
  cancel_hook<pending<void(error_code, Result)>> cancel_;  // forward_cancellation
};

}  // namespace zklock::detail
