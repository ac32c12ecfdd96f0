// zklock::lock_guard: one hold of a lock (mutex, shared_mutex side, semaphore lease), like
// std::unique_lock: release, lost-tracking, validity deadline, fencing token, guarded writes.
#pragma once

#include <zklock/detail/lock_guard.hpp>
#include <zklock/error.hpp>
#include <zklock/export.hpp>
#include <zklock/session.hpp>
#include <zklock/types.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zklock {

class multi_guard;

/// Owns one hold of a lock, like std::unique_lock. Move-only.
///
/// Destroying (or move-assigning over) a guard that was not released releases its hold in the
/// background: the destructor only posts to the session's executor, so a guard may be
/// destroyed on any thread (e.g. one received through use_future). This holds for a guard
/// whose lock was reported lost too: while its session lives, its node is still deleted.
/// Other members: use from the session's executor only.
class ZKLOCK_API lock_guard {
 public:
  /// The session's executor type.
  using executor_type = asio::any_io_executor;
  /// Asio's rebind trait: the same guard type whatever the executor (guards are values handed out by the mutex).
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_to_self<lock_guard>;

  lock_guard() = default;
  /// Takes over `o`'s hold; `o` is left empty (status() released).
  lock_guard(lock_guard&& o) noexcept
      : hold_(std::move(o.hold_)), ex_(o.ex_), released_(std::exchange(o.released_, false)) {}
  /// Releases this guard's hold in the background (as the destructor does), then takes over `other`'s.
  lock_guard& operator=(lock_guard&& other) noexcept;
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;
  ~lock_guard();

  /// The session's executor (empty for a default-constructed guard).
  executor_type get_executor() const noexcept { return ex_; }
  /// True while this guard holds (status held or maybe_lost).
  bool owns_lock() const noexcept;
  /// owns_lock().
  explicit operator bool() const noexcept { return owns_lock(); }
  /// What this guard knows of its lock now; released for an empty, moved-from or released guard.
  lock_status status() const noexcept;
  /// Full path of our lock node, e.g. "/locks/a/_c_<uuid>-lock-0000000007".
  const std::string& node_path() const noexcept;
  /// The lock node's czxid: strictly increasing across successive holders of the same lock
  /// path, even when the (container) lock dir is reaped and recreated, which would restart the
  /// sequence numbers. Pass it with every write to the protected resource and have the
  /// resource reject tokens lower than the highest it has seen.
  std::int64_t fencing_token() const noexcept;
  /// A ZooKeeper `check` of our lock node, to put first in a transaction (session::async_multi):
  /// the transaction then applies only while our node exists, that is while nobody else can
  /// hold the lock — a write guarded by the lock, ZooKeeper's counterpart of etcd's
  /// Mutex.IsOwner(). If the lock is gone (session expired, node deleted), the multi fails as a
  /// whole, nothing is written, and results[0].ec is zk_errc::no_node. (While a hold reported
  /// lost still has its node, e.g. its session survived a partition, nobody else can hold the
  /// lock either: the check passes, and rightly.) Needs a guard with a node (node_path()).
  multi_op check_op() const { return multi_op::check(node_path(), -1); }
  /// `ops` behind check_op(): `co_await s.async_multi(guard.guarded(std::move(ops)), ...)`.
  std::vector<multi_op> guarded(std::vector<multi_op> ops) const {
    ops.insert(ops.begin(), check_op());
    return ops;
  }
  /// How many reentrant holds share this lock (1 when not reentrant).
  int hold_count() const noexcept;
  /// What this guard holds: lock_kind::exclusive (a mutex), write or read (a shared_mutex; a
  /// downgraded write guard says read). exclusive for an empty guard.
  lock_kind kind() const noexcept;
  /// Until when the lock is certainly ours: the send time of our session's most recent request
  /// that the server answered, plus the negotiated session timeout, minus a safety margin
  /// (session_options::validity_margin). The server cannot expire our session, and so cannot
  /// grant the lock to anyone else, before then. While the lock is held zklock keeps it ahead
  /// with a cheap request of its own (an exists on our node) every third of the session
  /// timeout; when it passes without a reply the guard turns lost (async_wait_lost completes).
  /// time_point::min() when the guard does not hold.
  std::chrono::steady_clock::time_point valid_until() const noexcept;
  /// A cancellation slot emitted (terminal) when the lock is lost: bind the work of the
  /// critical section to it (`asio::bind_cancellation_slot(guard.lost_slot(), token)`) and it is
  /// cancelled through Asio's own cancellation as soon as the lock is lost. One handler at a
  /// time, like any cancellation slot. Empty for an empty guard. The slot is the hold's, not
  /// this object's (a moved guard keeps it; a reentrant owner's guards share it): a release never
  /// emits it, and its handler is destroyed uncalled when the hold ends, which can be soon after
  /// the guard is destroyed. So finish the work bound to it (or clear the slot) first.
  asio::cancellation_slot lost_slot() const noexcept;

  /// Releases this hold (the last hold of a reentrant owner deletes the lock node).
  /// Handler: void(error_code). Errors: errc::already_released (released or empty guard),
  /// errc::lock_lost (lost first: the session ended, the validity deadline passed, or the node
  /// was deleted by someone else; while the session lives the node is still deleted, in the
  /// background), errc::release_pending (the connection is down: completes at once, and the
  /// node is deleted after the reconnect, or goes with the session if it expires), and the
  /// server's refusal of the delete: throttled_op is retried a few times first; no_auth (the
  /// lock dir's ACL lacks DELETE) and whatever is left mean our node stays and blocks the lock
  /// until the session ends: status() says lost from then on and the session logs it at error
  /// level (so does a guard destroyed without release).
  /// The guard counts as released from this call on; the operation captures the hold, not the
  /// guard, so the guard may be moved or destroyed before a deferred operation is launched.
  /// Not cancellable.
  template <class Token = asio::deferred_t>
  auto async_release(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, detail::release_ticket t) { t.launch(detail::void_handler(std::move(h))); }, token,
        take_release_ticket());
  }

  /// Turns a shared_mutex write hold into a read hold without letting any writer in between:
  /// our node keeps its place in the queue (writers behind it keep waiting) and says it is a
  /// reader now: one transaction creates our downgrade mark (an EPHEMERAL node of our session
  /// in the lock dir, deleted at the release or a loss) and writes the downgraded marker into
  /// our node, so zklock readers behind it are granted (they trust the mark's owner, never the
  /// data). Curator and kazoo readers do not read that mark: they wait until the node is
  /// deleted (still correct). Handler: void(error_code). Errors: errc::not_downgradable (not a
  /// write hold: a mutex's guard, or already read), errc::already_released, errc::lock_lost,
  /// zk_errc::node_exists (another session holds the mark's name: still a write hold), and
  /// ZooKeeper errors (connection_loss: the outcome is unknown, kind() still says write;
  /// downgrading again is safe). Not cancellable (two short requests). Captures the hold, not
  /// the guard.
  template <class Token = asio::deferred_t>
  auto async_downgrade(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, std::shared_ptr<detail::hold> hold, asio::any_io_executor ex) {
          if (!hold) return detail::post_completion(ex, std::move(h), error_code(errc::already_released));
          detail::downgrade(hold, detail::void_handler(std::move(h)));
        },
        token, released_ ? std::shared_ptr<detail::hold>() : hold_, ex_);
  }

  /// Supervision of work bound to the lock: completes (no error) once the validity deadline is
  /// `lead` away and no reply from ZooKeeper has moved it on — the moment to stop work that
  /// must be over before anyone else can hold the lock (zklock exec sends SIGTERM then, and
  /// SIGKILL at the deadline, when the guard turns lost). While ZooKeeper answers, the library
  /// keeps the deadline more than half a session timeout ahead, so a `lead` below that never
  /// completes on a healthy session. Completes with errc::lock_lost if the lock is lost first,
  /// errc::already_released if released first (or an empty guard).
  /// Handler: void(error_code). Cancellation: all types, operation_aborted, nothing left.
  /// Captures the hold, not the guard.
  template <class Token = asio::deferred_t>
  auto async_wait_deadline(std::chrono::steady_clock::duration lead, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, std::shared_ptr<detail::hold> hold, asio::any_io_executor ex, std::chrono::steady_clock::duration l) {
          if (!hold) return detail::post_completion(ex, std::move(h), error_code(errc::already_released));
          detail::wait_deadline(hold, l, detail::void_handler(std::move(h)));
        },
        token, released_ ? std::shared_ptr<detail::hold>() : hold_, ex_, lead);
  }

  /// Completes with errc::lock_lost when the lock is lost (session expired or closed while
  /// held, validity deadline passed, node deleted by someone else); with
  /// errc::already_released if released first (or an empty guard).
  /// Handler: void(error_code). Cancellation: all types, operation_aborted, nothing left.
  /// Captures the hold, not the guard.
  template <class Token = asio::deferred_t>
  auto async_wait_lost(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, std::shared_ptr<detail::hold> hold, asio::any_io_executor ex) {
          if (!hold) return detail::post_completion(ex, std::move(h), error_code(errc::already_released));
          detail::wait_lost(hold, detail::void_handler(std::move(h)));
        },
        token, released_ ? std::shared_ptr<detail::hold>() : hold_, ex_);
  }

  /// Revocation (Curator's protocol, cooperative): completes (no error) when someone asks this
  /// holder to give the lock back — zklock::async_request_revoke / async_revoke_holders, `zklock
  /// revoke PATH`, or Curator's `Revoker.attemptRevoke`, each of which writes "__REVOKE__" into
  /// our node. The guard still holds: release it (or not) as you decide. A request written
  /// before the call is seen; each request is reported once (a later call waits for a new one);
  /// any other write to our node (an operator's `set`, a downgrade) completes nothing.
  /// Costs nothing until called: the first wait reads our node with a data watch (one getData),
  /// and a watch stays only while someone waits (at most one per hold, however many wait).
  /// Completes with errc::lock_lost if the lock is lost first, errc::already_released if
  /// released first (or an empty guard). Handler: void(error_code). Cancellation: all types,
  /// operation_aborted; the guard is unchanged and the watch is removed when nobody else waits.
  /// Captures the hold, not the guard. Local holders (mutex_options::local_queue) share their
  /// node: a request on it is seen by each local holder of that node, until it is replaced.
  template <class Token = asio::deferred_t>
  auto async_wait_revoked(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, std::shared_ptr<detail::hold> hold, asio::any_io_executor ex) {
          if (!hold) return detail::post_completion(ex, std::move(h), error_code(errc::already_released));
          detail::wait_revoked(hold, detail::void_handler(std::move(h)));
        },
        token, released_ ? std::shared_ptr<detail::hold>() : hold_, ex_);
  }

 private:
  friend struct detail::access;
  friend class multi_guard;
  lock_guard(std::shared_ptr<detail::hold> h, asio::any_io_executor ex) noexcept : hold_(std::move(h)), ex_(std::move(ex)) {}
  detail::release_ticket take_release_ticket() noexcept;

  std::shared_ptr<detail::hold> hold_;
  asio::any_io_executor ex_;
  bool released_ = false;  // this guard's hold was given back (others of a reentrant owner may remain)
};

}  // namespace zklock
