// zklock::mutex: the ZooKeeper exclusive-lock recipe as an Asio async operation.
#pragma once

#include <zklock/detail/pending.hpp>
#include <zklock/error.hpp>
#include <zklock/session.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace zklock {

namespace detail {
struct hold;
struct mutex_state;
}  // namespace detail

/// What a guard knows of its lock.
enum class lock_status {
  held,        ///< our node is the head of the queue and our session is connected
  maybe_lost,  ///< the connection is suspended: if the session expires, the lock is lost
  lost,        ///< the session expired (or was closed): another contender may hold the lock
  released,    ///< released by us (or moved-from / empty guard)
};
const char* to_string(lock_status s) noexcept;

/// Identifies a reentrant owner (a coroutine, a request, a job): acquiring again with the same
/// owner while it holds the lock through the same zklock::mutex succeeds at once.
struct owner_id {
  std::uint64_t value = 0;
  friend bool operator==(owner_id, owner_id) = default;
};

/// Owns one hold of a lock, like std::unique_lock. Move-only. Destroying a guard that still
/// holds releases the lock in the background (on the session's executor).
class lock_guard {
 public:
  lock_guard() = default;
  explicit lock_guard(std::shared_ptr<detail::hold> h) noexcept : hold_(std::move(h)) {}
  lock_guard(lock_guard&& o) noexcept : hold_(std::move(o.hold_)), released_(o.released_) { o.released_ = false; }
  lock_guard& operator=(lock_guard&& other) noexcept;
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;
  ~lock_guard();

  /// True while this guard holds (status held or maybe_lost).
  bool owns_lock() const noexcept;
  explicit operator bool() const noexcept { return owns_lock(); }
  lock_status status() const noexcept;
  /// Full path of our lock node, e.g. "/locks/a/_c_<uuid>-lock-0000000007".
  const std::string& node_path() const noexcept;
  /// The lock node's czxid: strictly increasing across successive holders of the same lock
  /// path, even when the (container) lock dir is reaped and recreated, which would restart the
  /// sequence numbers. Pass it with every write to the protected resource and have the
  /// resource reject tokens lower than the highest it has seen.
  std::int64_t fencing_token() const noexcept;
  /// How many reentrant holds share this lock (1 when not reentrant).
  int hold_count() const noexcept;

  /// Releases this hold (the last hold of a reentrant owner deletes the lock node).
  /// Handler: void(error_code). Errors: errc::already_released (released or empty guard),
  /// errc::lock_lost (the session expired first: the node is gone anyway),
  /// errc::release_pending (the connection is down: completes at once, and the node is deleted
  /// after the reconnect, or goes with the session if it expires). Not cancellable.
  template <class Token = asio::deferred_t>
  auto async_release(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [this](auto h) { release(detail::void_handler(std::move(h))); }, token);
  }

  /// Completes with errc::lock_lost when the lock is lost (session expired or closed while
  /// held); with errc::already_released if released first (or an empty guard).
  /// Handler: void(error_code). Cancellation: all types, operation_aborted, nothing left.
  template <class Token = asio::deferred_t>
  auto async_wait_lost(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [this](auto h) { wait_lost(detail::void_handler(std::move(h))); }, token);
  }

 private:
  void release(detail::void_handler h);
  void wait_lost(detail::void_handler h);
  std::shared_ptr<detail::hold> hold_;
  bool released_ = false;  // this guard's hold was given back (others of a reentrant owner may remain)
};

/// A distributed exclusive lock on `path` (a lock dir: contenders' nodes are its children),
/// wire-compatible with Curator's InterProcessMutex and kazoo's Lock (with
/// extra_lock_patterns=["-lock-"]).
///
/// Thread safety: like the session (use it from the session's executor). Any number of
/// acquires may be pending at once on one mutex, each with its own node in the queue.
/// Lifetimes: the session must outlive the mutex; pending acquires keep what they need alive.
class mutex {
 public:
  using executor_type = session::executor_type;
  using clock = std::chrono::steady_clock;

  mutex(session& s, std::string path);
  ~mutex();
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  const std::string& path() const noexcept;
  executor_type get_executor() const noexcept;

  /// Waits as long as needed for the lock.
  /// Handler: void(error_code, lock_guard). Errors: path errors (nothing sent),
  /// errc::session_expired / session_closed (the session ended while waiting; nothing is left
  /// behind since ephemerals go with it), ZooKeeper errors such as no_auth.
  /// Cancellation (terminal, partial, total) at any step: our node is deleted (when the create
  /// was in flight, once it appears) and our watch removed, then the handler gets
  /// operation_aborted. Dropped connections are survived: a create lost in flight is found again
  /// by the unique id in the node name instead of being created twice.
  template <class Token = asio::deferred_t>
  auto async_acquire(Token&& token = {}) {
    return initiate(token, mode::wait, clock::duration::max(), std::nullopt);
  }

  /// Timed acquire: like async_acquire, and gives up after `timeout` with errc::lock_timeout,
  /// cleaned up as for cancellation. (Equivalent idiom: bind a cancellation slot fed by a timer,
  /// e.g. `asio::experimental::make_parallel_group` or `||` of awaitable_operators.)
  template <class Token = asio::deferred_t>
  auto async_acquire_for(clock::duration timeout, Token&& token = {}) {
    return initiate(token, mode::wait, timeout, std::nullopt);
  }

  /// Never waits: errc::lock_busy when someone else holds the lock; no node is left behind.
  template <class Token = asio::deferred_t>
  auto async_try_acquire(Token&& token = {}) {
    return initiate(token, mode::try_once, clock::duration::max(), std::nullopt);
  }

  /// Reentrant acquire: if `owner` holds this lock through this mutex object, completes at
  /// once with another guard on the same hold (hold_count() + 1); the node is deleted when the
  /// last of them is released. Otherwise acquires as async_acquire and records `owner`.
  template <class Token = asio::deferred_t>
  auto async_acquire(owner_id owner, Token&& token = {}) {
    return initiate(token, mode::wait, clock::duration::max(), owner);
  }

 private:
  enum class mode { wait, try_once };
  using acquire_handler = asio::any_completion_handler<void(error_code, lock_guard)>;

  template <class Token>
  auto initiate(Token& token, mode m, clock::duration timeout, std::optional<owner_id> owner) {
    return asio::async_initiate<Token, void(error_code, lock_guard)>(
        [state = state_](auto h, mode m, clock::duration timeout, std::optional<owner_id> owner) {
          start(state, acquire_handler(std::move(h)), m, timeout, owner);
        },
        token, m, timeout, owner);
  }
  static void start(const std::shared_ptr<detail::mutex_state>& state, acquire_handler h, mode m,
                    clock::duration timeout, std::optional<owner_id> owner);

  std::shared_ptr<detail::mutex_state> state_;
};

}  // namespace zklock
