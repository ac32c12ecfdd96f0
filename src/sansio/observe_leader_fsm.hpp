// Reading an election's leader, and waiting until it changes (election::async_leader and
// async_observe), as a sans-I/O state machine. Inputs: replies, the watch's event, the
// session's connection, the restore timer, cancellation (request.hpp's inputs, on(), or the
// typed helpers below); outputs: request.hpp's requests (the reads, its one watch in slot 0
// waited for and removed, the restore timer in slot 0, await_connection) and the completion,
// with result(). The runner (src/lock/runner.hpp) carries them out; election.cpp's hook hands
// the result to the caller.
//
// Steps: list the election path and read the head's data (its identity); again when the head
// went between the two reads. async_leader completes with that. async_observe completes with
// it when it differs from `known`; else it sets one watch that fires when it changes (a data
// watch on the leader's node; a child watch on the path while nobody leads; an exists watch
// while the path does not exist), waits, and reads again.
//
// Rules it keeps:
//  - Who holds survives a revocation request: "__REVOKE__" in the leader's node (Curator's
//    Revoker, zklock revoke) is not an identity. The zklock leader writes its identity back
//    once it has read the request; meanwhile the node it already knew keeps its identity, and a
//    leader seen for the first time is read again once its data changes. A leader that never
//    writes it back (Curator's, kazoo's) is reported with the data it has after restore_wait().
//  - One watch at a time, and none left behind: a watch set for nothing (the leader changed
//    between the read and the watch), or the watch of a cancelled observer, is removed. A
//    removal lost with the connection is made again once connected (the C client sets the
//    watch again after the reconnect).
//  - Cancellation (any type) removes the watch before it completes, while connected. While the
//    session is not connected, terminal and partial cancellation complete at once and the
//    removal goes on in the background; total cancellation waits for it.
//  - The session's end completes it with session_end.hpp's error; a lost connection waits for
//    the reconnect (the connection-lost condition, nothing else).
#pragma once

#include "sansio/request.hpp"

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

class observe_leader_fsm {
 public:
  using actions = std::vector<sansio::request>;
  enum class mode { read_once, until_changed };
  /// The tags of its requests, which come back with their answers.
  enum tag : std::uint64_t { children = 1, data, exists, watch_removed, watch_fired, connection, restore_due };
  static constexpr std::uint8_t watch_slot = 0, restore_timer = 0;

  /// `path`: the election path. read_once: async_leader (`known` unused); until_changed:
  /// async_observe, completes when the leader differs from `known`. `restore_wait`: how long a
  /// leader seen with a revocation request in its node has to write its identity back.
  observe_leader_fsm(std::string path, mode m, std::optional<leader_info> known = std::nullopt,
                     std::chrono::milliseconds restore_wait = std::chrono::milliseconds(0))
      : path_(std::move(path)), mode_(m), known_(std::move(known)), restore_wait_(restore_wait) {}

  /// Any answer of the runner, by its tag: the typed helpers below.
  actions on(const sansio::input& in);

  /// Starts, with the session in `st` (an ended session completes at once, nothing sent).
  actions start(session_state st);
  /// Reply to list or watch_children.
  actions on_children(error_code ec, const std::vector<std::string>& children);
  /// Reply to read_head or watch_node: the node's data and ctime when `ec` is empty.
  actions on_data(error_code ec, std::string_view data, std::int64_t ctime);
  /// Reply to watch_creation: whether the path exists.
  actions on_exists(error_code ec, bool exists);
  /// The watch waited for fired (`ec`: the session ended and took it). Not for a removal of ours.
  actions on_watch_fired(error_code ec);
  /// Reply to remove_watch (no error as well when nothing was registered any more).
  actions on_watch_removed(error_code ec);
  /// After await_connection: connected again.
  actions on_connected();
  /// After await_connection: the session ended (`ec`: session_end_error of its state).
  actions on_session_ended(error_code ec);
  /// After arm_restore_timer: the leader did not write its identity back in time.
  actions on_restore_timeout();
  /// Cancellation, completing with `reason` (the runner's operation_aborted): `total` (total
  /// only, which waits for the cleanup), `connected` (the session now).
  actions cancel(error_code reason, bool total, bool connected);

  /// What request::complete completes with, beside its error (empty when not completed).
  const std::optional<leader_info>& result() const noexcept { return completion_; }
  /// The caller has its completion.
  bool completed() const noexcept { return completed_; }
  /// Nothing is in flight and nothing is left to clean up.
  bool finished() const noexcept { return phase_ == phase::finished; }

 private:
  enum class phase { idle, listing, reading_head, arming, watching, removing, awaiting_connection, finished };
  // What the watch being set or waited for is for.
  enum class purpose { leader, nobody, creation, restore };
  // What comes after a removal, or after the reconnect that a lost connection waits for.
  enum class next { list, complete };

  actions list();
  actions decide(std::optional<leader_info> now);
  actions remove_then(next then);
  actions await_connection(next then);
  actions fail(error_code ec);
  actions complete(error_code ec, std::optional<leader_info> r);
  actions after_cancel();
  bool early_completion_allowed(bool connected) const noexcept { return cancelled_ && !total_ && !connected; }

  std::string path_;
  mode mode_;
  std::optional<leader_info> known_;
  std::chrono::milliseconds restore_wait_;
  std::optional<leader_info> completion_;  // see result()
  phase phase_ = phase::idle;
  purpose purpose_ = purpose::leader;
  next then_ = next::list;
  std::optional<leader_info> head_;    // the head read, its identity pending (restore)
  std::optional<leader_info> result_;  // what next::complete completes with
  error_code result_ec_;
  bool remove_when_connected_ = false;  // a removal lost with the connection: again once connected
  error_code cancel_reason_;  // what a cancelled observer completes with
  bool cancelled_ = false, total_ = false, completed_ = false;
};

}  // namespace zklock::detail
