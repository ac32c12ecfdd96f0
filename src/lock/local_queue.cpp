// The two-level lock's queue: see local_queue.hpp and src/sansio/local_queue_fsm.hpp. The runner
// (src/lock/runner.hpp) carries out local_queue_machine (the lock dir's listing and its watch,
// the session followed); the waiters, their timers and cancellations, and the node's acquire
// and release (operations of their own) are here.
#include "lock/local_queue.hpp"

#include "engine/hooks.hpp"
#include "lock/hold.hpp"
#include "lock/runner.hpp"
#include "sansio/local_queue_fsm.hpp"
#include "sansio/node_data.hpp"
#include "sansio/session_end.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <map>
#include <optional>

namespace zklock::detail {

class local_queue;

/// What the runner hands the queue: a loss it can see, before each input; the machine's outcomes.
struct local_queue_hook {
  using op_type = pending<void(error_code)>;  // (none: the queue lives as long as its mutex and holds)
  static constexpr bool weak_waits = true;
  std::weak_ptr<local_queue> owner;
  template <class Runner>
  void before_input(Runner&, const sansio::input&);
  template <class Runner>
  void on_outcome(Runner&, const sansio::request& a);
};

class local_queue : public std::enable_shared_from_this<local_queue> {
 public:
  local_queue(std::shared_ptr<lock_dir> node_dir, int max_local_handoffs)
      : s_(node_dir->s), dir_(std::move(node_dir)), max_local_handoffs_(max_local_handoffs) {
    dir_->metering = lock_metering::local_queue_node;  // its waiters count, not their node's acquire
  }
  ~local_queue() {
    // Any thread may run this (a released local guard destroyed there holds our last
    // reference): what belongs to the session's executor (the runner's watch and timers, the
    // waiters' timers and cancellation hooks) is let go there, as the listener does.
    asio::post(s_->executor(), [r = std::move(r_), waiters = std::move(waiters_)] {});
  }

  void acquire(pending<void(error_code, lock_guard)>::ptr op, const acquire_params& p) {
    if (!r_) {
      // follows the session from the first acquire on (before_input: see_losses)
      r_ = std::make_shared<runner_type>(s_, nullptr, local_queue_machine(dir_->path, max_local_handoffs_),
                                         local_queue_hook{weak_from_this()});
      r_->start({sansio::request::follow()});
    }
    if (holder_.reenter(p, op)) return;  // the owner holding through this mutex: its local hold again
    // (the session's end was checked by start_acquire, session_end.hpp's rule)
    // A try-acquire never waits for a reconnect (as the mutex's).
    if (p.mode == lock_mode::try_once && !is_connected(s_->state()))
      return op->complete(errc::connection_unavailable, lock_guard{});
    const auto id = next_id_++;
    auto& w = waiters_[id];
    w.op = op;
    w.owner = p.owner;
    w.metrics = acquire_meter::start(*s_, dir_->path, lock_kind::exclusive);
    // Cancellation of a local waiter touches nothing on the server: every type is honoured at
    // once (the queue's node, if no one is left to want it, is cleaned up by its own acquire).
    w.cancel = cancel_hook(op, weak_from_this(), [id](local_queue& self, asio::cancellation_type) {
      self.feed([&] { return self.fsm().cancel(id, asio::error::operation_aborted); });
    });
    if (p.timeout != std::chrono::steady_clock::duration::max()) {
      w.timer.emplace(s_->executor());
      w.timer->expires_after(p.timeout);
      w.timer->async_wait([self = shared_from_this(), id](error_code ec) {
        // (as the mutex's: time out while not connected says so, not "contention")
        if (ec) return;
        auto why = is_connected(self->s_->state()) ? error_code(errc::lock_timeout) : error_code(errc::connection_unavailable);
        self->feed([&] { return self->fsm().cancel(id, why); });
      });
    }
    feed([&] {
      members_session_ = s_->session_id();  // (a previous session's end was told just before)
      return fsm().enqueue(id, p.mode == lock_mode::try_once);
    });
  }

 private:
  friend struct local_queue_hook;
  using runner_type = runner<local_queue_machine, local_queue_hook>;
  local_queue_fsm& fsm() noexcept { return r_->machine().fsm(); }

  struct waiter {
    pending<void(error_code, lock_guard)>::ptr op;
    cancel_hook<pending<void(error_code, lock_guard)>> cancel;
    std::optional<owner_id> owner;
    std::optional<asio::steady_timer> timer;
    acquire_meter metrics;
  };

  // Every input reaches the machine through here. A loss the runner can already see (the
  // session ended or was replaced, the node's guard owns no more) is told first, so that no
  // input grants a local holder on a lost node: a local grant checks the session and the node
  // as a ZooKeeper grant does. (The node guard's own report of its loss comes a few handlers later.)
  template <class Input>
  void feed(Input input) {
    see_losses();
    run(input());
  }
  void see_losses() {
    see_node_loss();  // ended or replaced: the waiters fail, the holder is lost, now
    see_session_end();
  }

  // The session our holder and waiters joined on ended (closed, expired, or replaced by a new
  // one): the machine is told once, whatever it knew of the node before (a node lost at its
  // validity deadline, then the local expiry, tells see_node_loss nothing new).
  void see_session_end() {
    if (!members_session_) return;
    auto end = session_end_error(s_->state(), /*ran_on_session=*/true, s_->session_id() != members_session_);
    if (!end) return;
    members_session_ = 0;
    run(fsm().on_session_ended(end));
  }

  void see_node_loss() {
    if (node_lost_ || node_guard_.status() == lock_status::released) return;  // told already, or no node held
    const auto st = s_->state();
    const bool replaced = s_->session_id() != node_session_;
    auto end = session_end_error(st, /*ran_on_session=*/true, replaced);
    if (!end && node_guard_.owns_lock()) return;
    // the cause the node's hold reports (it names it the same way)
    node_lost_ = make_lock_lost(lost_cause_of(st, replaced));
    run(fsm().on_node_lost(end));
  }

  // The machine's step: the listing through the runner, the rest to on_outcome.
  void run(const local_queue_fsm::actions& actions) { r_->execute(r_->machine().step(actions)); }

  void on_outcome(const sansio::request& a) {
    switch (a.outcome_kind<local_outcome>()) {
      case local_outcome::acquire_node: acquire_node(a.value != 0); break;
      case local_outcome::cancel_node:
        if (node_cancel_) node_cancel_->emit(asio::cancellation_type::terminal);
        break;
      case local_outcome::release_node: release_node(); break;
      case local_outcome::grant: grant(a.id, a.value); break;
      case local_outcome::fail: finish(a.id, a.ec); break;
      case local_outcome::lose_holder:
        if (auto h = holder_.held.lock(); h && holder_id_ == a.id) h->local_session_ended(node_lost_ ? node_lost_ : a.ec);
        break;
    }
  }

  void acquire_node(bool try_once) {
    const auto epoch = r_->machine().next_epoch();
    node_cancel_ = std::make_unique<asio::cancellation_signal>();
    start_acquire(dir_,
                  asio::bind_cancellation_slot(node_cancel_->slot(),
                                               [self = shared_from_this(), epoch](error_code ec, lock_guard g) {
                                                 self->on_node(epoch, ec, std::move(g));
                                               }),
                  {.mode = try_once ? lock_mode::try_once : lock_mode::wait});
  }

  void on_node(std::uint64_t epoch, error_code ec, lock_guard g) {
    if (epoch != r_->machine().epoch()) return;  // cannot happen: one node acquire at a time
    // A grant that reaches us after its session ended is no grant (its guard is already lost).
    if (!ec) ec = session_end_error(s_->state(), /*ran_on_session=*/true);
    if (!ec) {
      node_guard_ = std::move(g);
      node_lost_ = {};
      node_session_ = s_->session_id();
      const auto& path = node_guard_.node_path();
      r_->machine().node_acquired(path.substr(path.rfind('/') + 1));
      czxid_ = node_guard_.fencing_token();
      node_guard_.async_wait_lost([self = shared_from_this(), epoch](error_code ec) {
        if (epoch != self->r_->machine().epoch() || ec != errc::lock_lost) return;
        if (!self->node_lost_) self->node_lost_ = ec;  // its cause, for the local holder's guard
        auto end = session_end_error(self->s_->state(), /*ran_on_session=*/true,
                                     self->s_->session_id() != self->node_session_);
        self->run(self->fsm().on_node_lost(end));
      });
    }
    feed([&] { return fsm().on_node_acquired(ec); });
  }

  void release_node() {
    r_->machine().next_epoch();  // listings, watch events and the loss of the old node are stale from here
    auto g = std::move(node_guard_);
    node_guard_ = lock_guard{};
    node_lost_ = {};
    if (g.get_executor() == asio::any_io_executor{}) {
      // no guard (cannot happen: the node is released only once held)
      return asio::post(s_->executor(), [self = shared_from_this()] { self->run(self->fsm().on_node_released()); });
    }
    // Delete first, then queue again: waiting for the delete's reply keeps "one node of ours
    // in the dir at any time" true whatever the connection does meanwhile.
    g.async_release([self = shared_from_this()](error_code) { self->feed([&] { return self->fsm().on_node_released(); }); });
  }

  // Takes waiter `id` out of the queue, its timer and cancellation unhooked: it completes now.
  std::optional<waiter> take_waiter(std::uint64_t id) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return std::nullopt;
    std::optional<waiter> w(std::move(it->second));
    waiters_.erase(it);
    if (w->timer) w->timer->cancel();
    w->cancel.reset();
    return w;
  }

  void grant(std::uint64_t id, std::uint32_t generation) {
    auto taken = take_waiter(id);
    if (!taken) return;
    auto& w = *taken;
    // A local hold: nothing is sent. It starts as the node's hold is (held or maybe_lost).
    auto h = hold::local(s_,
                         {.node = node_guard_.node_path(),
                          .token = local_fencing_token(czxid_, generation),
                          .metrics = w.metrics.granted_locally(generation)},
                         node_guard_.status() == lock_status::held, shared_from_this());
    holder_ = {h, w.owner};
    holder_id_ = id;
    w.op->complete({}, make_guard(std::move(h)));
  }

  void finish(std::uint64_t id, error_code ec) {
    if (auto w = take_waiter(id)) w->metrics.failed(ec), w->op->complete(ec, lock_guard{});
  }

  // The local holder gave its hold back (its last count; lock_guard::async_release, or its
  // destructor): at once, nothing sent; the queue then hands the lock on or releases the node.
 public:
  void release_local(const std::shared_ptr<hold>& h, pending<void(error_code)>::ptr op) {
    if (h->machine().status() == lock_status::released) {
      if (op) op->complete(errc::already_released);
      return;
    }
    const bool lost = h->machine().status() == lock_status::lost;
    h->local_release();
    if (op) op->complete(lost ? error_code(errc::lock_lost) : error_code{});
    if (holder_.held.lock() != h) return;  // (cannot happen: one local holder at a time)
    const auto id = holder_id_;
    holder_ = {};
    feed([&] { return fsm().release(id); });
  }

 private:

  std::shared_ptr<session_impl> s_;
  std::shared_ptr<lock_dir> dir_;  // a plain lock dir: the queue's node is an ordinary acquire
  int max_local_handoffs_;
  std::shared_ptr<runner_type> r_;  // local_queue_machine, carried out (from the first acquire)
  std::map<std::uint64_t, waiter> waiters_;
  std::uint64_t next_id_ = 1;
  // the node (the machine's epoch: one per node acquire and per release, stale callbacks compare it)
  std::unique_ptr<asio::cancellation_signal> node_cancel_;
  lock_guard node_guard_;
  std::int64_t czxid_ = 0;
  // the local holder
  reentrant_hold holder_;
  std::int64_t node_session_ = 0;  // the ZooKeeper session the node belongs to
  error_code node_lost_;  // why the node's hold was lost (errc::lock_lost naming the cause); empty while held
  std::uint64_t holder_id_ = 0;
  std::int64_t members_session_ = 0;  // the session the holder and waiters joined on; 0: told its end
};

template <class Runner>
void local_queue_hook::before_input(Runner&, const sansio::input&) {
  if (auto q = owner.lock()) q->see_losses();
}
template <class Runner>
void local_queue_hook::on_outcome(Runner&, const sansio::request& a) {
  if (auto q = owner.lock()) q->on_outcome(a);
}

std::shared_ptr<local_queue> make_local_queue(std::shared_ptr<lock_dir> node_dir, int max_local_handoffs) {
  return std::make_shared<local_queue>(std::move(node_dir), max_local_handoffs);
}

void release_local_hold(local_queue& q, const std::shared_ptr<hold>& h, pending<void(error_code)>::ptr op) {
  q.release_local(h, std::move(op));
}

void start_local_acquire(const std::shared_ptr<local_queue>& q, pending<void(error_code, lock_guard)>::ptr op,
                         acquire_params p) {
  q->acquire(std::move(op), p);
}

}  // namespace zklock::detail
