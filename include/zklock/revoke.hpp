// zklock::async_request_revoke, async_revoke_holders: asking a lock's holder to give it back,
// by Curator's revocation protocol (the requester's side; the holder's is
// lock_guard::async_wait_revoked).
#pragma once

#include <zklock/detail/revoke.hpp>
#include <zklock/export.hpp>
#include <zklock/session.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace zklock {

/// What a revocation request writes into the holder's node: Curator's
/// `LockInternals.REVOKE_MESSAGE`, the bytes "__REVOKE__".
inline constexpr std::string_view revoke_request_data = "__REVOKE__";

/// What async_revoke_holders does beyond asking (its revoke_options form).
struct revoke_options {
  /// The number of leases when the lock dir is a semaphore's leases dir (>= 1).
  int max_leases = 1;
  /// Forced revocation: a holder whose node still exists this long after the request (it has
  /// not released) has its node deleted, which ends its hold as a session expiry would; the
  /// next waiter is granted. max: never (cooperative revocation only).
  std::chrono::steady_clock::duration force_after = std::chrono::steady_clock::duration::max();
};

/// What async_revoke_holders did, in queue order.
struct revoke_result {
  std::vector<std::string> asked;    ///< the nodes "__REVOKE__" was written into
  std::vector<std::string> deleted;  ///< those still there after force_after, which were deleted
};

/// Asks the holder of lock node `node_path` (a full path, e.g. a contender's node under its lock
/// dir) to give the lock back: writes "__REVOKE__" into the node (one setData, any version), as
/// Curator's `Revoker.attemptRevoke` does. Revocation is cooperative: a zklock holder learns it
/// through lock_guard::async_wait_revoked, a Curator holder through the RevocationListener it
/// registered with makeRevocable; each decides whether to release. Nothing else changes: the
/// lock is not released by the request, no waiter is granted by it.
/// Handler: void(error_code). Errors: zk_errc::no_node (the node is gone: its holder released
/// or lost it; Curator's Revoker ignores this), path errors (nothing sent), errc::session_*,
/// ZooKeeper errors such as no_auth. Cancellation: terminal and partial (the write may still
/// apply: it is on the wire). Thread safety: as the session's operations.
template <class Executor, class Token = detail::default_token_t<Executor>>
auto async_request_revoke(basic_session<Executor>& s, std::string node_path, Token&& token = {}) {
  return asio::async_initiate<Token, void(error_code)>(
      [impl = detail::access::impl(s)](auto h, std::string node) {
        detail::request_revoke(impl, std::move(node), detail::void_handler(std::move(h)));
      },
      token, std::move(node_path));
}

/// Asks every current holder of the lock dir `lock_path` to give it back: lists the queue (one
/// getChildren, one pipelined read per contender), picks the nodes that hold by the grant rule
/// (each by its own kind: the head of a mutex, a write lock or an election; the reads ahead of
/// the first writer of a shared lock, a downgraded zklock writer among them; the first
/// `max_leases` of a semaphore's leases dir, `semaphore::leases_path()`), and sends
/// async_request_revoke to each, pipelined. Holders of zklock, Curator and kazoo alike.
/// Handler: void(error_code, std::vector<std::string> nodes): the full paths of the nodes
/// written, in queue order; empty when nobody holds (or the lock dir does not exist). A holder
/// that released between the listing and the write is left out (no_node) and its successor is
/// not asked. Errors: those of the listing and of the writes (the first one; the nodes written
/// before it are still reported). Cancellation: terminal and partial (writes on the wire may
/// still apply). An election's leader is revoked by the same write; a zklock leader writes its
/// participant id back into its node at once, and zklock observers never take "__REVOKE__" for
/// an id (election::async_leader).
template <class Executor, class Token = detail::default_token_t<Executor>>
  requires(!std::is_integral_v<std::remove_cvref_t<Token>> && !std::is_same_v<std::remove_cvref_t<Token>, revoke_options>)
auto async_revoke_holders(basic_session<Executor>& s, std::string lock_path, Token&& token = {}) {
  return async_revoke_holders(s, std::move(lock_path), 1, std::forward<Token>(token));
}
/// The same with a semaphore's number of leases (`max_leases` >= 1).
template <class Executor, class Token = detail::default_token_t<Executor>>
auto async_revoke_holders(basic_session<Executor>& s, std::string lock_path, int max_leases, Token&& token = {}) {
  return asio::async_initiate<Token, void(error_code, std::vector<std::string>)>(
      [impl = detail::access::impl(s)](auto h, std::string path, int leases) {
        detail::revoke_holders(impl, std::move(path), leases, detail::revoked_nodes_handler(std::move(h)));
      },
      token, std::move(lock_path), max_leases);
}

/// The same with options, among them forced revocation: asks as above, then, when
/// `options.force_after` is not max, waits that long and deletes each asked node that is
/// still there (one delete each, pipelined, any version). Deleting a holder's node needs the
/// DELETE permission on the lock dir (ZooKeeper checks a delete against the parent's ACL; an
/// open dir allows anyone, a creator_all dir only its creator's credentials). A zklock holder
/// watching its node learns at once that its lock is lost (lock_guard::async_wait_lost); any
/// holder's next guarded write fails: its node and, for the next holder, a higher fencing
/// token say so.
/// Handler: void(error_code, revoke_result). Errors: as above, and those of the deletes (the
/// first one; zk_errc::no_node is none: that holder released). Cancellation: terminal and
/// partial; during the wait nothing is deleted (operation_aborted, with the nodes asked).
template <class Executor, class Token = detail::default_token_t<Executor>>
auto async_revoke_holders(basic_session<Executor>& s, std::string lock_path, revoke_options options, Token&& token = {}) {
  return asio::async_initiate<Token, void(error_code, revoke_result)>(
      [impl = detail::access::impl(s)](auto h, std::string path, revoke_options o) {
        detail::revoke_holders(impl, std::move(path), o, detail::revoke_result_handler(std::move(h)));
      },
      token, std::move(lock_path), options);
}

}  // namespace zklock
