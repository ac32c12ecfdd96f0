// zklock::election: leader election on ZooKeeper (Curator LeaderLatch's layout) as Asio async
// operations, on the lock recipe's engine.
#pragma once

#include <zklock/detail/election.hpp>
#include <zklock/lock_guard.hpp>
#include <zklock/mutex.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zklock {

/// Options of an election.
struct election_options {
  /// Lock-delay (zero: off): a candidate whose leader ahead went with its session (an expiry,
  /// not a resignation) takes the lead this long later. See mutex_options::lock_delay.
  std::chrono::milliseconds lock_delay{0};
};

/// This candidate leads: a lock_guard on our election node, plus our identity. Move-only.
/// Destroying it (or move-assigning over it) without async_resign resigns in the background,
/// as a lock_guard releases. Use from the session's executor (the destructor: any thread).
class leadership {
 public:
  /// The executor its operations complete on (the election's).
  using executor_type = asio::any_io_executor;
  /// Asio's rebind trait (as_default_on_t): the same type, a leadership does not depend on an executor type.
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_to_self<leadership>;

  /// An empty leadership: not leading, status() released.
  leadership() = default;
  /// Moves; the moved-from leadership is empty.
  leadership(leadership&&) noexcept = default;
  /// Resigns in the background what this one led (as its destructor does), then takes over the other's.
  leadership& operator=(leadership&&) noexcept = default;

  /// The executor its operations complete on (the election's).
  executor_type get_executor() const noexcept { return guard_.get_executor(); }
  /// True while we lead (status held or maybe_lost: a suspended connection that the session
  /// may survive; bind the work to lost_slot() rather than polling this).
  bool is_leader() const noexcept { return guard_.owns_lock(); }
  /// is_leader().
  explicit operator bool() const noexcept { return is_leader(); }
  /// The state of our election node's hold (lock_guard::status()).
  lock_status status() const noexcept { return guard_.status(); }
  /// The participant id we campaigned with (empty for an empty leadership).
  const std::string& identity() const noexcept { return identity_; }
  /// Our election node's full path, "<path>/_c_<uuid>-latch-<seq>".
  const std::string& node_path() const noexcept { return guard_.node_path(); }
  /// Our node's czxid: strictly increasing across successive leaders of the path (even when
  /// the container path is reaped and recreated). Pass it with every write the leader makes.
  std::int64_t fencing_token() const noexcept { return guard_.fencing_token(); }
  /// The leader-until deadline: the send time of our session's most recent answered request
  /// plus the negotiated session timeout minus the validity margin. The server cannot expire
  /// our session, so cannot let any other candidate lead, before then. zklock keeps it ahead
  /// while we lead; when it passes without a reply, leadership is reported lost (lost_slot()
  /// is emitted) — before anyone else can lead. time_point::min() once we do not lead.
  std::chrono::steady_clock::time_point valid_until() const noexcept { return guard_.valid_until(); }
  /// Emitted (terminal) when leadership is lost: bind the leader's work to it
  /// (asio::bind_cancellation_slot(l.lost_slot(), token)). One handler at a time.
  asio::cancellation_slot lost_slot() const noexcept { return guard_.lost_slot(); }
  /// A `check` of our node: first in a transaction, the transaction applies only while we lead.
  multi_op check_op() const { return guard_.check_op(); }
  /// `ops` behind check_op(): `co_await s.async_multi(l.guarded(std::move(ops)), ...)`.
  std::vector<multi_op> guarded(std::vector<multi_op> ops) const { return guard_.guarded(std::move(ops)); }
  /// The lock guard underneath (for code written against lock_guard).
  const lock_guard& guard() const noexcept { return guard_; }
  /// The same, to move the guard out (std::move(l.guard())): what it holds is this leadership.
  lock_guard& guard() noexcept { return guard_; }

  /// Completes with errc::lock_lost when leadership is lost (session expired or closed, the
  /// leader-until deadline passed, our node deleted by someone else, our node found owned by
  /// another session after a reconnect); errc::already_released once resigned (or empty).
  /// Handler: void(error_code). Cancellation: all types, nothing left. Captures the hold.
  template <class Token = asio::deferred_t>
  auto async_wait_lost(Token&& token = {}) {
    return guard_.async_wait_lost(std::forward<Token>(token));
  }

  /// Supervision of the leader's work: completes (no error) once the leader-until deadline
  /// (valid_until()) is `lead` away and no reply from ZooKeeper has moved it on — the moment to
  /// stop work that must be over before anyone else can lead (zklock elect sends its command
  /// SIGTERM then). While ZooKeeper answers, the deadline stays more than half a session timeout
  /// ahead, so a `lead` below that never completes on a healthy session. Completes with
  /// errc::lock_lost if leadership is lost first, errc::already_released once resigned (or
  /// empty). Handler: void(error_code). Cancellation: all types, operation_aborted, nothing
  /// left. Captures the hold (lock_guard::async_wait_deadline).
  template <class Token = asio::deferred_t>
  auto async_wait_deadline(std::chrono::steady_clock::duration lead, Token&& token = {}) {
    return guard_.async_wait_deadline(lead, std::forward<Token>(token));
  }

  /// Completes (no error) when someone asks this leader to step down by Curator's revocation
  /// protocol ("__REVOKE__" written into our node: zklock::async_revoke_holders, `zklock revoke
  /// PATH`): cooperative, we still lead; resign if you agree. A leader writes its identity back
  /// over each request as soon as it reads it (it keeps one data watch on its node for that), so
  /// observers go on seeing who leads; a request that came while nobody waited is reported to
  /// the next wait. Errors, cancellation: as lock_guard::async_wait_revoked
  /// (errc::already_released once resigned).
  template <class Token = asio::deferred_t>
  auto async_wait_revoked(Token&& token = {}) {
    return guard_.async_wait_revoked(std::forward<Token>(token));
  }

  /// Resigns: deletes our node, and the next candidate (watching it) leads on that event with
  /// no request (it lists again first only if candidates it did not watch may stand ahead).
  /// Handler: void(error_code); errors as lock_guard::async_release
  /// (already_released, lock_lost, release_pending while disconnected: the node is deleted
  /// after the reconnect or goes with the session). Not cancellable. The election object may
  /// campaign again afterwards.
  template <class Token = asio::deferred_t>
  auto async_resign(Token&& token = {}) {
    return guard_.async_release(std::forward<Token>(token));
  }

 private:
  friend struct detail::access;
  leadership(lock_guard g, std::string identity) noexcept : guard_(std::move(g)), identity_(std::move(identity)) {}

  lock_guard guard_;
  std::string identity_;
};

/// A leader election on `path` (its candidates' nodes are its children), wire-compatible with
/// Curator's LeaderLatch: each candidate is a protected ephemeral-sequential node
/// "<path>/_c_<uuid>-latch-<seq>" whose data is the participant id (UTF-8); the path and its
/// missing ancestors are created as containers. The candidate with the lowest sequence leads;
/// every other one watches only its predecessor (no herd). Leadership is declared only when our
/// node is first and belongs to our current session (ZooKeeper's ephemeralOwner: CURATOR-696),
/// and re-checked after every reconnect. A container path reaped under us is recreated.
///
/// Thread safety: like the session (use it from the session's executor). Lifetimes: the
/// session must outlive the election; pending operations keep what they need alive. Several
/// campaigns on one object are several candidates; a candidate that resigned (or lost) may
/// campaign again on the same object.
template <class Executor = asio::any_io_executor>
class basic_election {
 public:
  /// The executor operations complete on by default.
  using executor_type = Executor;
  /// The clock of async_campaign_for's timeout.
  using clock = std::chrono::steady_clock;
  /// Asio's rebind trait (as_default_on_t): the same election type on `OtherExecutor`.
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_executor<basic_election, OtherExecutor>;

  /// `identity`: this participant's id, stored as its node's data (Curator's participant id).
  template <class SessionExecutor>
  basic_election(basic_session<SessionExecutor>& s, std::string path, std::string identity)
      : state_(detail::make_election_state(detail::access::impl(s), std::move(path), std::move(identity))),
        ex_(executor_type(s.get_executor())) {}
  /// With options (lock_delay).
  template <class SessionExecutor>
  basic_election(basic_session<SessionExecutor>& s, std::string path, std::string identity, election_options o)
      : basic_election(s, std::move(path), std::move(identity)) {
    detail::set_lock_delay(detail::election_dir(state_), o.lock_delay);
  }
  /// Takes over an election of another executor type (what `as_default_on` does).
  template <detail::converts_to_executor<Executor> OtherExecutor>
  basic_election(basic_election<OtherExecutor>&& other) noexcept : state_(std::move(other.state_)), ex_(other.ex_) {}
  /// Moves; the moved-from object may only be destroyed or assigned to.
  basic_election(basic_election&&) noexcept = default;
  /// Move assignment; the moved-from object may only be destroyed or assigned to.
  basic_election& operator=(basic_election&&) noexcept = default;

  /// The election's path, as given to the constructor.
  const std::string& path() const noexcept { return detail::election_path(*state_); }
  /// This participant's id, as given to the constructor.
  const std::string& identity() const noexcept { return detail::election_identity(*state_); }
  /// The executor operations complete on by default.
  executor_type get_executor() const noexcept { return ex_; }

  /// Joins the election and completes once this candidate leads.
  /// Handler: void(error_code, leadership). Errors: path errors (nothing sent),
  /// errc::session_expired / session_closed (the session ended while campaigning, or the grant
  /// arrived after it ended: never a leadership then), ZooKeeper errors such as no_auth.
  /// Cancellation (terminal, partial, total) at any step: our node is deleted (once a create
  /// in flight has answered) and our watch removed, then operation_aborted; as
  /// mutex::async_acquire (while disconnected, terminal and partial complete at once and the
  /// cleanup finishes in the background; total waits for it).
  template <class Token = detail::default_token_t<Executor>>
  auto async_campaign(Token&& token = {}) {
    return initiate(token, clock::duration::max());
  }
  /// As async_campaign, giving up after `timeout` with errc::lock_timeout (cleaned up).
  template <class Token = detail::default_token_t<Executor>>
  auto async_campaign_for(clock::duration timeout, Token&& token = {}) {
    return initiate(token, timeout);
  }

  /// Leads at once or not at all, as mutex::async_try_acquire: completes with errc::lock_busy
  /// when another candidate is ahead (decided on one read when there are candidates already,
  /// nothing written; our node, if created, is deleted before). Handler and errors as
  /// async_campaign's.
  template <class Token = detail::default_token_t<Executor>>
  auto async_try_campaign(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, leadership)>(
        [state = state_](auto h) { detail::try_campaign(state, detail::leadership_handler(std::move(h))); }, token);
  }

  /// The current leader, or nullopt when nobody leads (no candidate, or no path).
  /// Handler: void(error_code, std::optional<leader_info>). One listing and one read (again if
  /// the head went in between). A revocation request ("__REVOKE__") in the leader's node is not
  /// its identity: read again once the leader has written its identity back; a leader that never
  /// does (Curator's, kazoo's) is reported with "__REVOKE__" after one session timeout.
  /// Errors: errc::not_connected, session_expired, session_closed. Cancellation: all types.
  template <class Token = detail::default_token_t<Executor>>
  auto async_leader(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::optional<leader_info>)>(
        [state = state_](auto h) { detail::query_leader(state, detail::leader_handler(std::move(h))); }, token);
  }

  /// Completes when the leader differs from `known` (at once if it already does) with the new
  /// one; nullopt means nobody leads. Pass the last value you saw to miss no change, as
  /// session::async_wait_state. One watch at a time (a data watch on the leader's node, or a
  /// child watch on the path while it is empty; an exists watch while it does not exist), no
  /// polling. A revocation request in the leader's node changes nothing (see async_leader).
  /// Handler: void(error_code, std::optional<leader_info>). Errors: errc::not_connected (not
  /// connected when started), session_expired / session_closed. Cancellation: all types; the
  /// watch is removed before operation_aborted; while the session is not connected, terminal
  /// and partial cancellation complete at once and the watch is removed after the reconnect
  /// (total waits for that), as async_campaign.
  template <class Token = detail::default_token_t<Executor>>
  auto async_observe(std::optional<leader_info> known, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::optional<leader_info>)>(
        [state = state_](auto h, std::optional<leader_info> seen) {
          detail::observe_leader(state, std::move(seen), detail::leader_handler(std::move(h)));
        },
        token, std::move(known));
  }

  /// The candidates in queue order, the leader first (contender::data is each one's id).
  template <class Token = detail::default_token_t<Executor>>
  auto async_candidates(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::vector<contender>)>(
        [state = state_](auto h) {
          detail::list_contenders(detail::election_dir(state), detail::contenders_handler(std::move(h)));
        },
        token);
  }

 private:
  template <class>
  friend class basic_election;

  template <class Token>
  auto initiate(Token& token, clock::duration timeout) {
    return asio::async_initiate<Token, void(error_code, leadership)>(
        [state = state_](auto h, clock::duration limit) {
          detail::start_campaign(state, detail::leadership_handler(std::move(h)), limit);
        },
        token, timeout);
  }

  std::shared_ptr<detail::election_state> state_;
  executor_type ex_;
};

/// An election whose operations default to the executor's default token (asio::deferred).
using election = basic_election<>;

}  // namespace zklock
