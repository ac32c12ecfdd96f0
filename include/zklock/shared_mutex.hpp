// zklock::shared_mutex: the ZooKeeper shared-lock (read/write) recipe as Asio async operations.
#pragma once

#include <zklock/detail/rebind.hpp>
#include <zklock/mutex.hpp>

namespace zklock {

/// Options of a shared_mutex.
struct shared_mutex_options {
  /// Who holds or waits, in our nodes' data (contender::identity, `zklock holders`): this
  /// instead of session_options::identity (default "<hostname>:<pid>"); empty: none. A
  /// downgraded writer keeps it.
  std::optional<std::string> identity = std::nullopt;
  /// Lock-delay for readers and writers (zero: off): see mutex_options::lock_delay.
  std::chrono::milliseconds lock_delay{0};
};

/// A distributed read/write lock on `path` (a lock dir): any number of readers hold it
/// together, a writer alone. FIFO by sequence: a reader queued behind a waiting writer waits
/// for it, so a stream of readers cannot starve writers. Each contender watches one node only
/// (a reader the nearest writer ahead, a writer the nearest node ahead): one wake-up per
/// release that matters, no herd.
///
/// Wire-compatible with Curator's InterProcessReadWriteLock on the same path (nodes
/// "_c_<id>-__READ__<seq>" and "_c_<id>-__WRIT__<seq>"), and with kazoo's ReadLock and
/// WriteLock when they are told Curator's markers: ReadLock(extra_lock_patterns=["__WRIT__"]),
/// WriteLock(extra_lock_patterns=["__WRIT__", "__READ__"]). zklock also honours kazoo's own
/// "__rlock__" / "__lock__" nodes, but Curator does not, so Curator and kazoo cannot share a
/// path with each other.
///
/// Guards are lock_guard (kind() says read or write); a write guard can be downgraded
/// (lock_guard::async_downgrade) without a writer getting in between. There is no upgrade: a
/// reentrant owner holding the read side that asks for the write side gets
/// errc::upgrade_refused at once (it would wait behind its own read); release the read side
/// first.
///
/// Handlers, errors, cancellation and lifetimes: as basic_mutex's operations of the same name.
template <class Executor = asio::any_io_executor>
class basic_shared_mutex {
 public:
  /// The executor operations complete on by default.
  using executor_type = Executor;
  /// The clock of the `_for` operations' timeouts.
  using clock = std::chrono::steady_clock;
  /// Asio's rebind trait (as_default_on_t): the same shared mutex type on `OtherExecutor`.
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_executor<basic_shared_mutex, OtherExecutor>;

  /// A read/write lock on `path` through session `s` (of any executor type).
  template <class SessionExecutor>
  explicit basic_shared_mutex(basic_session<SessionExecutor>& s, std::string path) : m_(s, std::move(path)) {}
  /// A read/write lock on `path` through session `s`, with options (the identity in our nodes' data).
  template <class SessionExecutor>
  basic_shared_mutex(basic_session<SessionExecutor>& s, std::string path, shared_mutex_options o)
      : m_(s, std::move(path), mutex_options{.identity = std::move(o.identity), .lock_delay = o.lock_delay}) {}
  /// Takes over a shared mutex of another executor type (what `as_default_on` does).
  template <detail::converts_to_executor<Executor> OtherExecutor>
  basic_shared_mutex(basic_shared_mutex<OtherExecutor>&& other) noexcept : m_(std::move(other.m_)) {}
  /// Moves; the moved-from object may only be destroyed or assigned to.
  basic_shared_mutex(basic_shared_mutex&&) noexcept = default;
  /// Move assignment; the moved-from object may only be destroyed or assigned to.
  basic_shared_mutex& operator=(basic_shared_mutex&&) noexcept = default;

  /// The shared mutex's path, as given to the constructor.
  const std::string& path() const noexcept { return m_.path(); }
  /// The executor operations complete on by default.
  executor_type get_executor() const noexcept { return m_.get_executor(); }

  /// The queue, holders first; contender::kind says read or write.
  template <class Token = detail::default_token_t<Executor>>
  auto async_contenders(Token&& token = {}) {
    return m_.async_contenders(std::forward<Token>(token));
  }

  /// The write side: waits until no one ahead holds or waits.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(Token&& token = {}) {
    return m_.initiate(token, {.kind = lock_kind::write});
  }
  /// The write side, giving up after `timeout` with errc::lock_timeout (as basic_mutex::async_acquire_for).
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_for(clock::duration timeout, Token&& token = {}) {
    return m_.initiate(token, {.kind = lock_kind::write, .timeout = timeout});
  }
  /// errc::lock_busy on one read of the lock dir when anyone is queued: no write.
  template <class Token = detail::default_token_t<Executor>>
  auto async_try_acquire(Token&& token = {}) {
    return m_.initiate(token, {.mode = detail::lock_mode::try_once, .kind = lock_kind::write});
  }
  /// Reentrant write: another guard on the owner's hold if it holds the write side;
  /// errc::upgrade_refused if it holds the read side.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(owner_id owner, Token&& token = {}) {
    return m_.initiate(token, {.kind = lock_kind::write, .owner = owner});
  }

  /// The read side: waits only for writers queued ahead.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_shared(Token&& token = {}) {
    return m_.initiate(token, {.kind = lock_kind::read});
  }
  /// The read side, giving up after `timeout` with errc::lock_timeout (as basic_mutex::async_acquire_for).
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_shared_for(clock::duration timeout, Token&& token = {}) {
    return m_.initiate(token, {.kind = lock_kind::read, .timeout = timeout});
  }
  /// errc::lock_busy on one read of the lock dir when a writer is queued: no write.
  template <class Token = detail::default_token_t<Executor>>
  auto async_try_acquire_shared(Token&& token = {}) {
    return m_.initiate(token, {.mode = detail::lock_mode::try_once, .kind = lock_kind::read});
  }
  /// Reentrant read: another guard on the owner's hold if it holds either side (a write hold
  /// covers reading).
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_shared(owner_id owner, Token&& token = {}) {
    return m_.initiate(token, {.kind = lock_kind::read, .owner = owner});
  }

 private:
  template <class>
  friend class basic_shared_mutex;
  basic_mutex<Executor> m_;
};

/// A shared mutex on the default executor type (asio::any_io_executor).
using shared_mutex = basic_shared_mutex<>;

}  // namespace zklock
