// zklock::mutex: the ZooKeeper exclusive-lock recipe as an Asio async operation.
#pragma once

#include <zklock/detail/pending.hpp>
#include <zklock/error.hpp>
#include <zklock/session.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zklock {

namespace detail {
struct mutex_state;
}  // namespace detail

template <class Executor>
class basic_shared_mutex;
class multi_guard;

/// Identifies a reentrant owner (a coroutine, a request, a job): acquiring again with the same
/// owner while it holds the lock through the same zklock::mutex succeeds at once.
struct owner_id {
  std::uint64_t value = 0;
  friend bool operator==(owner_id, owner_id) = default;
};

namespace detail {
/// The right to give back one hold, taken from a guard by async_release. Launched, it
/// releases; destroyed unlaunched (a deferred release never awaited), it releases in the
/// background. Either way exactly once, whatever became of the guard meanwhile.
class release_ticket {
 public:
  release_ticket(std::shared_ptr<hold> h, asio::any_io_executor ex) noexcept : hold_(std::move(h)), ex_(std::move(ex)) {}
  release_ticket(release_ticket&& o) noexcept = default;
  release_ticket& operator=(release_ticket&&) = delete;
  ~release_ticket();
  void launch(void_handler h);

 private:
  std::shared_ptr<hold> hold_;  // null once launched, or for an empty or released guard
  asio::any_io_executor ex_;    // the guard's (empty for a default-constructed guard)
};
/// Completes `h` with `ec` through `ex` (or, when empty, the handler's associated executor),
/// never inline.
void post_result(const asio::any_io_executor& ex, void_handler h, error_code ec);
void wait_lost(const std::shared_ptr<hold>& h, void_handler handler);
void downgrade(const std::shared_ptr<hold>& h, void_handler handler);
/// Launches every ticket; completes `h` once all are done, with the most telling error
/// (lock_lost, then release_pending, then any other).
void release_all(std::vector<release_ticket> tickets, asio::any_io_executor ex, void_handler h);
}  // namespace detail

/// Owns one hold of a lock, like std::unique_lock. Move-only.
///
/// Destroying (or move-assigning over) a guard that was not released releases its hold in the
/// background: the destructor only posts to the session's executor, so a guard may be
/// destroyed on any thread (e.g. one received through use_future). This holds for a guard
/// whose lock was reported lost too: while its session lives, its node is still deleted.
/// Other members: use from the session's executor only.
class lock_guard {
 public:
  using executor_type = asio::any_io_executor;
  /// Same guard type whatever the executor: guards are values handed out by the mutex.
  template <class Executor>
  struct rebind_executor {
    using other = lock_guard;
  };

  lock_guard() = default;
  lock_guard(lock_guard&& o) noexcept
      : hold_(std::move(o.hold_)), ex_(o.ex_), released_(std::exchange(o.released_, false)) {}
  lock_guard& operator=(lock_guard&& other) noexcept;
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;
  ~lock_guard();

  /// The session's executor (empty for a default-constructed guard).
  executor_type get_executor() const noexcept { return ex_; }
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
  /// critical section to it (asio::bind_cancellation_slot(guard.lost_slot(), token)) and it is
  /// cancelled through Asio's own cancellation as soon as the lock is lost. One handler at a
  /// time, like any cancellation slot. Empty for an empty guard.
  asio::cancellation_slot lost_slot() const noexcept;

  /// Releases this hold (the last hold of a reentrant owner deletes the lock node).
  /// Handler: void(error_code). Errors: errc::already_released (released or empty guard),
  /// errc::lock_lost (lost first: the session ended, the validity deadline passed, or the node
  /// was deleted by someone else; while the session lives the node is still deleted, in the
  /// background), errc::release_pending (the connection is down: completes at once, and the
  /// node is deleted after the reconnect, or goes with the session if it expires).
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
  /// reader now (one setData), so zklock readers behind it are granted. Curator and kazoo
  /// readers do not read that mark: they wait until the node is deleted (still correct).
  /// Handler: void(error_code). Errors: errc::not_downgradable (not a write hold: a mutex's
  /// guard, or already read), errc::already_released, errc::lock_lost, and ZooKeeper errors
  /// (connection_loss: the outcome is unknown, kind() still says write; downgrading again is
  /// safe). Not cancellable (one short write). Captures the hold, not the guard.
  template <class Token = asio::deferred_t>
  auto async_downgrade(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, std::shared_ptr<detail::hold> hold, asio::any_io_executor ex) {
          if (!hold) return detail::post_result(ex, detail::void_handler(std::move(h)), errc::already_released);
          detail::downgrade(hold, detail::void_handler(std::move(h)));
        },
        token, released_ ? std::shared_ptr<detail::hold>() : hold_, ex_);
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
          if (!hold) return detail::post_result(ex, detail::void_handler(std::move(h)), errc::already_released);
          detail::wait_lost(hold, detail::void_handler(std::move(h)));
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

/// One contender in a lock's queue, as mutex::async_contenders reports it.
struct contender {
  std::string node;           ///< the node's name (a child of the lock dir)
  std::int64_t sequence = 0;  ///< its sequence number: the queue order
  lock_kind kind = lock_kind::exclusive;  ///< from the name (a downgraded zklock writer: data "zklock/2:downgraded")
  node_stat stat;             ///< stat.ephemeral_owner: the contender's session id; stat.ctime: when it queued
  std::string data;           ///< the node's data ("zklock/2" for a zklock contender)
};

namespace detail {
enum class acquire_kind { wait, try_once };
using acquire_handler = asio::any_completion_handler<void(error_code, lock_guard)>;
using contenders_handler = asio::any_completion_handler<void(error_code, std::vector<contender>)>;
std::shared_ptr<mutex_state> make_mutex_state(std::shared_ptr<session_impl> s, std::string path, int max_leases = 1);
const std::string& mutex_path(const mutex_state& m) noexcept;
void start_acquire(const std::shared_ptr<mutex_state>& state, acquire_handler h, acquire_kind k,
                   std::chrono::steady_clock::duration timeout, std::optional<owner_id> owner,
                   lock_kind kind = lock_kind::exclusive);
void list_contenders(const std::shared_ptr<mutex_state>& state, contenders_handler h);
}  // namespace detail

/// A distributed exclusive lock on `path` (a lock dir: contenders' nodes are its children),
/// wire-compatible with Curator's InterProcessMutex and kazoo's Lock (with
/// extra_lock_patterns=["-lock-"]).
///
/// Thread safety: like the session (use it from the session's executor). Any number of
/// acquires may be pending at once on one mutex, each with its own node in the queue.
/// Lifetimes: the session must outlive the mutex; pending acquires keep what they need alive.
template <class Executor = asio::any_io_executor>
class basic_mutex {
 public:
  using executor_type = Executor;
  using clock = std::chrono::steady_clock;
  /// The same mutex type on another executor type (as_default_on_t).
  template <class OtherExecutor>
  struct rebind_executor {
    using other = basic_mutex<OtherExecutor>;
  };

  /// A mutex on `path` through session `s` (of any executor type); its operations complete on
  /// `executor_type` defaults, as `s`'s do when the executor types match.
  template <class SessionExecutor>
  explicit basic_mutex(basic_session<SessionExecutor>& s, std::string path)
      : state_(detail::make_mutex_state(detail::access::impl(s), std::move(path))),
        ex_(executor_type(s.get_executor())) {}
  /// Takes over a mutex of another executor type (e.g. asio::as_default_on(std::move(m))).
  template <class OtherExecutor>
    requires std::is_convertible_v<const OtherExecutor&, executor_type>
  basic_mutex(basic_mutex<OtherExecutor>&& other) noexcept : state_(std::move(other.state_)), ex_(other.ex_) {}
  basic_mutex(basic_mutex&&) noexcept = default;
  basic_mutex& operator=(basic_mutex&&) noexcept = default;
  basic_mutex(const basic_mutex&) = delete;
  basic_mutex& operator=(const basic_mutex&) = delete;

  const std::string& path() const noexcept { return detail::mutex_path(*state_); }
  executor_type get_executor() const noexcept { return ex_; }

  /// The queue: every contender (zklock, Curator and kazoo nodes) in queue order, the holder
  /// first. Other children of the lock dir are left out, and so are nodes deleted between the
  /// listing and their read. A missing lock dir is an empty queue.
  /// Handler: void(error_code, std::vector<contender>). One listing, then one pipelined read
  /// per contender. Cancellation: all types (reads only: nothing is left behind).
  template <class Token = detail::default_token_t<Executor>>
  auto async_contenders(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::vector<contender>)>(
        [state = state_](auto h) { detail::list_contenders(state, detail::contenders_handler(std::move(h))); },
        token);
  }

  /// Waits as long as needed for the lock.
  /// Handler: void(error_code, lock_guard). Errors: path errors (nothing sent),
  /// errc::session_expired / session_closed (the session ended while waiting; nothing is left
  /// behind since ephemerals go with it), ZooKeeper errors such as no_auth.
  /// Cancellation (terminal, partial, total) at any step: our node is deleted (when the create
  /// was in flight, once it appears) and our watch removed, then the handler gets
  /// operation_aborted. Dropped connections are survived: a create lost in flight is found again
  /// by the unique id in the node name instead of being created twice.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(Token&& token = {}) {
    return initiate(token, detail::acquire_kind::wait, clock::duration::max(), std::nullopt);
  }

  /// Timed acquire: like async_acquire, and gives up after `timeout` with errc::lock_timeout,
  /// cleaned up as for cancellation. (Equivalent idiom: bind a cancellation slot fed by a timer,
  /// e.g. `asio::experimental::make_parallel_group` or `||` of awaitable_operators.)
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_for(clock::duration timeout, Token&& token = {}) {
    return initiate(token, detail::acquire_kind::wait, timeout, std::nullopt);
  }

  /// Never waits: errc::lock_busy when someone else holds the lock; no node is left behind.
  template <class Token = detail::default_token_t<Executor>>
  auto async_try_acquire(Token&& token = {}) {
    return initiate(token, detail::acquire_kind::try_once, clock::duration::max(), std::nullopt);
  }

  /// Reentrant acquire: if `owner` holds this lock through this mutex object, completes at
  /// once with another guard on the same hold (hold_count() + 1); the node is deleted when the
  /// last of them is released. Otherwise acquires as async_acquire and records `owner`.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(owner_id owner, Token&& token = {}) {
    return initiate(token, detail::acquire_kind::wait, clock::duration::max(), owner);
  }

 private:
  template <class>
  friend class basic_mutex;
  template <class>
  friend class basic_shared_mutex;

  template <class Token>
  auto initiate(Token& token, detail::acquire_kind k, clock::duration timeout, std::optional<owner_id> owner,
                lock_kind kind = lock_kind::exclusive) {
    return asio::async_initiate<Token, void(error_code, lock_guard)>(
        [state = state_](auto h, detail::acquire_kind k, clock::duration timeout, std::optional<owner_id> owner,
                         lock_kind kind) {
          detail::start_acquire(state, detail::acquire_handler(std::move(h)), k, timeout, owner, kind);
        },
        token, k, timeout, owner, kind);
  }

  std::shared_ptr<detail::mutex_state> state_;
  executor_type ex_;
};

/// A mutex whose operations default to asio::deferred.
using mutex = basic_mutex<>;

}  // namespace zklock
