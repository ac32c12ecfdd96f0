// The one runner: carries out a sans-I/O machine's requests (src/sansio/request.hpp) on a
// session and feeds the answers back, so that what runs where is written once:
//  - everything runs on the session's executor: start_operation enters it from any thread
//    (pending.hpp's on_executor, which also relays the caller's cancellation there);
//  - the operation's cancellation reaches the machine as input::cancelled (cancel_hook), never
//    after the runner is gone;
//  - watch slots (the watch a request set, waited for and removed by slot), timer slots;
//  - each step's requests leave together (send_batch: one segment, pipelined);
//  - following the session's state (await_connection; follow_session: every change, as an
//    input, until stop_following), the session as seen with each input (input::seen), and the
//    completion.
// What is the recipe's stays in its hook: `void on_outcome(runner&, const request&)` for the
// machine's notify and complete requests (a leader becomes the operation's result); optionally
// `void after_step(runner&)`, called after each step is carried out (the hold keeps itself
// alive while a delete is owed), `void before_input(runner&, const input&)`, called before the
// machine hears each input the runner feeds it (the local queue tells it a loss it can already
// see first), and `static constexpr bool weak_waits = true`: timers and watch
// waits do not keep the runner alive (its owner does: the hold's guards). A runner with no
// operation (op null: the hold's, which lives as long as its guards) is driven by its owner
// through execute() and feed().
//
// Machine: `std::vector<request> on(const input&)`. Hook: `op_type` (the pending operation,
// pending<void(error_code, ...)>) and on_outcome. Session: session_impl, or anything with its
// few calls (create, remove, exists, get_data, get_children, sync, multi, wait_watch,
// remove_watch, state, executor, a send_batch, and an await_connection(session, owner, f)
// found by ADL): the unit tests' simulated session (test/unit/sim/session_sim.hpp) drives the
// same runner against an in-memory server. The runner lives while anything it asked for is in
// flight (each callback holds it).
#pragma once

#include "engine/hooks.hpp"
#include "engine/session_impl.hpp"
#include "sansio/request.hpp"
#include "sansio/session_end.hpp"

#include <zklock/detail/pending.hpp>
#include <zklock/detail/watch_state.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace zklock::detail {

template <class Machine, class Hook, class Session = session_impl>
class runner : public std::enable_shared_from_this<runner<Machine, Hook, Session>> {
 public:
  using op_type = typename Hook::op_type;
  using op_ptr = typename op_type::ptr;
  static constexpr std::size_t slots = 4;  // watch slots, and as many timer slots

  runner(std::shared_ptr<Session> s, op_ptr op, Machine m, Hook h)
      : s_(std::move(s)), op_(std::move(op)), machine_(std::move(m)), hook_(std::move(h)) {}

  /// Hooks the operation's cancellation (on the executor: cancelled -> the machine), then
  /// carries out the machine's first step.
  void start(const std::vector<sansio::request>& first) {
    if (op_) {
      cancel_ = cancel_hook<op_type>(op_, this->weak_from_this(), [](runner& self, asio::cancellation_type t) {
        sansio::input in{.type = sansio::input::cancelled, .ec = asio::error::operation_aborted};
        in.total = !cancels_at_once(t);
        in.connected = is_connected(self.s_->state());
        self.feed(std::move(in));
      });
    }
    run(first);
  }

  /// An answer for the machine; its next step is carried out.
  void feed(sansio::input in) {
    in.seen = seen();
    if constexpr (requires { hook_.before_input(*this, in); }) hook_.before_input(*this, in);
    run(machine_.on(in));
  }
  /// Carries out a step the machine made outside on() (its owner called it).
  void execute(const std::vector<sansio::request>& step) { run(step); }
  /// Puts a watch set by someone else (an acquire's read of the node it created) in `slot`.
  void adopt_watch(std::uint8_t slot, boost::intrusive_ptr<watch_state> w) { watch_slot(slot) = std::move(w); }
  /// The session now (empty fields: the session does not tell them).
  sansio::session_view seen() const {
    sansio::session_view v{.state = s_->state()};
    if constexpr (requires(const Session& s) {
                    s.session_id();
                    s.valid_until();
                    s.last_acknowledged();
                    s.negotiated_timeout();
                  }) {
      v.session_id = s_->session_id();
      v.now = std::chrono::steady_clock::now();
      v.valid_until = s_->valid_until();
      v.last_acknowledged = s_->last_acknowledged();
      v.session_timeout = s_->negotiated_timeout();
    }
    return v;
  }
  /// The watch in `slot`, taken out (the hook hands it over: a grant's own-node watch goes to
  /// the hold); its event no longer reaches the machine.
  boost::intrusive_ptr<watch_state> take_watch(std::uint8_t slot) { return std::exchange(watch_slot(slot), nullptr); }

  Machine& machine() noexcept { return machine_; }
  Hook& hook() noexcept { return hook_; }
  Session& session() noexcept { return *s_; }
  op_type* op() noexcept { return op_.get(); }

 private:
  void run(const std::vector<sansio::request>& step) {
    if (!step.empty()) {
      typename Session::send_batch together(s_.get());  // what one input asks for goes in one segment
      for (const auto& r : step) carry_out(r);
    }
    if constexpr (requires { hook_.after_step(*this); }) hook_.after_step(*this);
  }

  template <class Value>
  auto reply_to(std::uint64_t tag) {
    return [self = this->shared_from_this(), tag](error_code ec, Value v) {
      sansio::input in{.type = sansio::input::reply, .tag = tag, .ec = ec};
      if constexpr (!std::is_same_v<Value, std::monostate>) in.value = std::move(v);
      self->feed(std::move(in));
    };
  }
  auto void_reply(std::uint64_t tag) {
    return [self = this->shared_from_this(), tag](error_code ec) { self->feed({.type = sansio::input::reply, .tag = tag, .ec = ec}); };
  }
  // The watch slot a request sets (emptied first: a request that fails sets none).
  boost::intrusive_ptr<watch_state>* set_watch(const sansio::request& r) {
    if (r.slot == sansio::request::no_slot) return nullptr;
    watch_slot(r.slot) = nullptr;
    return &watches_[r.slot];
  }
  // A watch slot: as many as the machine numbers (a waiter's K blockers, besides its node).
  boost::intrusive_ptr<watch_state>& watch_slot(std::uint8_t slot) {
    if (slot >= watches_.size()) watches_.resize(std::size_t{slot} + 1);
    return watches_[slot];
  }

  void carry_out(const sansio::request& r) {
    switch (r.type) {
      case sansio::request::create:
        return s_->create(r.path, r.data, r.mode, create_handler(reply_to<create_result>(r.tag)));
      case sansio::request::remove: return s_->remove(r.path, r.version, void_handler(void_reply(r.tag)));
      case sansio::request::exists:
        return s_->exists(r.path, set_watch(r), exists_handler(reply_to<std::optional<node_stat>>(r.tag)));
      case sansio::request::get_data: return s_->get_data(r.path, set_watch(r), data_handler(reply_to<data_result>(r.tag)));
      case sansio::request::get_children:
        return s_->get_children(r.path, set_watch(r), shared_children_handler(reply_to<shared_children>(r.tag)));
      case sansio::request::sync: return s_->sync(r.path, void_handler(void_reply(r.tag)));
      case sansio::request::multi: return s_->multi(r.ops, multi_handler(reply_to<std::vector<multi_result>>(r.tag)));
      case sansio::request::wait_watch: return wait_watch(r);
      case sansio::request::remove_watch: return remove_watch(r);
      case sansio::request::timer: return arm_timer(r);
      case sansio::request::cancel_timer:
        if (auto& t = timers_.at(r.slot)) t->cancel();
        return;
      case sansio::request::await_connection:
        // (unqualified: a simulated session brings its own, found by ADL)
        return await_connection(s_, this->shared_from_this(), [tag = r.tag](runner& self, session_state now) {
          error_code ec = is_connected(now) ? error_code{} : session_end_error(now, /*ran_on_session=*/true);
          self.feed({.type = sansio::input::connection, .tag = tag, .ec = ec});
        });
      case sansio::request::notify:
      case sansio::request::complete: return hook_.on_outcome(*this, r);
      case sansio::request::set_data:
        if constexpr (requires { s_->set_data(r.path, r.data, r.version, stat_handler{}); })
          s_->set_data(r.path, r.data, r.version, stat_handler([self = this->shared_from_this(), tag = r.tag](error_code ec, node_stat st) {
            sansio::input in{.type = sansio::input::reply, .tag = tag, .ec = ec};
            if (!ec) in.value = std::optional<node_stat>(st);
            self->feed(std::move(in));
          }));
        return;
      case sansio::request::follow_session: return follow(r);
      case sansio::request::stop_following: following_.reset(); return;
    }
  }

  static void state_changed(runner&, session_state);  // (follow_session's signature, for its check)

  // What a timer or a watch wait holds: the runner, or (weak_waits) a weak pointer to it.
  static constexpr bool weak_waits = [] {
    if constexpr (requires { Hook::weak_waits; }) return Hook::weak_waits;
    else return false;
  }();
  auto waiting_ref() {
    if constexpr (weak_waits) return this->weak_from_this();
    else return this->shared_from_this();
  }

  // The slot's watch fires: once, unless removed (or replaced) by us meanwhile.
  void wait_watch(const sansio::request& r) {
    auto w = watch_slot(r.slot);
    if (!w) return;  // removed (or taken) before the wait was asked for
    s_->wait_watch(w, watch_handler([ref = waiting_ref(), w, slot = r.slot, tag = r.tag](error_code ec, watch_event ev) {
      auto self = lock_owner(ref);
      if (!self) return;
      if (w != self->watches_[slot]) return;  // removed by us (or being removed)
      if (ev.type == watch_event_type::not_watching && !ec) return;
      self->watches_[slot] = nullptr;
      self->feed({.type = sansio::input::watch_fired, .tag = tag, .ec = ec, .event = ev.type});
    }));
  }

  // Nothing registered any more (fired, or never set): answered at once. A removal lost with
  // the connection leaves the watch in its slot (the C client keeps it, and sets it again).
  void remove_watch(const sansio::request& r) {
    auto w = std::exchange(watch_slot(r.slot), nullptr);
    if (!w || w->fired || !w->registered) return feed({.type = sansio::input::reply, .tag = r.tag});
    s_->remove_watch(w, void_handler([self = this->shared_from_this(), w, slot = r.slot, tag = r.tag](error_code ec) {
      if (ec == condition::connection_lost) self->watches_[slot] = w;
      self->feed({.type = sansio::input::reply, .tag = tag, .ec = ec});
    }));
  }

  void arm_timer(const sansio::request& r) {
    auto& t = timers_.at(r.slot);
    if (!t) t.emplace(s_->executor());
    if (r.at != std::chrono::steady_clock::time_point{})
      t->expires_at(r.at);
    else
      t->expires_after(r.after);
    t->async_wait([ref = waiting_ref(), tag = r.tag](error_code ec) {
      if (ec) return;
      if (auto self = lock_owner(ref))
        self->feed({.type = sansio::input::timer_due, .tag = tag, .connected = is_connected(self->s_->state())});
    });
  }

  // Every state change from now on, as input::session with the request's tag, until
  // stop_following (unqualified, as await_connection: a simulated session brings its own). The
  // listener holds the runner as its waits do: weakly for a weak_waits hook, else until
  // stop_following (a machine that follows unfollows before it completes).
  void follow(const sansio::request& r) {
    if constexpr (requires { follow_session(s_, waiting_ref(), &runner::state_changed); }) {
      auto l = follow_session(s_, waiting_ref(), [tag = r.tag](runner& self, session_state told) {
        sansio::input in{.type = sansio::input::session, .tag = tag};
        in.state = told;  // (the session may be further by now: input::seen)
        self.feed(std::move(in));
      });
      following_ = std::make_shared<decltype(l)>(std::move(l));
    }
  }

  std::shared_ptr<Session> s_;
  op_ptr op_;
  Machine machine_;
  Hook hook_;
  std::vector<boost::intrusive_ptr<watch_state>> watches_ = std::vector<boost::intrusive_ptr<watch_state>>(slots);
  std::array<std::optional<asio::steady_timer>, slots> timers_;
  cancel_hook<op_type> cancel_;
  std::shared_ptr<void> following_;  // follow_session's listener
};

/// follow_session on a real session: its state listener (posted, never inline).
template <class Owner, class F>
session_listener follow_session(std::shared_ptr<session_impl> s, Owner owner, F on_state) {
  return session_listener(std::move(s), std::move(owner), std::move(on_state));
}

/// Whether a runner on `Session` carries out set_data and follow_session (they are skipped on a
/// session without them): checked where a machine needs them.
template <class Session>
concept follows_and_writes = requires(std::shared_ptr<Session> s, std::weak_ptr<Session> owner, const std::string& p,
                                      void (*f)(Session&, session_state)) {
  s->set_data(p, p, -1, stat_handler{});
  follow_session(s, owner, f);
};
static_assert(follows_and_writes<session_impl>);

/// Starts an operation of a runner from any thread: on the session's executor (on_executor,
/// which relays the caller's cancellation there), its pending made from `h`, then
/// `make(op)` gives the runner (null: it completed `op` itself) and its first step.
template <class Signature, class Session, class Handler, class Make>
void start_operation(const std::shared_ptr<Session>& s, Handler h, Make make) {
  on_executor(s->executor(), std::move(h), [s, make = std::move(make)](auto h) mutable {
    auto op = pending<Signature>::make(std::move(h), s->executor());
    make(std::move(op));
  });
}

}  // namespace zklock::detail
