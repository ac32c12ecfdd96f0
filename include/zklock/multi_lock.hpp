// zklock::multi_lock: several locks taken as one, in a global order, all or nothing.
#pragma once

#include <zklock/detail/multi_lock.hpp>
#include <zklock/mutex.hpp>

#include <algorithm>

namespace zklock {

/// The guards of a multi_lock: releases them all. Move-only; destroying it releases every hold
/// in the background, as each lock_guard does.
class multi_guard {
 public:
  multi_guard() = default;
  /// Owns `guards` (a multi_lock's, in its order).
  explicit multi_guard(std::vector<lock_guard> guards) noexcept : guards_(std::move(guards)) {}
  /// Moves; the moved-from guard is empty.
  multi_guard(multi_guard&&) noexcept = default;
  /// Releases this guard's holds in the background (as each lock_guard's move assignment does), then takes over the other's.
  multi_guard& operator=(multi_guard&&) noexcept = default;

  /// True while every lock is held (status held or maybe_lost).
  bool owns_lock() const noexcept {
    if (guards_.empty()) return false;
    for (auto& g : guards_)
      if (!g.owns_lock()) return false;
    return true;
  }
  /// owns_lock().
  explicit operator bool() const noexcept { return owns_lock(); }
  /// In the multi_lock's (global) order: by path.
  const std::vector<lock_guard>& guards() const noexcept { return guards_; }

  /// Releases every lock. Handler: void(error_code): errc::lock_lost if any was lost first
  /// (the others are still released), errc::already_released for an empty or released guard,
  /// errc::release_pending if any release waits for the reconnect. Not cancellable.
  template <class Token = asio::deferred_t>
  auto async_release(Token&& token = {}) {
    std::vector<detail::release_ticket> tickets;
    for (auto& g : guards_) tickets.push_back(g.take_release_ticket());
    auto ex = guards_.empty() ? asio::any_io_executor() : guards_.front().get_executor();
    guards_.clear();
    return asio::async_initiate<Token, void(error_code)>(
        [](auto h, std::vector<detail::release_ticket> all, asio::any_io_executor guards_ex) {
          detail::release_all(std::move(all), std::move(guards_ex), detail::void_handler(std::move(h)));
        },
        token, std::move(tickets), std::move(ex));
  }

 private:
  std::vector<lock_guard> guards_;
};

/// Acquires several locks as one. Each is a mutex path or a side of a shared_mutex path;
/// `async_acquire` takes them one after another in a global order (by path), so two
/// multi_locks over overlapping sets cannot deadlock each other (nor a multi_lock and a single
/// lock). All or nothing: on an error, cancellation or timeout the locks already taken are
/// released before the handler runs, and the acquire under way is cleaned up as a mutex's.
///
/// The same path twice is one lock (the stronger side kept). Handlers, cancellation and
/// lifetimes: as basic_mutex's; the handler gets a multi_guard.
template <class Executor = asio::any_io_executor>
class basic_multi_lock {
 public:
  /// The executor operations complete on by default.
  using executor_type = Executor;
  /// The clock of async_acquire_for's timeout.
  using clock = std::chrono::steady_clock;
  /// Asio's rebind trait (as_default_on_t): the same multi-lock type on `OtherExecutor`.
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_executor<basic_multi_lock, OtherExecutor>;
  /// A mutex (exclusive), or a shared_mutex's read or write side.
  using side = lock_kind;
  /// One lock of the set.
  struct entry {
    /// the lock's path (a mutex's or a shared_mutex's)
    std::string path;
    /// exclusive for a mutex; read or write for a side of a shared_mutex
    side mode = side::exclusive;
  };

  /// The locks `entries` through session `s` (of any executor type), sorted by path; the same
  /// path twice is one entry, with the stronger side.
  template <class SessionExecutor>
  basic_multi_lock(basic_session<SessionExecutor>& s, std::vector<entry> entries) : ex_(executor_type(s.get_executor())) {
    std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) { return a.path < b.path; });
    for (auto& e : entries) {
      auto k = e.mode;
      if (!items_.empty() && detail::lock_dir_path(*items_.back().dir) == e.path) {
        if (items_.back().kind == lock_kind::read) items_.back().kind = k;  // the stronger side
        continue;
      }
      items_.push_back({detail::make_lock_dir(detail::access::impl(s), std::move(e.path)), k});
    }
  }
  /// Mutexes only.
  template <class SessionExecutor>
  basic_multi_lock(basic_session<SessionExecutor>& s, const std::vector<std::string>& paths)
      : basic_multi_lock(s, to_entries(paths)) {}
  /// Takes over a multi-lock of another executor type (what `as_default_on` does).
  template <detail::converts_to_executor<Executor> OtherExecutor>
  basic_multi_lock(basic_multi_lock<OtherExecutor>&& other) noexcept : items_(std::move(other.items_)), ex_(other.ex_) {}

  /// The executor operations complete on by default.
  executor_type get_executor() const noexcept { return ex_; }
  /// The paths in acquisition order.
  std::vector<std::string> paths() const {
    std::vector<std::string> out;
    for (auto& i : items_) out.push_back(detail::lock_dir_path(*i.dir));
    return out;
  }

  /// Takes every lock, one after another in path order, and completes once all are held.
  /// Handler: void(error_code, multi_guard). Errors and cancellation: as basic_mutex::async_acquire
  /// for each lock; on any of them the locks already taken are released before the handler runs.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(Token&& token = {}) {
    return initiate(token, clock::duration::max());
  }
  /// errc::lock_timeout when all are not held after `timeout`; nothing is kept.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_for(clock::duration timeout, Token&& token = {}) {
    return initiate(token, timeout);
  }

 private:
  template <class>
  friend class basic_multi_lock;

  static std::vector<entry> to_entries(const std::vector<std::string>& paths) {
    std::vector<entry> e;
    for (auto& p : paths) e.push_back({p, side::exclusive});
    return e;
  }
  template <class Token>
  auto initiate(Token& token, clock::duration timeout) {
    return asio::async_initiate<Token, void(error_code, multi_guard)>(
        [items = items_, ex = ex_](auto h, clock::duration t) {
          detail::start_multi(items, detail::multi_handler_t(std::move(h)), t, ex);
        },
        token, timeout);
  }

  std::vector<detail::multi_lock_item> items_;
  executor_type ex_;
};

/// A multi-lock on the default executor type (asio::any_io_executor).
using multi_lock = basic_multi_lock<>;

}  // namespace zklock
