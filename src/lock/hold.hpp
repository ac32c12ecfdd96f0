// One held lock (shared by the guards of a reentrant owner): hold_machine (src/sansio, with
// hold_fsm and revocation_fsm as its members) carried out by the runner (src/lock/runner.hpp),
// which follows the session, the validity deadline's timer and our node's watch for it. What
// stays here is what the guards wait on: the lost, deadline and revocation waiters, the release's
// caller, the lost signal, the metrics. Every recipe's guard holds one.
//
// The release path, top to bottom: lock_guard::async_release takes a release_ticket (guard.cpp)
// -> hold::release_one (a local hold: release_local_hold, where its queue chooses between a
// local handoff and the node's release) -> hold_machine::release (hold_fsm::release decides)
// -> the runner sends the delete -> its reply -> hold_fsm::on_release_reply -> complete_release:
// the caller's handler (on_outcome).
#pragma once

#include "engine/hooks.hpp"
#include "engine/lock_metrics.hpp"
#include "engine/session_impl.hpp"
#include "lock/runner.hpp"
#include "sansio/hold_machine.hpp"

#include <zklock/lock_guard.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zklock::detail {

class local_queue;

/// What a grant gives the hold it makes.
struct hold_grant {
  std::string node;                       ///< our lock node
  std::int64_t token = 0;                 ///< its fencing token
  lock_kind kind = lock_kind::exclusive;  ///< what it holds
  hold_meter metrics;                     ///< counts the hold's end (released or lost)
};

class hold;

/// What the runner hands the hold: the machine's outcomes (hold_outcome), and after each step
/// whether a delete is still owed. Timers and watch waits hold the runner weakly: the hold (its
/// guards, or the session while a delete is owed) keeps it.
struct hold_hook {
  using op_type = pending<void(error_code)>;  // (none: the hold lives as long as its guards)
  static constexpr bool weak_waits = true;
  std::weak_ptr<hold> owner;
  template <class Runner>
  void on_outcome(Runner&, const sansio::request& a);
  template <class Runner>
  void after_step(Runner&);
};

class hold : public std::enable_shared_from_this<hold> {
  struct private_tag {
    explicit private_tag() = default;
  };

 public:
  /// A hold on the node a ZooKeeper grant gave us: follows the session and the validity deadline
  /// from now on. `watches_node`: our node's watch is kept (false: lock_dir::watch_own_node).
  static std::shared_ptr<hold> granted(std::shared_ptr<session_impl> s, hold_grant g, bool watches_node);
  /// A local hold (mutex_options::local_queue, src/lock/local_queue.cpp): one grant of `queue`'s
  /// local queue on the node that the queue's own ZooKeeper hold keeps (`held`: that node is held
  /// now). It follows the session's connection itself; its loss comes from the queue
  /// (local_session_ended); its last release goes to the queue (release_local_hold), which
  /// decides between a local handoff and the node's release.
  static std::shared_ptr<hold> local(std::shared_ptr<session_impl> s, hold_grant g, bool held,
                                     std::shared_ptr<local_queue> queue);
  hold(private_tag, std::shared_ptr<session_impl> s, hold_grant g);

  const std::shared_ptr<session_impl>& session() const noexcept { return s_; }
  const std::string& node() const noexcept { return r_->machine().node(); }
  std::int64_t fencing_token() const noexcept { return token_; }
  lock_kind kind() const noexcept { return kind_; }
  /// How many guards of a reentrant owner share this hold.
  int count() const noexcept { return count_; }
  /// The ZooKeeper session our node belongs to.
  std::int64_t node_session() const noexcept { return r_->machine().node_session(); }
  /// The state machine, to read (its status, lost_error, release_failure).
  const hold_fsm& machine() const noexcept { return r_->machine().fsm(); }
  /// What the guard says: the state machine's status, made consistent with the session's
  /// current state (its own event may still be queued).
  lock_status status() const noexcept { return r_->machine().status(s_->state()); }
  /// Whether the guard still holds (status held or maybe_lost).
  bool owns() const noexcept { return r_->machine().owns(s_->state()); }
  /// Emitted (terminal) when the hold is lost.
  asio::cancellation_slot lost_slot() noexcept { return lost_signal_.slot(); }

  /// Another guard of the reentrant owner on this hold.
  void reenter() noexcept { ++count_; }
  /// Gives back one hold of a reentrant owner; the last one releases the lock. `h` may be
  /// empty (a guard destroyed without release).
  void release_one(void_handler h);
  /// Completes `op` when the hold is lost (or released first).
  void wait_lost(pending<void(error_code)>::ptr op) { lost_waiters_.push_back(std::move(op)); }
  /// Completes `op` once the validity deadline is `lead` away with no reply moving it on (or
  /// with lock_lost / already_released first).
  void wait_deadline(std::chrono::steady_clock::duration lead, pending<void(error_code)>::ptr op);
  /// Forgets the async_wait_deadline waiter `op` (cancelled).
  void forget_deadline_waiter(const pending<void(error_code)>* op);
  /// Completes `op` when a revocation request reaches our node (or the hold ends first).
  void wait_revoked(pending<void(error_code)>::ptr op);
  /// Watches our node for revocation requests while we hold, and writes `data` back over each
  /// one: a request asks us to give the lock back, it does not replace who holds.
  void keep_data_through_revocation(std::string data);
  /// Takes over the acquire's watch on our node (set from its create on; null: none, then the
  /// hold sets one). `reply_pending`: its getData's reply is still to come (on_node_watch_reply).
  /// `last_read`: what its getData read (when its reply came).
  void adopt_node_watch(boost::intrusive_ptr<watch_state> w, bool reply_pending, const data_result* last_read = nullptr);
  /// Reply to the getData that set our node's watch: no node means deleted by someone else.
  void on_node_watch_reply(error_code ec, const data_result& d);

  /// A local hold's loss, told by its queue (it never sends: the node is the queue's).
  void local_session_ended(error_code why);
  /// A local hold's owner gave it back (its last count): released, nothing sent.
  void local_release();

  // A shared lock's downgrade (src/recipes/shared_mutex.cpp): its mark, an ephemeral node of
  // ours deleted at the release (ahead of our node, in the same segment) and at a loss.
  /// From now on the release deletes `mark` too.
  void set_downgrade_mark(std::string mark) { r_->machine().set_downgrade_mark(std::move(mark)); }
  /// `mark` is known not to exist (its create failed for sure): nothing to delete.
  void forget_downgrade_mark(const std::string& mark) noexcept { r_->machine().forget_downgrade_mark(mark); }
  /// The downgrade committed: a read hold from now on, unless released meanwhile.
  void downgraded() noexcept {
    if (machine().status() != lock_status::released) kind_ = lock_kind::read;
  }

 private:
  friend struct hold_hook;
  using runner_type = runner<hold_machine, hold_hook>;
  static std::shared_ptr<hold> make(std::shared_ptr<session_impl> s, hold_grant g, hold_machine::params p);
  bool is_local() const noexcept { return local_queue_owner_ != nullptr; }
  void execute(const hold_machine::actions& step) { r_->execute(step); }
  /// The machine's outcomes (hold_outcome).
  void on_outcome(const sansio::request& a);
  /// While a release is owed the guard may be gone (release_pending): the session keeps us
  /// until the delete is settled, so that something sends it after the reconnect.
  void settle_owed();
  /// Completes the lost and deadline waits on this hold with `ec`: it ended.
  void complete_lost_waiters(error_code ec);
  /// The end of a hold its owner gave back (its last count), whoever releases the node:
  /// counted in the metrics, its waits (lost, deadline, revoked) answered already_released,
  /// its timer stopped, a local hold's revocation watch removed.
  void end_released();
  /// hold_outcome::revoked: every revocation waiter gets `ec`.
  void complete_revocation_waiters(error_code ec);

  std::shared_ptr<session_impl> s_;
  std::int64_t token_ = 0;
  lock_kind kind_ = lock_kind::exclusive;
  int count_ = 1;
  std::shared_ptr<runner_type> r_;  // the machine, carried out
  std::vector<pending<void(error_code)>::ptr> lost_waiters_;
  // async_wait_deadline: completed when hold_fsm says its waiter is due (deadline_near)
  struct deadline_waiter {
    std::uint64_t id;
    pending<void(error_code)>::ptr op;
  };
  std::vector<deadline_waiter> deadline_waiters_;
  std::uint64_t next_waiter_ = 0;
  pending<void(error_code)>::ptr release_waiter_;
  asio::cancellation_signal lost_signal_;
  // Not a member pointing at ourselves: a cycle that only a reply or a state event breaks leaks
  // when the io_context is destroyed without them (the session keeps us: keep_owed).
  bool owed_ = false;
  hold_meter metrics_;  // counts our end (released or lost) in the session's lock metrics
  std::shared_ptr<local_queue> local_queue_owner_;  // a local hold's queue (see local())
  // lock_guard::async_wait_revoked (src/lock/revocation.cpp); a request nobody waited for while
  // keep_data_through_revocation wrote over it is kept for the next waiter (unheard_).
  std::vector<pending<void(error_code)>::ptr> revocation_waiters_;
  bool unheard_ = false;
};

template <class Runner>
void hold_hook::on_outcome(Runner&, const sansio::request& a) {
  if (auto h = owner.lock()) h->on_outcome(a);
}
template <class Runner>
void hold_hook::after_step(Runner&) {
  if (auto h = owner.lock()) h->settle_owed();
}

/// A guard on a new hold.
lock_guard make_guard(std::shared_ptr<hold> h);

/// Starts an operation on a held lock from any thread: f(op) runs on the session's executor, `op`
/// completing `handler`, unless the hold has ended: then `op` completes at once with
/// already_released, or with `lost` (empty: the loss as the hold names it, with its cause).
template <class F>
void on_open_hold(const std::shared_ptr<hold>& h, void_handler handler, F f, error_code lost = {}) {
  on_executor(h->session()->executor(), std::move(handler), [h, f = std::move(f), lost](auto handler) mutable {
    auto op = pending<void(error_code)>::make(std::move(handler), h->session()->executor());
    switch (h->machine().status()) {
      case lock_status::released: return op->complete(errc::already_released);
      case lock_status::lost: return op->complete(lost ? lost : h->machine().lost_error());
      default: f(std::move(op));
    }
  });
}

}  // namespace zklock::detail
