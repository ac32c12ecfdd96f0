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

struct hold : std::enable_shared_from_this<hold> {
  std::shared_ptr<session_impl> s;
  std::string node;
  std::int64_t token = 0;
  std::int64_t session_id = 0;  // the ZooKeeper session our node belongs to
  lock_kind kind = lock_kind::exclusive;
  hold_fsm fsm;
  int count = 1;
  session_listener listener;  // on_session_state
  std::vector<pending<void(error_code)>::ptr> lost_waiters;
  // async_wait_deadline: completed when hold_fsm says its waiter is due (deadline_near)
  struct deadline_waiter {
    std::uint64_t id;
    pending<void(error_code)>::ptr op;
  };
  std::vector<deadline_waiter> deadline_waiters;
  std::uint64_t next_waiter = 0;
  pending<void(error_code)>::ptr release_waiter;
  asio::steady_timer deadline_timer;  // hold_action::arm_timer: the deadline, the keepalive, a waiter
  asio::steady_timer backoff_timer;  // a delete the server refused for now (hold_action::backoff_release)
  asio::cancellation_signal lost_signal;
  // While a release is owed the guard may be gone (release_pending), and the session listener
  // only holds us weakly: the session keeps us (keep_owed) until the delete is settled, so
  // something sends it after the reconnect. Not a member pointing at ourselves: a cycle that
  // only a reply or a state event breaks leaks when the io_context is destroyed without them.
  bool owed = false;
  hold_meter metrics;  // counts our end (released or lost) in the session's lock metrics

  // A local hold (mutex_options::local_queue, src/lock/local_queue.cpp): one grant of a
  // mutex's local queue on the node that the queue's own ZooKeeper hold keeps. Its last
  // release goes to that queue (release_local_hold), which decides between a local handoff and
  // the node's release. Its status is driven from outside through apply (never start()ed).
  std::shared_ptr<local_queue> local_queue_owner;
  bool is_local() const noexcept { return local_queue_owner != nullptr; }

  // lock_guard::async_wait_revoked (src/lock/revocation.cpp): read through node_watch (below);
  // a local hold's own data watch on its queue's node (revoke_watch), set only while someone waits.
  revocation_fsm revocation;
  std::vector<pending<void(error_code)>::ptr> revoke_waiters;
  boost::intrusive_ptr<watch_state> revoke_watch;
  // A data watch on our node for the hold's whole life (from the acquire's create on): its
  // deletion by anyone but us is heard at once, whatever else the session does. It is also the
  // revocation's watch (one watch per node): the data its getData read answers a revocation
  // read while it has not fired (no write since), and its re-read after a change answers the next.
  boost::intrusive_ptr<watch_state> node_watch;
  struct node_read {
    std::string data;
    std::int32_t version = 0;
  };
  std::optional<node_read> node_data;  // what the getData that set node_watch read
  bool watches_node = true;            // false: node_watch is never set (lock_dir::watch_own_node)
  bool node_read_pending = false;      // that getData's reply is still to come
  std::uint64_t revoke_read = 0;       // a revocation read (its generation) answered by that reply
  std::uint64_t revoke_watching = 0;   // the revocation generation whose watch is node_watch
  // An election's leader keeps its identity in its node: written back after each request
  // (keep_data_through_revocation); a request nobody waited for then is kept for the next waiter.
  std::optional<std::string> kept_data;
  bool revoke_unheard = false;
  // A shared lock's downgraded write hold (src/recipes/shared_mutex.cpp): the path of its
  // downgrade mark, an ephemeral node of ours deleted at the release (ahead of our node, in
  // the same segment) and at a loss; empty when there is none.
  std::string downgrade_mark;

  /// `local`: a local queue's hold (see local_queue_owner).
  hold(std::shared_ptr<session_impl> session, bool connected, bool local = false);

  /// Starts following the session and the validity deadline (after the fields are set).
  void start();
  /// Gives back one hold of a reentrant owner; the last one releases the lock. `h` may be
  /// empty (a guard destroyed without release).
  void release_one(void_handler h);
  /// What the guard says: the state machine's status, made consistent with the session's
  /// current state (its own event may still be queued).
  lock_status status() const noexcept;
  /// Whether the guard still holds (status held or maybe_lost).
  bool owns() const noexcept;
  /// Completes `op` once the validity deadline is `lead` away with no reply moving it on (or
  /// with lock_lost / already_released first).
  void wait_deadline(std::chrono::steady_clock::duration lead, pending<void(error_code)>::ptr op);
  /// Forgets the async_wait_deadline waiter `op` (cancelled).
  void forget_deadline_waiter(const pending<void(error_code)>* op);
  /// Carries out actions of this hold's state machine fed from outside (a local hold).
  void apply(const hold_fsm::actions& actions) { run(actions); }
  /// Completes `op` when a revocation request reaches our node (or the hold ends first).
  void wait_revoked(pending<void(error_code)>::ptr op);
  /// Watches our node for revocation requests while we hold, and writes `data` back over each
  /// one: a request asks us to give the lock back, it does not replace who holds.
  void keep_data_through_revocation(std::string data);
  /// Completes the waits on this hold (lost, deadline, revoked) with `ec`: it ended.
  void complete_lost_waiters(error_code ec);
  /// Takes over the acquire's watch on our node (set from its create on; null: none, then the
  /// hold sets one). `reply_pending`: its getData's reply is still to come (on_node_watch_reply).
  /// `last_read`: what its getData read (when its reply came).
  void adopt_node_watch(boost::intrusive_ptr<watch_state> w, bool reply_pending, const data_result* last_read = nullptr);
  /// Reply to the getData that set our node's watch: no node means deleted by someone else.
  void on_node_watch_reply(error_code ec, const data_result& d);
  /// A local hold that ended: removes its revocation watch from the node it leaves behind.
  void drop_revoke_watch();
  /// Deletes our downgrade mark, if any (src/recipes/shared_mutex.cpp).
  void remove_downgrade_mark();
  /// The end of a hold its owner gave back (its last count), whoever releases the node:
  /// counted in the metrics, its timer stopped, its waits (lost, deadline, revoked) answered
  /// already_released, a local hold's revocation watch removed.
  void end_released();

 private:
  void on_session_state(session_state st);
  /// Feeds hold_fsm::on_clock what the session says now.
  void check_clock();
  hold_clock clock() const;
  bool node_ours(const std::optional<node_stat>& st) const { return st && st->ephemeral_owner == session_id; }
  void check_node();
  /// Watches our node (getData with a watch): its deletion by anyone else is this hold's loss.
  void watch_node();
  void follow_node_watch();
  void send_keepalive();
  void run(const hold_fsm::actions& actions);
  void send_release();
  void run_revocation(const revocation_fsm::actions& actions);
  /// A revocation read of `generation` answered through our node's watch (not a local hold).
  void read_through_node_watch(std::uint64_t generation);
  /// Answers a revocation read (`generation`; 0: none) with what a read of our node said.
  void answer_revocation_read(std::uint64_t generation, error_code ec, std::string_view data, std::int32_t version);
  void write_back_kept_data();
};

/// A guard on a new hold.
lock_guard make_guard(std::shared_ptr<hold> h);

/// Starts an operation on a held lock from any thread: f(op) runs on the session's executor, `op`
/// completing `handler`, unless the hold has ended: then `op` completes at once with
/// already_released, or with `lost` (empty: the loss as the hold names it, with its cause).
template <class F>
void on_open_hold(const std::shared_ptr<hold>& h, void_handler handler, F f, error_code lost = {}) {
  on_executor(h->s->executor(), std::move(handler), [h, f = std::move(f), lost](auto handler) mutable {
    auto op = pending<void(error_code)>::make(std::move(handler), h->s->executor());
    switch (h->fsm.status()) {
      case lock_status::released: return op->complete(errc::already_released);
      case lock_status::lost: return op->complete(lost ? lost : h->fsm.lost_error());
      default: f(std::move(op));
    }
  });
}

}  // namespace zklock::detail
