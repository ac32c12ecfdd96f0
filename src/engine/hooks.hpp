// What a runner hooks into and lets go of again: its pending operation's cancellation
// (hook_cancel, cancel_hook) and its session's state: every change (session_listener), or until
// it is connected again (await_connection). Each calls the runner only while it lives: found
// through a weak pointer, or held while called.
#pragma once

#include "engine/session_impl.hpp"

#include <zklock/detail/pending.hpp>

#include <boost/asio/post.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>

#include <functional>
#include <memory>
#include <utility>

namespace zklock::detail {

// The owner, if it still lives: a weak pointer's; one held (an operation's own state); a runner
// counted by boost::intrusive_ptr (held while called: a listener's keeps it alive, a
// cancel_hook never outlives it).
template <class T>
std::shared_ptr<T> lock_owner(const std::weak_ptr<T>& owner) noexcept {
  return owner.lock();
}
template <class T>
const std::shared_ptr<T>& lock_owner(const std::shared_ptr<T>& owner) noexcept {
  return owner;
}
template <class T>
boost::intrusive_ptr<T> lock_owner(T* owner) noexcept {
  return boost::intrusive_ptr<T>(owner);
}
template <class T>
boost::intrusive_ptr<T> lock_owner(const boost::intrusive_ptr<T>& owner) noexcept {
  return owner;
}

/// Sends `op`'s cancellation to on_cancel(owner, type) while `owner` lives; once it is gone, a
/// cancellation completes `op` with operation_aborted (pending's default). Left set: for an
/// operation kept by someone other than its runner (a hold's waiters, the session's connect),
/// or one whose owner is its own state.
template <class Op, class Owner, class F>
void hook_cancel(Op& op, Owner owner, F on_cancel) {
  // (`op` owns this function: it lives while it runs)
  op.on_cancel = [&op, owner = std::move(owner), f = std::move(on_cancel)](asio::cancellation_type t) {
    if (auto self = lock_owner(owner)) std::invoke(f, *self, t);
    else op.abort();
  };
}

/// Whether a cancellation of type `t` wants the operation over at once (terminal or partial),
/// rather than undone first (total, which waits for the cleanup on the server).
inline bool cancels_at_once(asio::cancellation_type t) noexcept {
  return (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) != asio::cancellation_type::none;
}

/// A hook_cancel taken off again when this object goes (a runner's member, or its waiter's) or
/// by reset(): a cancellation after that completes the operation with operation_aborted. Only
/// on the session's executor, as the operation's cancellation is.
template <class Op>
class cancel_hook {
 public:
  cancel_hook() = default;
  template <class Owner, class F>
  cancel_hook(boost::intrusive_ptr<Op> op, Owner owner, F on_cancel) : op_(std::move(op)) {
    hook_cancel(*op_, std::move(owner), std::move(on_cancel));
  }
  cancel_hook(cancel_hook&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
  cancel_hook& operator=(cancel_hook&& other) noexcept {
    if (this != &other) {
      reset();
      op_ = std::exchange(other.op_, nullptr);
    }
    return *this;
  }
  ~cancel_hook() { reset(); }

  void reset() noexcept {
    if (auto op = std::exchange(op_, nullptr)) op->on_cancel = nullptr;
  }

 private:
  boost::intrusive_ptr<Op> op_;
};

/// Follows the session's state changes: each reaches on_state(owner, state) on the session's
/// executor while `owner` lives (listeners run inside the C client's callbacks: they only
/// post). Unsubscribed by reset() (on the session's executor), or when this goes: from any
/// thread, so posted there (the listener map belongs to the executor).
class session_listener {
 public:
  session_listener() = default;
  template <class Owner, class F>
  session_listener(std::shared_ptr<session_impl> s, Owner owner, F on_state) : s_(std::move(s)) {
    id_ = s_->subscribe([ex = s_->executor(), owner = std::move(owner), f = std::move(on_state)](session_state st) {
      asio::post(ex, [owner, f, st] {
        if (auto self = lock_owner(owner)) std::invoke(f, *self, st);
      });
    });
  }
  session_listener(session_listener&& other) noexcept
      : s_(std::move(other.s_)), id_(std::exchange(other.id_, 0)) {}
  session_listener& operator=(session_listener&& other) {
    if (this != &other) {
      unsubscribe_later();
      s_ = std::move(other.s_);
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  ~session_listener() { unsubscribe_later(); }

  explicit operator bool() const noexcept { return id_ != 0; }
  void reset() noexcept {
    if (id_) s_->unsubscribe(std::exchange(id_, 0));
  }

 private:
  void unsubscribe_later() {
    if (id_) asio::post(s_->executor(), [s = s_, id = std::exchange(id_, 0)] { s->unsubscribe(id); });
  }

  std::shared_ptr<session_impl> s_;
  std::uint64_t id_ = 0;
};

/// Follows the session until it is connected again or over: calls on_outcome(owner, state) once,
/// on the session's executor (never inline), while `owner` lives, with a connected state, or one
/// that ends what the caller ran on (expired, closed; disconnected or connecting: a new session
/// may be under way, the one followed is gone). A suspended session is waited through.
template <class Owner, class F>
void await_connection(std::shared_ptr<session_impl> s, Owner owner, F on_outcome) {
  struct step {
    std::shared_ptr<session_impl> s;
    Owner owner;
    F on_outcome;
    void operator()(error_code ec, session_state) {
      auto self = lock_owner(owner);
      if (!self) return;
      auto now = s->state();
      if (now == session_state::suspended) {
        if (!ec) return s->wait_state(now, state_handler(std::move(*this)));
        now = session_state::closed;  // the waiters of a session shut down
      }
      std::invoke(on_outcome, *self, now);
    }
  };
  auto& session = *s;
  session.wait_state(session_state::suspended, state_handler(step{std::move(s), std::move(owner), std::move(on_outcome)}));
}

}  // namespace zklock::detail
