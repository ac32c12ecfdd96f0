// A holder's side of revocation (lock_guard::async_wait_revoked), as a sans-I/O state machine.
// Curator's protocol: Revoker.attemptRevoke writes "__REVOKE__" into the holder's node; a
// revocable holder reads its own node's data with a data watch (after acquiring, and again
// whenever the watch fires) and is asked to release when the data is those bytes. Revocation is
// cooperative: the holder decides, the guard keeps the lock.
//
// Rules it keeps:
//  - The watch is set lazily: only while someone waits (a hold nobody asks costs nothing), and
//    removed when the last waiter is cancelled (no watch left behind, none added per wait).
//  - A request is reported once: a read of "__REVOKE__" at a data version above the last one
//    reported completes the waiters (so a request written before the wait is seen, and a
//    holder that decided to keep the lock is not told the same request again).
//  - Any other data (an operator's `set`, our own downgrade mark) re-arms the watch and
//    completes nothing.
//  - Connection loss loses nothing: a read lost with the connection is made again once
//    connected (the C client sets registered watches again after a reconnect).
//  - The hold's end (lost or released) completes the waiters; what is still in flight then is
//    ignored (the node's deletion, or the session's end, takes the watch).
#pragma once

#include "sansio/request.hpp"

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// What Revoker.attemptRevoke writes into a holder's node (Curator's LockInternals.REVOKE_MESSAGE).
inline constexpr std::string_view revoke_message = "__REVOKE__";

/// What revocation_fsm asks of the hold beside its requests (request.hpp): get_data of our node
/// (path empty: the hold's node) with a data watch in `watch_slot`, its reply and the event of
/// the watch it set carrying the read's generation as their tag (the runner waits for the watch
/// a successful read set); remove_watch_of(generation); await_connection; and these outcomes.
enum class revocation_outcome : std::uint8_t {
  check_node,        ///< our node was not found: let the hold confirm it is gone (lost)
  complete_waiters,  ///< complete every waiter with `ec` (empty: a revocation request)
};

class revocation_fsm {
 public:
  using actions = std::vector<sansio::request>;
  static constexpr std::uint8_t watch_slot = 0;

  /// A waiter arrives while the hold holds (the runner completes it at once otherwise).
  actions add_waiter();
  /// A waiter was cancelled (the runner took it out and aborted it).
  actions remove_waiter();
  /// The hold ended: lost (lock_lost) or released (already_released). Every waiter gets `ec`;
  /// later inputs are ignored.
  actions on_hold_ended(error_code ec);
  /// Reply to the read of `generation`: the data and its version when `ec` is empty.
  /// `connected`: the session is connected now (a read lost with the connection goes again).
  actions on_data(std::uint64_t generation, error_code ec, std::string_view data, std::int32_t version,
                  bool connected);
  /// The watch of `generation` fired (`ec`: the session ended and took it).
  actions on_watch_event(std::uint64_t generation, error_code ec, watch_event_type type);
  /// Reply to the removal of `generation`'s watch.
  actions on_watch_removed(std::uint64_t generation, error_code ec, bool connected);
  /// The session is connected again (after await_connection).
  actions on_connected();

  int waiters() const noexcept { return waiters_; }
  /// A data watch may be registered or being registered (read in flight, set, being removed).
  bool watch_pending() const noexcept { return watch_ != watch::none; }
  bool ended() const noexcept { return ended_; }
  /// The data version of the last request reported (-1: none).
  std::int32_t reported_version() const noexcept { return reported_version_; }

 private:
  enum class watch { none, reading, set, removing, awaiting_connection };
  enum class after_connection { read, remove };

  actions read();
  actions remove();
  actions complete(error_code ec);

  watch watch_ = watch::none;
  after_connection after_ = after_connection::read;
  std::uint64_t generation_ = 0;  // of the current read and its watch
  int waiters_ = 0;
  std::int32_t reported_version_ = -1;
  bool ended_ = false;
  bool fired_while_removing_ = false;
};

}  // namespace zklock::detail
