// The two-level lock's local queue (mutex_options::local_queue) as a sans-I/O state machine:
// the acquires of one mutex object wait in a local FIFO behind at most one ZooKeeper node of
// theirs, are handed the lock locally while that node is held, and give the node up for
// another process after max_local_handoffs grants. Inputs: acquires, cancellations, local
// releases, the node's acquire / release / loss, and what a listing of the lock dir says of
// who waits behind our node; outputs: the grants and failures, and the node's requests. The
// runner carries them out for the queue (local_queue_machine below, src/lock/local_queue.cpp); unit and property tests walk every
// interleaving without a server.
//
// Rules it keeps:
//  - One local holder at a time; grants in FIFO order of the acquires still waiting.
//  - At most one node: a new node acquire starts only after the previous one completed and
//    its node (if any) was released.
//  - A local handoff (a release with a local waiter next, our node held) sends nothing.
//  - Fairness: a node grants at most max_local_handoffs local holders (its first, from
//    ZooKeeper, counted) unless a listing of the lock dir, made while we held it and not since
//    invalidated by its child watch, showed nobody else queued. Past that number, with
//    another process queued or not yet known, the node is released and our remaining waiters
//    queue again behind the others with a new node. So: once our session has seen another
//    process's node (our listing, or the child watch's event and the listing after it), our
//    process makes at most max_local_handoffs more grants before that process is served;
//    the grants counted include those before it was seen.
//  - A try-acquire never waits behind a local holder or waiter (lock_busy at once, nothing
//    queued); alone, it gets a try-once node acquire that leaves nothing behind when busy. A
//    try-once acquire's failure fails its waiter only: the waiters queued behind it meanwhile
//    get a waiting acquire.
//  - Loss: the local holder is told; when the session ended every waiter fails with that
//    error (as the mutex's waiters do); when the session lives (node deleted, validity
//    deadline passed) the waiters stay queued: the lost node is released once its local
//    holder lets go, and a new one is acquired for them.
//  - The session's end reaches every state, a loss already told or not (a node lost at its
//    validity deadline, then the session expired): every waiter fails with that error, the
//    holder of a node still held is lost, an acquire in flight is cancelled. The lost holder
//    stays the local holder until it lets go (no local overlap with a holder told late); then
//    the node is released and the queue serves the acquires of a new session as at its start.
#pragma once

#include "sansio/request.hpp"

#include <zklock/error.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace zklock::detail {

/// What local_queue_fsm asks beside its one request (watch_queue: request::get_children of the
/// lock dir, path empty: the runner's, with a child watch in `queue_watch_slot`: report
/// on_queue / on_queue_error, and on_queue_changed once it fires): its node's acquire and
/// release are operations (lock runners), the rest its waiters' outcomes. As request::notify,
/// `id` the waiter, `ec`, `value` the grant's generation or try_once.
enum class local_outcome : std::uint8_t {
  acquire_node,  ///< acquire a node for the queue (`value` 1: try_once, never wait, nothing left when busy)
  cancel_node,   ///< cancel the node acquire in flight (nobody waits for it any more)
  release_node,  ///< release our node; report on_node_released once its delete is settled
  grant,         ///< waiter `id` holds the lock now, with local generation `value` on this node
  fail,          ///< waiter `id` completes with `ec` (left the queue)
  lose_holder,   ///< the local holder `id`'s guard turns lost (`ec`)
};

class local_queue_fsm {
 public:
  using actions = std::vector<sansio::request>;
  static constexpr std::uint8_t queue_watch_slot = 0;
  /// The local generation fits in the fencing token's low 16 bits: a node grants at most this
  /// many local holders, then is given up (as for fairness) and a new one taken.
  static constexpr std::uint32_t max_generations = 1u << 16;

  /// `max_local_handoffs` below 1 counts as 1.
  explicit local_queue_fsm(int max_local_handoffs) noexcept
      : max_grants_(max_local_handoffs < 1 ? 1u : static_cast<std::uint32_t>(max_local_handoffs)) {}

  /// A new acquire `id` (unique) joins the queue. A try-acquire (`try_once`) fails with
  /// lock_busy at once when a local holder or waiter is there.
  actions enqueue(std::uint64_t id, bool try_once);
  /// Waiter `id` gives up (cancellation, its timeout): it leaves the queue at once with
  /// `reason`. Unknown or already granted ids are ignored.
  actions cancel(std::uint64_t id, error_code reason);
  /// The local holder `id` released its hold.
  actions release(std::uint64_t id);
  /// The node acquire completed: ec empty means our node is held.
  actions on_node_acquired(error_code ec);
  /// Our node's release is settled (deleted, or owed in the background while disconnected).
  actions on_node_released();
  /// Our node is lost. `session_end`: errc::session_expired / session_closed when the session
  /// ended, empty when it lives (node deleted by someone else, validity deadline passed).
  actions on_node_lost(error_code session_end);
  /// The session ended (closed, expired, or replaced by a new one): `ec` is the error its
  /// waiters get (session_end.hpp). Any state; told once per session by the runner.
  actions on_session_ended(error_code ec);
  /// Reply to watch_queue: whether another contender than our node is in the lock dir.
  actions on_queue(bool others_waiting);
  /// watch_queue failed: counted as "someone may wait" (the fair choice).
  actions on_queue_error();
  /// The child watch of watch_queue fired: what we knew of the queue is stale.
  actions on_queue_changed();

  std::optional<std::uint64_t> holder() const noexcept { return holder_; }
  std::size_t waiting() const noexcept { return queue_.size(); }
  /// Local grants made on the current node (0 when none is held).
  std::uint32_t grants_on_node() const noexcept { return grants_; }
  /// Whether a node of ours may be in the lock dir (acquiring, held, lost or releasing).
  bool node_present() const noexcept { return node_ != node_state::none; }

 private:
  enum class node_state { none, acquiring, held, lost, releasing };
  enum class others { unknown, none, some };
  struct waiter {
    std::uint64_t id;
    bool try_once;
  };

  void next(actions& out);
  void grant_head(actions& out);
  void release_node(actions& out);
  void fail_all(actions& out, error_code ec);
  bool may_hand_off() const noexcept;

  std::uint32_t max_grants_;
  std::deque<waiter> queue_;
  std::optional<std::uint64_t> holder_;
  node_state node_ = node_state::none;
  bool cancel_sent_ = false;   // cancel_node sent for the acquire in flight
  bool acquire_try_ = false;   // the acquire in flight is try-once
  std::uint32_t grants_ = 0;   // local grants on the current node
  others others_ = others::unknown;
  bool listing_ = false;       // a watch_queue is in flight
};

/// local_queue_fsm as the runner's machine (src/lock/runner.hpp): its listing of the lock dir
/// (get_children with the child watch in queue_watch_slot, tagged with the node's epoch: the
/// listing or the event of a node given up since is stale), the watch waited for, the rest its
/// outcomes for the queue's hook. The queue's own inputs go to fsm() and back through step().
class local_queue_machine {
 public:
  using actions = std::vector<sansio::request>;
  local_queue_machine(std::string dir, int max_local_handoffs) : dir_(std::move(dir)), fsm_(max_local_handoffs) {}

  local_queue_fsm& fsm() noexcept { return fsm_; }
  /// fsm()'s requests as the runner carries them out.
  actions step(const local_queue_fsm::actions& in) const;
  actions on(const sansio::input& in);

  /// A new node acquire (or a release): what was heard of the previous node is stale.
  std::uint64_t next_epoch() noexcept { return ++epoch_; }
  std::uint64_t epoch() const noexcept { return epoch_; }
  /// Our node's name, as a listing shows it.
  void node_acquired(std::string name) { node_name_ = std::move(name); }

 private:
  std::string dir_;
  std::string node_name_;
  std::uint64_t epoch_ = 0;
  local_queue_fsm fsm_;
};

}  // namespace zklock::detail
