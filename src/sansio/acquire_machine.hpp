// The acquire as the runner's machine (src/lock/runner.hpp): acquire_fsm's steps as the one
// request vocabulary (sansio/request.hpp), the runner's answers given back to acquire_fsm by what
// they answer (each request's tag), and what the runner used to decide around it, so that the
// simulator can walk it too:
//  - the session's view of the dir (dir_view.hpp): each listing merged, each deletion heard taken
//    out, a waiter's listing trimmed for its node, ask_view answered;
//  - the lock dir's creation (ensure_parents: the dir alone first, then every ancestor pipelined);
//  - the lock-delay beacon (create_beacon: once per session and lock object, its dir made when
//    missing, pipelined before our node);
//  - the stop's timers (the acquire's timeout, the stop's answer bound, the cleanup's backoff,
//    lock-delay's wait) and the session's state (followed while the acquire runs).
// The recipe's hook gets the outcomes (acquire_machine::outcome) and the completion.
#pragma once

#include "sansio/acquire_fsm.hpp"
#include "sansio/dir_view.hpp"
#include "sansio/request.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock::detail {

class acquire_machine {
 public:
  using requests = std::vector<sansio::request>;

  /// What the hook is told (notify; `path` the node it is about, `ec` why).
  enum class outcome : std::uint8_t {
    waited,              ///< a watch is set on a blocker (or the lease dir): the grant is a handoff
    requeued,            ///< our node `path` was deleted by someone else: we queue again
    cleanup_failed,      ///< the server refused to delete `path` for good (`ec`): it stays
    lock_delay_started,  ///< `path` (empty: a contender ahead) vanished with its session: the grant waits
    beacon_failed,       ///< the lock-delay beacon `path` could not be created (`ec`)
    answer_early,        ///< the caller gets `ec` now; the cleanup goes on (the completion is nobody's)
    own_watch_reply,     ///< our node's watch's reply (`ec`, own_reply()) after the grant: the hold's
  };
  /// Watch slots: our node's, the lease dir's, then one per watched blocker.
  static constexpr std::uint8_t own_slot = 0, dir_slot = 1, first_blocker_slot = 2;
  /// K, at most: a slot is one byte, and a watch whose removal is on its way keeps its slot
  /// (a larger K counts as this: run_acquire).
  static constexpr int max_watched_blockers = 120;
  /// K as asked (mutex_options::watched_blockers) -> K as carried out: 1 to max_watched_blockers.
  static constexpr int watched_blockers(int asked) noexcept {
    return asked < 1 ? 1 : asked > max_watched_blockers ? max_watched_blockers : asked;
  }
  /// Timer slots.
  static constexpr std::uint8_t timeout_timer = 0, backoff_timer = 1, lock_delay_timer = 2, stop_answer_timer = 3;

  /// What it needs of its surroundings.
  struct context {
    std::string dir;                  ///< the lock dir (acquire_fsm's)
    std::chrono::steady_clock::duration timeout = std::chrono::steady_clock::duration::max();
    std::string node_data;            ///< what our node is created with
    std::shared_ptr<dir_view> view;   ///< the session's view of the dir (held by us alone: `alone`)
    std::int64_t* beacon_session = nullptr;  ///< the lock object's: whose beacon was created (lock-delay)
    std::function<std::int64_t()> session_id;  ///< the session's id now
    std::function<grant_view()> at_grant;     ///< what the session says of a won grant
    bool connected = true;            ///< the session's state at the start
  };

  acquire_machine(acquire_fsm fsm, context c);

  /// The first step: follow the session, the timeout, then the acquire's first requests.
  requests start();
  requests on(const sansio::input& in);

  const acquire_fsm& fsm() const noexcept { return fsm_; }
  /// Our node's watch: its reply still on its way, what its reply read (set: the data), the last reply.
  bool own_reply_pending() const noexcept { return own_pending_; }
  const data_result* own_read() const noexcept { return own_read_ ? &*own_read_ : nullptr; }
  const data_result& own_reply() const noexcept { return own_reply_; }

 private:
  // What a reply answers (its tag's entry).
  enum class asked : std::uint8_t {
    create, list, parent_dir, parent_chain, blocker, own, dir_watch, removal, delete_node, stat,
    writer_owner, mark, reconnect, refresh, beacon, beacon_retry, owner, session_check, ignored,
  };
  struct asking {
    asked what;
    std::string path;
    std::int64_t extra = 0;  // a removal's slot, a session's id, a reconnect's generation
  };
  // Tags of their own: the timers, the session's changes, a slot's watch (watch_tag + slot).
  static constexpr std::uint64_t timeout_tag = 1, backoff_tag = 2, stop_tag = 3, follow_tag = 4, watch_tag = 16,
                                 first_reply_tag = 1000;

  requests translate(acquire_fsm::actions actions);
  void append(requests& out, const acquire_action& a);
  requests on_reply(const sansio::input& in);
  requests on_fired(const sansio::input& in);
  requests on_session(session_state now);
  requests beacon(bool parent_made);
  std::uint64_t ask(asked what, std::string path = {}, std::int64_t extra = 0);
  std::uint8_t blocker_slot(const std::string& path);  // its slot, a free one when it has none
  void free_blocker(const std::string& path);
  void heard_gone(const std::string& path);
  const std::string& dir() const noexcept { return dir_; }

  acquire_fsm fsm_;
  context c_;
  std::string dir_;
  std::uint64_t next_tag_ = first_reply_tag;
  std::map<std::uint64_t, asking> asked_;
  std::map<std::string, std::uint8_t> blocker_slots_;
  std::vector<std::string> slot_paths_ = std::vector<std::string>(first_blocker_slot);
  std::vector<bool> slot_used_ = std::vector<bool>(first_blocker_slot, true);
  std::uint64_t delay_tag_ = 0;   // the lock-delay wait running (a restart replaces it)
  bool connected_ = true;         // as the session's changes said
  std::uint64_t session_changes_ = 0;
  std::size_t chain_left_ = 0;    // ensure_parents: the ancestors' creates on their way
  error_code chain_error_;
  std::int64_t writer_owner_ = 0;  // check_downgrade: the writer's node's owner
  bool own_pending_ = false;
  std::optional<data_result> own_read_;
  data_result own_reply_;
  bool dir_removal_lost_ = false;  // the lease dir's watch removal, lost after the grant: sent again
};

}  // namespace zklock::detail
