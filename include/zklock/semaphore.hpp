// zklock::semaphore: a counting semaphore of leases on ZooKeeper (Curator's
// InterProcessSemaphoreV2 layout) as Asio async operations.
#pragma once

#include <zklock/detail/semaphore.hpp>
#include <zklock/mutex.hpp>

namespace zklock {

/// Options of a semaphore.
struct semaphore_options {
  /// Who holds or waits, in our lease nodes' data (contender::identity of async_leases,
  /// `zklock holders PATH/leases`): this instead of session_options::identity (default
  /// "<hostname>:<pid>"); empty: none.
  std::optional<std::string> identity = std::nullopt;
  /// Lock-delay for the leases (zero: off): see mutex_options::lock_delay. A waiter reads each
  /// lease holder's owner while it waits (one exists each); when a holder's lease went with its
  /// session, the grant waits this long more. The beacons are in "<path>/__zklock_sessions__".
  std::chrono::milliseconds lock_delay{0};
};

/// At most `max_leases` holders at once of the leases of `path`. A lease is a lock_guard on an
/// ephemeral node "<path>/leases/_c_<id>-lease-<seq>": it is given back by release (or the
/// guard's destruction), and comes back by itself when its session expires. Lost-tracking,
/// the validity deadline, check_op() and lost_slot() work as for a mutex's guard.
///
/// Algorithm (Curator's InterProcessSemaphoreV2, wire-compatible on the same path): behind an
/// internal mutex on "<path>/locks", create our lease node, and wait while more than
/// max_leases lease nodes exist, watching "<path>/leases"; then give the internal mutex back.
/// Only the internal mutex's holder watches the leases: a release wakes one waiter, no herd;
/// grants are FIFO (the internal mutex's queue). A create lost with the connection is found
/// again by its id after the reconnect (no orphaned lease: Curator's bug); cancellation and
/// timeouts at any step delete our lease node and our internal-mutex node and remove our
/// watches.
///
/// The maximum is per client, as Curator's (without its SharedCount option): each acquirer
/// applies its own when it is the one waiting, so two clients that disagree see the larger
/// limit reached when the one with the larger maximum acquires. Give every client the same.
///
/// Handlers, errors, cancellation and lifetimes: as basic_mutex's operations of the same name.
template <class Executor = asio::any_io_executor>
class basic_semaphore {
 public:
  /// The executor operations complete on by default.
  using executor_type = Executor;
  /// The clock of the `_for` operations' timeouts.
  using clock = std::chrono::steady_clock;
  /// Asio's rebind trait (as_default_on_t): the same semaphore type on `OtherExecutor`.
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_executor<basic_semaphore, OtherExecutor>;

  /// max_leases < 1: every acquire fails with errc::invalid_max_leases.
  template <class SessionExecutor>
  explicit basic_semaphore(basic_session<SessionExecutor>& s, std::string path, int max_leases,
                           semaphore_options o = {})
      : state_(detail::make_semaphore_state(detail::access::impl(s), std::move(path), max_leases, o.identity)),
        ex_(executor_type(s.get_executor())) {
    detail::set_lock_delay(detail::semaphore_leases(state_), o.lock_delay);
  }
  /// Takes over a semaphore of another executor type (what `as_default_on` does).
  template <detail::converts_to_executor<Executor> OtherExecutor>
  basic_semaphore(basic_semaphore<OtherExecutor>&& other) noexcept : state_(std::move(other.state_)), ex_(other.ex_) {}
  /// Moves; the moved-from object may only be destroyed or assigned to.
  basic_semaphore(basic_semaphore&&) noexcept = default;
  /// Move assignment; the moved-from object may only be destroyed or assigned to.
  basic_semaphore& operator=(basic_semaphore&&) noexcept = default;

  /// The most leases held at once, as given to the constructor.
  int max_leases() const noexcept { return detail::semaphore_max_leases(*state_); }
  /// "<path>/leases": where the lease nodes are.
  const std::string& leases_path() const noexcept { return detail::semaphore_leases_path(*state_); }
  /// The executor operations complete on by default.
  executor_type get_executor() const noexcept { return ex_; }

  /// Waits for a lease. Handler: void(error_code, lock_guard); guard.kind() is lock_kind::lease.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire(Token&& token = {}) {
    return initiate(token, {.kind = lock_kind::lease});
  }
  /// errc::lock_timeout after `timeout` (both steps count), cleaned up.
  template <class Token = detail::default_token_t<Executor>>
  auto async_acquire_for(clock::duration timeout, Token&& token = {}) {
    return initiate(token, {.kind = lock_kind::lease, .timeout = timeout});
  }
  /// errc::lock_busy when all leases are taken (decided on one read of the leases dir: no
  /// write), or when another acquirer holds the internal mutex (it is waiting for a lease).
  template <class Token = detail::default_token_t<Executor>>
  auto async_try_acquire(Token&& token = {}) {
    return initiate(token, {.mode = detail::lock_mode::try_once, .kind = lock_kind::lease});
  }

  /// The leases held now, oldest first (contender::kind is lock_kind::lease).
  template <class Token = detail::default_token_t<Executor>>
  auto async_leases(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::vector<contender>)>(
        [state = state_](auto h) {
          detail::list_contenders(detail::semaphore_leases(state), detail::contenders_handler(std::move(h)));
        },
        token);
  }

 private:
  template <class>
  friend class basic_semaphore;

  template <class Token>
  auto initiate(Token& token, detail::acquire_params p) {
    return asio::async_initiate<Token, void(error_code, lock_guard)>(
        [state = state_](auto h, detail::acquire_params params) {
          detail::start_lease(state, detail::acquire_handler(std::move(h)), std::move(params));
        },
        token, std::move(p));
  }

  std::shared_ptr<detail::semaphore_state> state_;
  executor_type ex_;
};

/// A semaphore on the default executor type (asio::any_io_executor).
using semaphore = basic_semaphore<>;

}  // namespace zklock
