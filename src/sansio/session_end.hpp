// "The session ended -> which error": one rule for every operation (README, "Errors").
//  - closed: errc::session_closed; expired: errc::session_expired.
//  - not established (disconnected, connecting): errc::not_connected for an operation that
//    starts (there is no session to work on: call async_connect first), errc::session_expired
//    for one that ran on a session since gone (a close or an expiry whose state event is still
//    queued behind a new async_connect): its ephemeral nodes and watches went with it, as after
//    an expiry, which is what the caller must act on.
//  - a live state (connected, reconnected, suspended): no error, unless the ZooKeeper session
//    was replaced under an operation that ran on the old one: errc::session_expired.
// And "the session's state -> why a held lock is lost" (lost_cause_of), for every holder.
#pragma once

#include <zklock/error.hpp>
#include <zklock/types.hpp>

namespace zklock::detail {

/// The error of an operation that finds the session in `st`. `ran_on_session`: the operation
/// started on a session (false: it is starting now); `replaced`: the live session is not the
/// one it started on.
inline error_code session_end_error(session_state st, bool ran_on_session = false, bool replaced = false) noexcept {
  switch (st) {
    case session_state::closed: return errc::session_closed;
    case session_state::expired: return errc::session_expired;
    case session_state::disconnected:
    case session_state::connecting:
      return ran_on_session ? error_code(errc::session_expired) : error_code(errc::not_connected);
    default: return replaced ? error_code(errc::session_expired) : error_code{};
  }
}

/// Why a lock held on a session is lost, seen with the session in `st` (`replaced`: the live
/// session is not the one the lock's node was created on). First match: closed (by its owner);
/// replaced by a new session, connected; over (expired, or gone under a new connect: as
/// session_end_error); connected, the same session: the node was deleted; else (suspended) the
/// validity deadline passed.
inline lost_cause lost_cause_of(session_state st, bool replaced) noexcept {
  if (st == session_state::closed) return lost_cause::session_closed;
  if (replaced && is_connected(st)) return lost_cause::session_replaced;
  if (session_end_error(st, /*ran_on_session=*/true, replaced)) return lost_cause::session_expired;
  if (is_connected(st)) return lost_cause::node_deleted;
  return lost_cause::deadline_passed;
}

/// A request's error that says the session is over (condition::session_lost), as the error of
/// the operation that sent it (which ran on that session): closed by its owner
/// (zk_errc::closing, errc::session_closed) or gone (everything else: expired, invalid_state,
/// and not_connected, the handle closed under it).
inline error_code session_end_error(const error_code& request_error) noexcept {
  if (request_error == zk_errc::closing || request_error == errc::session_closed) return errc::session_closed;
  return errc::session_expired;
}

}  // namespace zklock::detail
