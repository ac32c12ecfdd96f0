// A pending asynchronous operation: a type-erased handler plus its cancellation wiring.
// Completion always goes through asio::post (never inline from the initiating function, never
// inside zookeeper_process), on the handler's associated executor.
#pragma once

#include <zklock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <functional>
#include <utility>

namespace zklock::detail {

namespace asio = boost::asio;

/// Completes `h` with `args` later, never inline: posts to `ex` (the session's executor), and
/// from there the handler runs on its associated executor (asio::post's rule), whose
/// outstanding work is counted until then. An empty `ex` (a default-constructed guard has no
/// executor of its own) posts through the system executor.
template <class Handler, class... Args>
void post_completion(const asio::any_io_executor& ex, Handler h, Args... args) {
  if (!ex) return post_completion(asio::any_io_executor(asio::system_executor()), std::move(h), std::move(args)...);
  asio::post(ex, asio::append(std::move(h), std::move(args)...));
}

/// Runs f, given the handler h, on the session's executor `ex`: at once when the caller already
/// runs there (asio::dispatch: inside the io_context's run or the strand), posted otherwise. Every
/// entry point of an operation into the engine goes through it, so that operations may be
/// started from any thread (e.g. `m.async_acquire(asio::use_future)` from main). The handler's
/// associated executor counts outstanding work from here on, as Asio's own operations do from
/// their initiating function: a handler io_context run on another thread does not run out of
/// work while the operation is still on its way to the engine (`f` then makes the operation's
/// pending, which counts its own).
template <class Handler, class F>
void on_executor(const asio::any_io_executor& ex, Handler h, F&& f) {
  auto work = asio::prefer(asio::get_associated_executor(h, ex), asio::execution::outstanding_work.tracked);
  asio::dispatch(ex, [h = std::move(h), f = std::forward<F>(f), work = std::move(work)]() mutable { f(std::move(h)); });
}

template <class Signature>
class pending;

template <class... Args>
class pending<void(error_code, Args...)>
    : public boost::intrusive_ref_counter<pending<void(error_code, Args...)>,
                                          boost::thread_unsafe_counter> {
 public:
  using signature = void(error_code, Args...);
  using handler_type = asio::any_completion_handler<signature>;
  using ptr = boost::intrusive_ptr<pending>;

  /// Called on cancellation instead of the default (complete with operation_aborted). The
  /// operation decides what it can honour; it must eventually call complete().
  std::function<void(asio::cancellation_type)> on_cancel;

  /// `accepted`: the cancellation types the operation honours; others are ignored (an
  /// operation whose request is on the wire cannot honour total cancellation).
  static ptr make(handler_type h, asio::any_io_executor ex,
                  asio::cancellation_type accepted = asio::cancellation_type::all) {
    ptr p{new pending(std::move(h), std::move(ex))};
    p->accepted_ = accepted;
    p->connect_slot();
    return p;
  }

  bool active() const noexcept { return static_cast<bool>(handler_); }

  /// Posts the handler with these arguments; no-op when already completed.
  void complete(error_code ec, Args... args) {
    if (!handler_) return;
    if (slot_.is_connected() && !in_cancel_) slot_.clear();
    auto h = std::move(handler_);
    handler_ = nullptr;
    // Let go of the work count only once the posted completion holds its own.
    auto work = std::move(work_);
    work_ = {};
    post_completion(ex_, std::move(h), ec, std::move(args)...);
  }

  /// Completes with `ec` and default-constructed results.
  void fail(error_code ec) { complete(ec, Args{}...); }

  /// Completes with operation_aborted and default-constructed results.
  void abort() { complete(asio::error::operation_aborted, Args{}...); }

  const asio::any_io_executor& executor() const noexcept { return ex_; }

 private:
  // The handler's executor counts outstanding work while the operation is pending (as Asio's
  // own operations do), so its io_context does not run out of work meanwhile.
  pending(handler_type h, asio::any_io_executor ex)
      : handler_(std::move(h)),
        ex_(std::move(ex)),
        work_(asio::prefer(asio::get_associated_executor(handler_, ex_), asio::execution::outstanding_work.tracked)) {}

  struct canceller {
    ptr self;
    void operator()(asio::cancellation_type type) {
      if (!self->handler_ || (type & self->accepted_) == asio::cancellation_type::none) return;
      self->in_cancel_ = true;
      if (self->on_cancel)
        self->on_cancel(type);
      else
        self->abort();
      self->in_cancel_ = false;
    }
  };

  void connect_slot() {
    slot_ = asio::get_associated_cancellation_slot(handler_);
    if (slot_.is_connected()) slot_.template emplace<canceller>(canceller{ptr{this}});
  }

  handler_type handler_;
  asio::any_io_executor ex_;
  asio::any_completion_executor work_;
  asio::cancellation_slot slot_;
  asio::cancellation_type accepted_ = asio::cancellation_type::all;
  bool in_cancel_ = false;
};

}  // namespace zklock::detail
