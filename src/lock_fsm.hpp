// The exclusive-lock recipe as a sans-I/O state machine: inputs are replies, watch events and
// session changes; outputs are the requests to send next. No Asio, no ZooKeeper calls: the
// mutex's async operation carries the actions out, and unit tests walk every interleaving.
//
// Recipe (ZooKeeper "Locks" recipe, Curator-compatible node names):
//  1. create "<lock>/_c_<id>-lock-" EPHEMERAL_SEQUENTIAL and, pipelined behind it, list <lock>;
//  2. if our node has the lowest sequence among the contenders, we hold the lock;
//  3. else set a data watch (getData) on the next-lower node only, and wait for it to go;
//     if it was the head of the queue when we began to watch it, or it is a zklock node whose
//     data changed (a zklock holder releases with one transaction that writes release_marker
//     into its node and deletes it), we hold the lock; after any other deletion list again
//     (it may have given up rather than released).
#pragma once

#include <zklock/error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// Sequence number of a lock contender's node name: names ending in "-lock-<10 digits>"
/// (Curator, zklock) or "__lock__<10 digits>" (kazoo); nullopt for anything else (ignored).
std::optional<std::int64_t> lock_sequence(std::string_view name) noexcept;

struct contender {
  std::string name;
  std::int64_t sequence;
};
/// The contenders among `children`, in queue order (sequence, then name).
std::vector<contender> queue_order(const std::vector<std::string>& children);

enum class lock_mode { wait, try_once };

/// Data of a zklock contender's node when created (the protocol's version: nodes of another
/// version are treated like Curator's), and what a holder writes into it in the transaction
/// that releases the lock: multi(setData(node, release_marker), delete(node)). Only a holder
/// ever releases (a waiter that gives up just deletes its node), and nothing else writes to a
/// zklock node (Curator and kazoo never change their nodes' data), so a data-changed event on
/// a predecessor created with contender_marker says: the holder released, nobody is ahead of
/// us. The successor takes the lock straight from that event, without a listing, and the
/// release costs no extra write (the transaction is one log entry).
inline constexpr std::string_view contender_marker = "zklock/2";
inline constexpr std::string_view release_marker = "zklock/2:released";

/// What the predecessor's data says about it.
enum class predecessor_data { other, zklock_contender };
inline predecessor_data classify_predecessor(std::string_view data) noexcept {
  return data == contender_marker ? predecessor_data::zklock_contender : predecessor_data::other;
}

struct lock_action {
  enum kind {
    create_and_list,    ///< create `path` (ephemeral sequential) and list `dir`, pipelined
    list,               ///< list `dir`
    sync_and_list,      ///< sync `dir`, then list it (pipelined): the listing sees every write of ours
    ensure_parents,     ///< create `dir` and its missing ancestors as containers
    watch_predecessor,  ///< getData with watch on `path`
    remove_watch,       ///< remove our data watch on `path`
    delete_node,        ///< delete `path`
    stat_node,          ///< exists `path` (to learn its czxid after recovery)
    wait_reconnect,     ///< nothing to send until the session is connected again
    complete,           ///< the operation is over: see lock_fsm::result()
  };
  kind type;
  std::string path;
};

struct lock_result {
  error_code ec;
  std::string node;            ///< full path of our lock node
  std::int64_t fencing_token = 0;  ///< czxid of our lock node
  /// Release with the marking transaction (see release_marker): we may have a successor. We
  /// waited behind someone, or our listing showed contenders behind us. Granted alone, a plain
  /// delete costs less; a waiter that queued meanwhile listed us as the head, so the deletion
  /// is its turn.
  bool mark_release = false;
};

class lock_fsm {
 public:
  using actions = std::vector<lock_action>;

  lock_fsm(std::string dir, std::string client_id, lock_mode mode);

  actions start();
  actions on_create(error_code ec, const std::string& created_path, std::int64_t czxid);
  actions on_children(error_code ec, const std::vector<std::string>& children);
  actions on_parents(error_code ec);
  /// Reply to watch_predecessor, with what the predecessor's data says.
  actions on_watch_set(error_code ec, predecessor_data data = predecessor_data::other);
  actions on_watch_event(bool deleted);         ///< the predecessor's watch fired: deleted or data changed
  actions on_watch_removed(error_code ec);
  actions on_deleted(error_code ec);
  /// Reply to stat_node: the node's czxid, and whether its ephemeral owner is our session (a
  /// node of another session is never adopted).
  actions on_stat(error_code ec, std::int64_t czxid, bool ours = true);
  actions on_reconnected();
  actions on_expired(error_code ec = errc::session_expired);
  /// Stop: cancellation (operation_aborted) or timeout (errc::lock_timeout). Cleans up (our
  /// node, our watch) before completing with `reason`.
  actions cancel(error_code reason);

  bool done() const noexcept { return phase_ == phase::done; }
  const lock_result& result() const noexcept { return result_; }
  const std::string& node_prefix() const noexcept { return prefix_; }
  const std::string& predecessor() const noexcept { return predecessor_; }
  bool predecessor_was_head() const noexcept { return predecessor_was_head_; }

 private:
  enum class phase { idle, acquiring, cleaning, done };
  enum class retry { none, create, list, delete_node, remove_watch };

  actions evaluate(const std::vector<std::string>& children);
  actions acquired();
  actions fail(error_code ec);          // clean up, then complete with ec
  actions finish_cleaning_if_idle();
  actions create_and_list();
  actions after_connection_loss(retry what);
  actions list_dir();  // after a lost create, behind a sync (protected-create recovery)

  std::string dir_, prefix_, create_path_;
  lock_mode mode_;
  phase phase_ = phase::idle;
  error_code reason_;           // completion error while cleaning

  std::string node_;            // our node's path once known
  std::int64_t czxid_ = 0;
  bool create_outcome_unknown_ = false;  // create lost with the connection
  bool pending_create_ = false, pending_list_ = false, pending_watch_ = false;
  bool pending_remove_ = false, pending_delete_ = false, pending_stat_ = false;
  bool watch_active_ = false;
  bool node_gone_ = false;      // deleted (or never created) during cleanup
  retry retry_ = retry::none;
  int parent_attempts_ = 0;
  std::string predecessor_;
  bool predecessor_was_head_ = false;
  bool predecessor_is_zklock_ = false;
  bool contenders_behind_ = false;  // our last listing showed nodes after ours
  lock_result result_;
};

}  // namespace zklock::detail
