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
#include <boost/asio/associator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <functional>
#include <memory>
#include <type_traits>
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

/// The cancellation of one operation, carried to the session's executor. A cancellation slot's
/// handler runs on whichever thread emits its signal (a parallel group's `||` completing on
/// another thread of a pool, a coroutine's cancellation dispatched to its own executor): the
/// handler on_executor puts in the caller's slot only dispatches to the session's executor,
/// and emits there this signal, the one the operation's own handler (pending's canceller) is
/// connected to. So every canceller of the engine runs on the session's executor, as
/// everything else of the engine does, and clearing this slot there races with nothing.
struct cancel_relay_state {
  asio::cancellation_signal inner;
  /// Emitted before the operation reached the engine (it connects its canceller there): handed
  /// to it once it did.
  asio::cancellation_type early = asio::cancellation_type::none;

  void emit_on_executor(asio::cancellation_type type) {
    if (inner.slot().has_handler())
      inner.emit(type);
    else
      early = early | type;
  }
};

/// The handler of an operation whose cancellation is relayed: the caller's, owning the relay's
/// state (the signal its slot belongs to) for as long as it lives. Its executor and allocator
/// are the caller's handler's (the associator below); its cancellation slot is the relay's
/// (bind_cancellation_slot around it).
template <class Handler>
struct relayed_handler {
  Handler handler;
  std::shared_ptr<cancel_relay_state> relay;

  template <class... Args>
  void operator()(Args&&... args) {
    std::move(handler)(std::forward<Args>(args)...);
  }
};

/// What the caller's cancellation slot holds: a dispatch to the session's executor, nothing
/// else, whatever thread emits.
struct cancel_relay {
  std::shared_ptr<cancel_relay_state> relay;
  asio::any_io_executor ex;
  void operator()(asio::cancellation_type type) {
    asio::dispatch(ex, [relay = relay, type] { relay->emit_on_executor(type); });
  }
};

/// Runs f, given the handler h, on the session's executor `ex`: at once when the caller already
/// runs there (asio::dispatch: inside the io_context's run or the strand), posted otherwise. Every
/// entry point of an operation into the engine goes through it, so that operations may be
/// started from any thread (e.g. `m.async_acquire(asio::use_future)` from main). The handler's
/// associated executor counts outstanding work from here on, as Asio's own operations do from
/// their initiating function: a handler io_context run on another thread does not run out of
/// work while the operation is still on its way to the engine (`f` then makes the operation's
/// pending, which counts its own). A cancellation slot the handler carries gets a cancel_relay
/// here, on the calling thread (Asio's rule: a slot is connected by the initiating function),
/// and `f` gets the handler bound to the relay's own slot instead.
template <class Handler, class F>
void on_executor(const asio::any_io_executor& ex, Handler h, F&& f) {
  auto work = asio::prefer(asio::get_associated_executor(h, ex), asio::execution::outstanding_work.tracked);
  auto slot = asio::get_associated_cancellation_slot(h);
  if (!slot.is_connected()) {
    asio::dispatch(ex, [h = std::move(h), f = std::forward<F>(f), work = std::move(work)]() mutable { f(std::move(h)); });
    return;
  }
  auto relay = std::make_shared<cancel_relay_state>();
  slot.template emplace<cancel_relay>(cancel_relay{relay, ex});
  auto relayed = asio::bind_cancellation_slot(relay->inner.slot(), relayed_handler<Handler>{std::move(h), relay});
  // The same handler type as the caller's where it is a type-erased one (every entry point's
  // is): `f` is compiled once.
  using relayed_type = std::conditional_t<std::is_constructible_v<Handler, decltype(relayed)&&>, Handler, decltype(relayed)>;
  asio::dispatch(ex, [h = relayed_type(std::move(relayed)), relay = std::move(relay), f = std::forward<F>(f),
                      work = std::move(work)]() mutable {
    f(std::move(h));
    // A cancellation that arrived before the operation was connected to it.
    if (auto early = std::exchange(relay->early, asio::cancellation_type::none); early != asio::cancellation_type::none)
      relay->inner.emit(early);
  });
}

template <class Signature>
class pending;

// Counted atomically: the last reference may go off the executor, with a relay's state (whose
// signal holds the canceller of an operation that completed inside its own cancellation).
template <class... Args>
class pending<void(error_code, Args...)>
    : public boost::intrusive_ref_counter<pending<void(error_code, Args...)>,
                                          boost::thread_safe_counter> {
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
      // Completed here: this canceller stays in the slot (a slot's handler cannot clear itself),
      // and the pending may then go with the relay's state, off the executor. What on_cancel
      // holds (its runner) goes now, on the executor.
      if (!self->handler_) self->on_cancel = nullptr;
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

namespace boost::asio {
// A relayed handler has its caller's handler's associations (executor, allocator, ...);
// bind_cancellation_slot around it gives the relay's slot.
template <template <class, class> class Associator, class Handler, class DefaultCandidate>
struct associator<Associator, zklock::detail::relayed_handler<Handler>, DefaultCandidate> {
  using type = typename Associator<Handler, DefaultCandidate>::type;
  static type get(const zklock::detail::relayed_handler<Handler>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const zklock::detail::relayed_handler<Handler>& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};
}  // namespace boost::asio
