// A held lock as one machine for the runner (src/lock/runner.hpp): hold_fsm (lost-tracking, the
// validity deadline and its keepalive, the release) and revocation_fsm (async_wait_revoked) as
// member objects, with what ties them to the session:
//  - the session's state, followed once (input::session): suspended -> maybe_lost, connected
//    again -> held (our node checked, its watch set again), expired or closed -> lost naming
//    the cause (lost_cause_of); status() says the same of the state seen now;
//  - our node's data watch in a slot for the hold's whole life (from the acquire's create on:
//    adopt_node_watch): its deletion by anyone but us is the loss, heard at once; it is also the
//    revocation's watch (one watch per node), whose last read answers a revocation read;
//  - the keepalive and the reconnect's check of our node (ours: our session's ephemeral);
//  - the release's delete (after a downgrade mark's, in the same step), the mark's deletion
//    at a loss, and the kept data written back over a revocation request.
// A local hold (mutex_options::local_queue) is a mode of the same machine: it follows the
// session's connection (maybe_lost while suspended) but sends nothing for the node, which is its
// queue's (no watch, no keepalive, no delete); its queue tells its loss (lose()); its
// revocation reads set a watch of its own, removed when the hold ends.
#pragma once

#include "sansio/hold_fsm.hpp"
#include "sansio/request.hpp"
#include "sansio/revocation_fsm.hpp"

#include <optional>
#include <string>

namespace zklock::detail {

class hold_machine {
 public:
  using actions = std::vector<sansio::request>;
  using view = sansio::session_view;
  /// Watch slots (timer slots: hold_fsm::clock_timer, hold_fsm::backoff_timer).
  static constexpr std::uint8_t node_watch = 0, revoke_watch = 1;
  /// Tags: hold_fsm's, then ours; a revocation's carry its generation above revoke_*.
  enum tag : std::uint64_t {
    check = 16, node_read, plain_read, node_event, release_reply, mark_removed, write_back, write_back_connection,
    revocation_connection, revoke_watch_dropped,
  };
  static constexpr std::uint64_t revoke_read = 1ull << 40, revoke_event = 2ull << 40, revoke_removed = 3ull << 40;

  struct params {
    std::string node;            ///< our lock node
    std::int64_t session_id = 0; ///< the ZooKeeper session it belongs to
    bool connected = true;       ///< held (false: maybe_lost, granted while the connection dropped)
    bool local = false;          ///< a local queue's hold
    bool watches_node = true;    ///< false: our node is never watched (lock_dir::watch_own_node)
  };
  explicit hold_machine(params p)
      : node_(std::move(p.node)), session_id_(p.session_id), fsm_(p.connected, p.local), local_(p.local),
        watches_node_(p.watches_node) {}

  /// Follows the session from now on (and the validity deadline).
  actions start(const view& now);
  actions on(const sansio::input& in);

  // The owner's calls, each with the session now.
  /// The owner gives the lock back (its last count).
  actions release(bool caller_waits, const view& now);
  /// After release(), on a hold that was open: its timer stops, its revocation waiters are
  /// answered already_released, a local hold's revocation watch goes.
  actions end_released(const view& now);
  /// A local hold's loss, told by its queue.
  actions lose(error_code why);
  actions add_deadline_waiter(std::uint64_t id, std::chrono::steady_clock::duration lead, const view& now);
  void remove_deadline_waiter(std::uint64_t id) { fsm_.remove_deadline_waiter(id); }
  actions add_revocation_waiter(const view& now);
  actions remove_revocation_waiter(const view& now);
  /// keep_data_through_revocation: `data` written back over each revocation request.
  actions keep_data(std::string data, const view& now);
  /// The acquire's watch on our node, put in node_watch by the runner (`set` false: none, the
  /// hold sets one). `reply_pending`: its getData's reply comes as a reply tagged node_read.
  actions adopt_node_watch(bool set, bool reply_pending, const data_result* last_read, const view& now);
  void set_downgrade_mark(std::string mark) { mark_ = std::move(mark); }
  void forget_downgrade_mark(const std::string& mark) noexcept {
    if (mark_ == mark) mark_.clear();
  }

  const hold_fsm& fsm() const noexcept { return fsm_; }
  const revocation_fsm& revocation() const noexcept { return revocation_; }
  const std::string& node() const noexcept { return node_; }
  std::int64_t node_session() const noexcept { return session_id_; }
  bool local() const noexcept { return local_; }
  bool keeps_data() const noexcept { return kept_.has_value(); }
  /// The machine's status made consistent with the session's state `now` (its own event may
  /// still be on its way): suspended or connecting -> maybe_lost; over -> lost.
  lock_status status(session_state now) const noexcept;
  bool owns(session_state now) const noexcept {
    auto st = status(now);
    return st == lock_status::held || st == lock_status::maybe_lost;
  }

 private:
  actions on_session(session_state told);
  actions on_reply(const sansio::input& in);
  actions on_node_read(error_code ec, const data_result* d);
  actions on_node_event(const sansio::input& in);
  /// hold_fsm's requests as the runner carries them out (the node's path, the release's deletes).
  actions held(const hold_fsm::actions& in);
  /// revocation_fsm's, likewise (through our node's watch, or a local hold's own).
  actions revoking(const revocation_fsm::actions& in);
  actions watch_node();
  actions check_node();
  actions remove_mark();
  actions read_through_node_watch(std::uint64_t generation);
  actions answer_revocation_read(std::uint64_t generation, error_code ec, std::string_view data, std::int32_t version);
  actions drop_revoke_watch();
  hold_clock clock() const;
  bool connected() const noexcept { return is_connected(seen_.state); }
  bool node_ours(const sansio::input& in) const {
    auto st = in.stat();
    return st && st->ephemeral_owner == session_id_;
  }

  std::string node_;
  std::int64_t session_id_;
  hold_fsm fsm_;
  revocation_fsm revocation_;
  view seen_{};  // the session when the last input or call came
  bool local_;
  bool watches_node_;
  // our node's watch (node_watch)
  bool node_watch_set_ = false;     // registered and not fired
  bool node_read_pending_ = false;  // the getData that sets it has not answered
  struct node_read_result {
    std::string data;
    std::int32_t version = 0;
  };
  std::optional<node_read_result> node_data_;  // what that getData read
  // revocation
  std::uint64_t rev_read_ = 0;      // a revocation read (its generation) answered by node_read's reply
  std::uint64_t rev_watching_ = 0;  // the revocation generation whose watch is node_watch
  bool revoke_watch_set_ = false;   // a local hold's own revocation watch
  std::optional<std::string> kept_;  // keep_data
  // a shared lock's downgrade mark: deleted at the release (ahead of our node) and at a loss
  std::string mark_;
  std::string mark_removing_;
};

}  // namespace zklock::detail
