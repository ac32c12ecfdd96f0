// zklock::mutex: the ZooKeeper exclusive-lock recipe as an Asio async operation.
#pragma once

#include <zklock/detail/mutex.hpp>
#include <zklock/error.hpp>
#include <zklock/lock_guard.hpp>
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

/// How a mutex object queues its own acquires.
///
/// local_queue = true: the two-level lock. Every acquire through this mutex object waits in a
/// local FIFO behind at most one node of this object in the lock dir, and while that node is
/// held the lock passes from one local holder to the next without any request (microseconds).
/// max_local_handoffs bounds the local grants per node while another process waits; local
/// holders' fencing tokens are `czxid << 16 | generation`. The guide is README.md's "The mutex"
/// (local queue); the exact rules (fairness, fencing, loss, cancellation, costs) are in
/// docs/REFERENCE.md, "The mutex's local queue: the exact rules".
struct mutex_options {
  /// Queue this object's acquires locally behind one node (the two-level lock above).
  bool local_queue = false;
  /// Local holders one node may grant while others are queued (values below 1 count as 1).
  int max_local_handoffs = 1;
  /// Who holds or waits, in our nodes' data (contender::identity, `zklock holders`): this
  /// instead of session_options::identity (default "<hostname>:<pid>"); empty: none.
  std::optional<std::string> identity = std::nullopt;
  /// K: how many of the contenders ahead that block an acquire it watches at once (values
  /// below 1 count as 1, above 120 as 120), besides its own node. When all of them are watched, the last one's
  /// deletion is the grant, with no request. The default (see docs/REFERENCE.md), the costs (K
  /// watches per waiter, up to K events per release) and deeper queues: docs/REFERENCE.md, "The
  /// mutex's options"; the handoff: README.md, "The mutex".
  int watched_blockers = 2;
  /// Lock-delay (zero: off, and nothing is sent): when the contender ahead of an acquire
  /// vanished because its owner's session ended (not a release), the grant waits this long
  /// more, so that what a dead holder left in flight lands first (for resources that cannot
  /// check a fencing token). How a release is told apart, what is delayed to be safe and the
  /// costs: README.md, "Lock-delay". With local_queue = true it delays the acquire of the
  /// queue's node (as watched_blockers applies to that node).
  std::chrono::milliseconds lock_delay{0};
};

template <class Executor>
class basic_shared_mutex;

/// A distributed exclusive lock on `path` (a lock dir: contenders' nodes are its children),
/// wire-compatible with Curator's InterProcessMutex and kazoo's Lock (with
/// extra_lock_patterns=["-lock-"]).
///
/// Thread safety: like the session (use it from the session's executor). Any number of
/// acquires may be pending at once on one mutex, each with its own node in the queue (with
/// mutex_options::local_queue: in a local queue behind one node).
/// Lifetimes: the session must outlive the mutex; pending acquires keep what they need alive.
template <class Executor = asio::any_io_executor>
class basic_mutex {
 public:
  /// The executor operations complete on by default.
  using executor_type = Executor;
  /// The clock of the `_for` operations' timeouts.
  using clock = std::chrono::steady_clock;
  /// The same mutex type on another executor type (as_default_on_t).
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_executor<basic_mutex, OtherExecutor>;

  /// A mutex on `path` through session `s` (of any executor type); its operations complete on
  /// `executor_type` defaults, as `s`'s do when the executor types match.
  template <class SessionExecutor>
  explicit basic_mutex(basic_session<SessionExecutor>& s, std::string path)
      : state_(detail::make_lock_dir(detail::access::impl(s), std::move(path))),
        ex_(executor_type(s.get_executor())) {}
  /// A mutex with options: see mutex_options (local_queue: the two-level lock).
  template <class SessionExecutor>
  basic_mutex(basic_session<SessionExecutor>& s, std::string path, mutex_options o)
      : state_(detail::make_lock_dir(detail::access::impl(s), std::move(path), o)),
        ex_(executor_type(s.get_executor())) {}
  /// Takes over a mutex of another executor type (e.g. `asio::use_awaitable.as_default_on(std::move(m))`).
  template <detail::converts_to_executor<Executor> OtherExecutor>
  basic_mutex(basic_mutex<OtherExecutor>&& other) noexcept : state_(std::move(other.state_)), ex_(other.ex_) {}
  /// Moves; the moved-from object may only be destroyed or assigned to.
  basic_mutex(basic_mutex&&) noexcept = default;
  /// Move assignment; the moved-from object may only be destroyed or assigned to.
  basic_mutex& operator=(basic_mutex&&) noexcept = default;
  basic_mutex(const basic_mutex&) = delete;
  basic_mutex& operator=(const basic_mutex&) = delete;

  /// The mutex's path, as given to the constructor.
  const std::string& path() const noexcept { return detail::lock_dir_path(*state_); }
  /// The executor operations complete on by default.
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
  /// operation_aborted. While the session is disconnected that cleanup has to wait for the
  /// reconnect (or the expiry, which removes node and watch): a terminal or partial
  /// cancellation completes at once then and the cleanup finishes in the background.
  /// Connected, it waits for the cleanup 500 ms at most (a server that stopped answering), or
  /// until the connection drops, then completes, the cleanup going on. A total
  /// cancellation (Asio: nothing happened) completes only once the cleanup is done. The timeout
  /// of async_acquire_for behaves as terminal. Dropped connections are survived: a create lost in
  /// flight is found again by the unique id in the node name instead of being created twice.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(Token&& token = {}) {
    return initiate(token, {});
  }

  /// Timed acquire: like async_acquire, and gives up after `timeout` with errc::lock_timeout,
  /// cleaned up as for cancellation. (Equivalent idiom: bind a cancellation slot fed by a timer,
  /// e.g. `asio::experimental::make_parallel_group` or `||` of awaitable_operators.)
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_for(clock::duration timeout, Token&& token = {}) {
    return initiate(token, {.timeout = timeout});
  }

  /// Never waits: errc::lock_busy when someone else holds the lock; no node is left behind.
  template <class Token = detail::default_token_t<Executor>>
  auto async_try_acquire(Token&& token = {}) {
    return initiate(token, {.mode = detail::lock_mode::try_once});
  }

  /// Reentrant acquire: if `owner` holds this lock through this mutex object, completes at
  /// once with another guard on the same hold (hold_count() + 1); the node is deleted when the
  /// last of them is released. Otherwise acquires as async_acquire and records `owner`.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(owner_id owner, Token&& token = {}) {
    return initiate(token, {.owner = owner});
  }

 private:
  template <class>
  friend class basic_mutex;
  template <class>
  friend class basic_shared_mutex;

  template <class Token>
  auto initiate(Token& token, detail::acquire_params p) {
    return asio::async_initiate<Token, void(error_code, lock_guard)>(
        [state = state_](auto h, detail::acquire_params params) {
          detail::start_acquire(state, detail::acquire_handler(std::move(h)), std::move(params));
        },
        token, std::move(p));
  }

  std::shared_ptr<detail::lock_dir> state_;
  executor_type ex_;
};

/// A mutex whose operations default to asio::deferred.
using mutex = basic_mutex<>;

}  // namespace zklock
