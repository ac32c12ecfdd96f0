// One held lock (shared by the guards of a reentrant owner): carries out hold_fsm's actions,
// watches the session and the validity deadline. Every recipe's guard holds one.
//
// The release path, top to bottom: lock_guard::async_release takes a release_ticket (guard.cpp)
// -> hold::release_one (a local hold: release_local_hold, where its queue chooses between a
// local handoff and the node's release) -> hold_fsm::release decides -> hold::run carries out its actions
// (send_release: the delete) -> the reply -> hold_fsm::on_release_reply -> run again
// (complete_release: the caller's handler).
#pragma once

#include "engine/hooks.hpp"
#include "engine/lock_metrics.hpp"
#include "engine/session_impl.hpp"
#include "sansio/hold_fsm.hpp"
#include "sansio/revocation_fsm.hpp"

#include <zklock/lock_guard.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  /// now). Its status is driven by the queue (the local_ inputs below); its last release goes to
  /// the queue (release_local_hold), which decides between a local handoff and the node's release.
  static std::shared_ptr<hold> local(std::shared_ptr<session_impl> s, hold_grant g, bool held,
                                     std::shared_ptr<local_queue> queue);
  hold(private_tag, std::shared_ptr<session_impl> s, hold_grant g, bool connected, bool local);

  const std::shared_ptr<session_impl>& session() const noexcept { return s_; }
  const std::string& node() const noexcept { return node_; }
  std::int64_t fencing_token() const noexcept { return token_; }
  lock_kind kind() const noexcept { return kind_; }
  /// How many guards of a reentrant owner share this hold.
  int count() const noexcept { return count_; }
  /// The ZooKeeper session our node belongs to.
  std::int64_t node_session() const noexcept { return session_id_; }
  /// The state machine, to read (its status, lost_error, release_failure).
  const hold_fsm& machine() const noexcept { return fsm_; }
  /// What the guard says: the state machine's status, made consistent with the session's
  /// current state (its own event may still be queued).
  lock_status status() const noexcept;
  /// Whether the guard still holds (status held or maybe_lost).
  bool owns() const noexcept;
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

  // A local hold's inputs, from its queue (it never sends: the node is the queue's).
  void local_suspended();
  void local_connected(bool same_session);
  void local_session_ended(error_code why);
  /// Its owner gave it back (its last count): released, nothing sent.
  void local_release();

  // A shared lock's downgrade (src/recipes/shared_mutex.cpp): its mark, an ephemeral node of
  // ours deleted at the release (ahead of our node, in the same segment) and at a loss.
  /// From now on the release deletes `mark` too.
  void set_downgrade_mark(std::string mark) { downgrade_mark_ = std::move(mark); }
  /// `mark` is known not to exist (its create failed for sure): nothing to delete.
  void forget_downgrade_mark(const std::string& mark) noexcept {
    if (downgrade_mark_ == mark) downgrade_mark_.clear();
  }
  /// The downgrade committed: a read hold from now on, unless released meanwhile.
  void downgraded() noexcept {
    if (fsm_.status() != lock_status::released) kind_ = lock_kind::read;
  }

 private:
  bool is_local() const noexcept { return local_queue_owner_ != nullptr; }
  /// Starts following the session and the validity deadline.
  void start();
  void on_session_state(session_state st);
  /// Feeds hold_fsm::on_clock what the session says now.
  void check_clock();
  hold_clock clock() const;
  bool node_ours(const std::optional<node_stat>& st) const { return st && st->ephemeral_owner == session_id_; }
  void check_node();
  /// Watches our node (getData with a watch): its deletion by anyone else is this hold's loss.
  void watch_node();
  void follow_node_watch();
  void send_keepalive();
  void run(const hold_fsm::actions& actions);
  /// hold_fsm's notify requests (hold_outcome).
  void on_outcome(const sansio::request& a);
  void send_release();
  /// Completes the waits on this hold (lost, deadline, revoked) with `ec`: it ended.
  void complete_lost_waiters(error_code ec);
  /// The end of a hold its owner gave back (its last count), whoever releases the node:
  /// counted in the metrics, its timer stopped, its waits (lost, deadline, revoked) answered
  /// already_released, a local hold's revocation watch removed.
  void end_released();
  /// Deletes our downgrade mark, if any.
  void remove_downgrade_mark();
  // revocation (src/lock/revocation.cpp)
  void run_revocation(const revocation_fsm::actions& actions);
  /// revocation_outcome::complete_waiters: every revocation waiter gets `ec`.
  void complete_revocation_waiters(error_code ec);
  /// A revocation read of `generation` answered through our node's watch (not a local hold).
  void read_through_node_watch(std::uint64_t generation);
  /// Answers a revocation read (`generation`; 0: none) with what a read of our node said.
  void answer_revocation_read(std::uint64_t generation, error_code ec, std::string_view data, std::int32_t version);
  void write_back_kept_data();
  /// A local hold that ended: removes its revocation watch from the node it leaves behind.
  void drop_revoke_watch();

  std::shared_ptr<session_impl> s_;
  std::string node_;
  std::int64_t token_ = 0;
  std::int64_t session_id_ = 0;  // the ZooKeeper session our node belongs to
  lock_kind kind_ = lock_kind::exclusive;
  hold_fsm fsm_;
  int count_ = 1;
  session_listener listener_;  // on_session_state
  std::vector<pending<void(error_code)>::ptr> lost_waiters_;
  // async_wait_deadline: completed when hold_fsm says its waiter is due (deadline_near)
  struct deadline_waiter {
    std::uint64_t id;
    pending<void(error_code)>::ptr op;
  };
  std::vector<deadline_waiter> deadline_waiters_;
  std::uint64_t next_waiter_ = 0;
  pending<void(error_code)>::ptr release_waiter_;
  asio::steady_timer deadline_timer_;  // hold_fsm::clock_timer: the deadline, the keepalive, a waiter
  asio::steady_timer backoff_timer_;  // hold_fsm::backoff_timer: a delete the server refused for now
  asio::cancellation_signal lost_signal_;
  // While a release is owed the guard may be gone (release_pending), and the session listener
  // only holds us weakly: the session keeps us (keep_owed) until the delete is settled, so
  // something sends it after the reconnect. Not a member pointing at ourselves: a cycle that
  // only a reply or a state event breaks leaks when the io_context is destroyed without them.
  bool owed_ = false;
  hold_meter metrics_;  // counts our end (released or lost) in the session's lock metrics
  std::shared_ptr<local_queue> local_queue_owner_;  // a local hold's queue (see local())

  // lock_guard::async_wait_revoked (src/lock/revocation.cpp): read through node_watch_ (below);
  // a local hold's own data watch on its queue's node (watch), set only while someone waits.
  struct revocation_state {
    revocation_fsm fsm;
    std::vector<pending<void(error_code)>::ptr> waiters;
    boost::intrusive_ptr<watch_state> watch;
    std::uint64_t read = 0;      // a revocation read (its generation) answered by node_watch_'s reply
    std::uint64_t watching = 0;  // the revocation generation whose watch is node_watch_
    // An election's leader keeps its identity in its node: written back after each request
    // (keep_data_through_revocation); a request nobody waited for then is kept for the next waiter.
    std::optional<std::string> kept_data;
    bool unheard = false;
  };
  revocation_state revocation_;
  // A data watch on our node for the hold's whole life (from the acquire's create on): its
  // deletion by anyone but us is heard at once, whatever else the session does. It is also the
  // revocation's watch (one watch per node): the data its getData read answers a revocation
  // read while it has not fired (no write since), and its re-read after a change answers the next.
  boost::intrusive_ptr<watch_state> node_watch_;
  struct node_read {
    std::string data;
    std::int32_t version = 0;
  };
  std::optional<node_read> node_data_;  // what the getData that set node_watch_ read
  bool watches_node_ = true;            // false: node_watch_ is never set (lock_dir::watch_own_node)
  bool node_read_pending_ = false;      // that getData's reply is still to come
  // A shared lock's downgraded write hold: the path of its downgrade mark; empty when there is none.
  std::string downgrade_mark_;
};

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
