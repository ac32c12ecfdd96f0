// A pending asynchronous operation: a type-erased handler plus its cancellation wiring.
// Completion always goes through asio::post (never inline from the initiating function, never
// inside zookeeper_process), on the handler's associated executor.
#pragma once

#include <zklock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <functional>
#include <tuple>
#include <utility>

namespace zklock::detail {

namespace asio = boost::asio;

/// Completes `h` with `args` later, never inline: posts to `ex` (the session's executor), and
/// from there dispatches to the handler's associated executor (inline when that is the same
/// context, as it is for callbacks and for coroutines on the session's io_context).
template <class Handler, class... Args>
void post_completion(const asio::any_io_executor& ex, Handler h, Args... args) {
  asio::post(ex, [h = std::move(h), args = std::make_tuple(std::move(args)...)]() mutable {
    std::apply(
        [&h](auto&... a) { asio::dispatch(asio::append(std::move(h), std::move(a)...)); }, args);
  });
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

  static ptr make(handler_type h, asio::any_io_executor ex) {
    ptr p{new pending(std::move(h), std::move(ex))};
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
    post_completion(ex_, std::move(h), ec, std::move(args)...);
  }

  /// Completes with operation_aborted and default-constructed results.
  void abort() { complete(asio::error::operation_aborted, Args{}...); }

  const asio::any_io_executor& executor() const noexcept { return ex_; }

 private:
  pending(handler_type h, asio::any_io_executor ex) : handler_(std::move(h)), ex_(std::move(ex)) {}

  struct canceller {
    ptr self;
    void operator()(asio::cancellation_type type) {
      if (!self->handler_) return;
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
  asio::cancellation_slot slot_;
  bool in_cancel_ = false;
};

}  // namespace zklock::detail
