// zklock::session: one ZooKeeper session, driven by the single-threaded C client on the
// executor it is given. No thread is started.
#pragma once

#include <zklock/detail/session.hpp>
#include <zklock/error.hpp>
#include <zklock/metrics.hpp>
#include <zklock/path.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace zklock {

namespace asio = boost::asio;

/// Counters of one session since its construction.
struct session_stats {
  /// requests sent to the server
  std::uint64_t requests_sent = 0;
  /// the most requests that were outstanding (sent, not answered) at once: never more than
  /// session_options::max_outstanding_requests
  std::uint64_t max_outstanding_requests = 0;
  /// the most requests that waited in the session for room in that window at once
  std::uint64_t max_queued_requests = 0;
  /// listings (unwatched get_children) that joined one of the same node still waiting to be sent
  std::uint64_t listings_coalesced = 0;
  /// requests outstanding now (sent, not answered)
  std::uint64_t outstanding_requests = 0;
  /// requests waiting in the session for room in the window now
  std::uint64_t queued_requests = 0;
  std::uint64_t watch_events = 0;                  ///< events of every type
  std::uint64_t watch_events_by_type[5] = {};      ///< indexed by watch_event_type
  /// watch events of type `t` received
  std::uint64_t events(watch_event_type t) const noexcept { return watch_events_by_type[static_cast<int>(t)]; }
};

/// A session's id and password, enough to re-attach to it.
struct session_credentials {
  /// the session id (0: none)
  std::int64_t id = 0;
  /// the session password (16 bytes, binary)
  std::string password;  // 16 bytes
};

/// How a session connects, times out, authenticates and logs; given to basic_session's
/// constructor and readable through basic_session::options().
struct session_options {
  /// "host:port[,host:port...][/chroot]"; a host is a name, an IPv4 address or an IPv6 address in
  /// brackets ("[::1]:2181"). Names are looked up with asio's resolver (never on the loop, never
  /// under a lock other sessions take), at each async_connect and again after a connection loss
  /// (at most once a second while no server answers): a server whose name moved to another
  /// address is followed. The C client is handed the addresses.
  std::string connect = "127.0.0.1:2181";
  /// Requested session timeout; the server clamps it to [2, 20] × its tickTime.
  std::chrono::milliseconds session_timeout{10000};
  /// Taken off the validity deadline of held locks (lock_guard::valid_until), which is the
  /// send time of the newest answered request plus the negotiated session timeout. It covers
  /// our own timer firing late on a loaded machine and the delay before a killed critical
  /// section is really gone; clock-rate drift between two monotonic clocks is negligible and
  /// the server rounds expiry up to its next tick. Zero: a tenth of the negotiated timeout,
  /// at least 200 ms. On an ensemble, a follower tells the leader of our requests at its next
  /// ping (every half tick); a follower that dies right after answering us may never tell it:
  /// add a tick to the margin where that matters.
  std::chrono::milliseconds validity_margin{0};
  /// async_connect fails with errc::connect_timeout when no server accepted the session by then
  /// (the lookup of the names included).
  std::chrono::milliseconds connect_timeout{10000};
  /// "user:password" for zoo_add_auth("digest", ...); empty for none.
  std::string digest_auth;
  /// ACL for nodes this session creates. creator_all needs digest_auth.
  acl_policy default_acl = acl_policy::open;
  /// Where the C client's log goes (and zklock's own lines). Default: lines at or above
  /// log_threshold to stderr. Called on the session's executor, never under the lock every
  /// session's calls into the C client take turns with (its lines are handed over once the
  /// call returned): a slow sink delays its own session only.
  log_sink log;
  /// Lines less severe than this are dropped, for the default sink and for `log` alike.
  log_level log_threshold = log_level::warn;
  /// While a server is unreachable the C client logs a failure line per attempt, several a
  /// second, at error level. Summarised (the default), each server's failure is reported once
  /// per outage in a line of zklock's own at warn level ("zklock: ZooKeeper server HOST:PORT
  /// unreachable: Connection refused (retrying; ...)") and the raw lines are passed at debug
  /// level. false: every line at the C client's own level.
  bool summarize_client_log = true;
  /// Called (on the executor) with the path of a node whose create was cancelled by the caller
  /// but which the server created anyway. Default: log a warning.
  std::function<void(const std::string& path)> on_abandoned_create;
  /// Re-attach to an existing session (id and password from session::credentials()) instead of
  /// creating one, as the C client allows. Closing such a session ends it for its first owner
  /// too (tests use this to expire a session on purpose).
  std::optional<session_credentials> resume;
  /// Per-path counters and latency histograms of this session's locks (session::lock_metrics()),
  /// their bound, and a hook called on every lock event. See zklock/metrics.hpp.
  lock_metrics_options lock_metrics;
  /// Who this program is, in the data of the lock nodes it creates (mutex, shared_mutex,
  /// semaphore and multi_lock contenders, after the protocol marker: "zklock/3 web-1:4242"):
  /// what `zklock holders` and async_contenders() (contender::identity) show of each holder
  /// and waiter. Default (nullopt): "<hostname>:<pid>", the pid as the host sees it (in a PID
  /// namespace of its own, such as `zklock exec`'s command: "<hostname>:<outer-pid>/<inner-pid>").
  /// Empty: none (the marker alone). A session constructed where $ZKLOCK_SESSION names a
  /// session ("0x<hex>": `zklock exec` sets it for its command) appends " parent=0x<hex>" to a
  /// non-empty identity: contender::parent, by which `zklock locks` sees a deadlock across a
  /// process tree (the parent holds what its child's wait blocks).
  /// mutex_options, shared_mutex_options and semaphore_options override it per object. Text,
  /// short: it is stored in every node. Election candidates carry their participant id instead.
  std::optional<std::string> identity;
  /// The window of outstanding requests: at most this many requests of the session are with
  /// the server (sent, not answered) at once; the rest wait in the session, in the order they
  /// were made, and leave as answers come back. A burst (ten thousand acquires at once) cannot
  /// flood the server's memory with requests and their answers. Listings (unwatched
  /// get_children) of one node that are still waiting coalesce: one listing answers every asker
  /// (up to this many, at least 2), sent at the newest asker's place in the order, so each asker's earlier
  /// requests (a contender's create) are answered before it, and an earlier asker sees a state
  /// at least as recent as the one it asked for. A waiting request whose operation is
  /// cancelled is not sent; when the session closes or expires the waiting ones fail as a
  /// request made then would (errc::session_closed, errc::session_expired). On connection loss
  /// they keep waiting and go to the C client, which sends them once connected (or fails them
  /// with connection loss, as it does every request made while disconnected). At least 1.
  std::size_t max_outstanding_requests = 256;
};

/// A one-shot watch registered by async_exists / async_get_children / async_get_data with a
/// watch. Copyable handle; all copies refer to the same watch.
class watch {
 public:
  /// The executor type of Asio's traits (a watch has no executor of its own).
  using executor_type = asio::any_io_executor;
  /// Asio's rebind trait (as_default_on_t): the same type, a watch does not depend on an executor type.
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_to_self<watch>;
  watch() = default;

  /// False for a default-constructed watch and when the request that would set it failed.
  bool valid() const noexcept { return state_ && (state_->registered || state_->fired); }
  /// True once the watch fired (or its session ended); async_wait then completes at once.
  bool fired() const noexcept { return state_ && state_->fired.has_value(); }
  /// The watched node's path. Precondition: not default-constructed.
  const std::string& path() const noexcept { return state_->path; }

  /// Waits for the watch to fire.
  /// Handler: void(error_code, watch_event). Errors: errc::session_expired, errc::session_closed
  /// (the watch is gone with its session), operation_aborted (cancelled: the watch stays
  /// registered and can be waited on again or removed with session::async_remove_watch).
  /// Cancellation: terminal, partial, total. Only one wait at a time.
  template <class Token = asio::deferred_t>
  auto async_wait(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, watch_event)>(
        [](auto handler, boost::intrusive_ptr<detail::watch_state> st) {
          detail::session_ops::wait_watch(std::move(st), detail::watch_handler(std::move(handler)));
        },
        token, state_);
  }

 private:
  friend struct detail::access;
  explicit watch(boost::intrusive_ptr<detail::watch_state> s) : state_(std::move(s)) {}
  boost::intrusive_ptr<detail::watch_state> state_;
};

/// One ZooKeeper session.
///
/// Thread safety: distinct objects safe; a shared object is not: call it from its executor only
/// (like every Asio I/O object). Distinct sessions may run on different threads at once (each
/// on a strand of its own): their calls into the single-threaded C client, which keeps state of
/// the process, take turns under one lock of the process, held for each call only and never
/// across a wait on the server (a close included) or around user code (the log sink). An
/// operation's cancellation may be emitted on any thread: it is carried to the session's
/// executor. All handlers complete through asio::post on their associated
/// executor (default: the session's executor), never inside the initiating call.
///
/// Allocation: the handler is stored with its associated allocator, paid back before it runs
/// (Asio's rule). The engine's state for an operation uses the global allocator: it outlives
/// the completion on purpose (a cancelled acquire deletes its node after its handler ran).
///
/// Lifetimes: the session must outlive the operations' initiation calls only; pending
/// operations keep the engine alive and complete with errc::session_closed when the session is
/// destroyed or closed. Destroying the session closes the ZooKeeper session on the session's
/// executor: at once when destroyed there; destroyed on another thread (main, while a pool runs
/// the io_context), the close is posted there, after the work the session has there already
/// (the destructor never touches the engine off its executor). That close goes on as
/// async_close's does, on the loop, within 1 s (its ephemeral nodes deleted by then, or, with a
/// server that does not answer, at the session's expiry).
///
/// Every operation takes any completion token (callbacks, use_awaitable, deferred, use_future,
/// as_tuple(...)) and supports per-operation cancellation as documented on it. Bad paths
/// complete with the path errc (nothing is sent).
template <class Executor = asio::any_io_executor>
class basic_session {
 public:
  /// The executor operations complete on by default.
  using executor_type = Executor;
  /// The same session type on another executor type (`asio::use_awaitable_t<>::as_default_on_t`
  /// and `asio::use_awaitable.as_default_on(std::move(s))` use it).
  template <class OtherExecutor>
  using rebind_executor = detail::rebind_executor<basic_session, OtherExecutor>;

  /// A session, not yet connected (async_connect connects it), whose operations complete on
  /// `ex` by default.
  explicit basic_session(const executor_type& ex, session_options opts = {})
      : impl_(detail::session_ops::make_session(asio::any_io_executor(ex), std::move(opts))), ex_(ex) {}
  /// A session on `context`'s executor, not yet connected.
  template <class ExecutionContext>
    requires std::is_convertible_v<ExecutionContext&, asio::execution_context&>
  explicit basic_session(ExecutionContext& context, session_options opts = {})
      : basic_session(executor_type(context.get_executor()), std::move(opts)) {}
  /// Takes over a session of another executor type (e.g. `asio::use_awaitable.as_default_on(std::move(s))`).
  template <detail::converts_to_executor<Executor> OtherExecutor>
  basic_session(basic_session<OtherExecutor>&& other) noexcept
      : impl_(std::move(other.impl_)), ex_(other.ex_) {}
  ~basic_session() {
    if (impl_) detail::session_ops::shutdown(*impl_);
  }
  /// Moves the session; the moved-from object may only be destroyed or assigned to.
  basic_session(basic_session&&) noexcept = default;
  /// Closes this session (as the destructor does), then takes over `other`'s.
  basic_session& operator=(basic_session&& other) noexcept {
    if (this != &other) {
      if (impl_) detail::session_ops::shutdown(*impl_);
      impl_ = std::move(other.impl_);
      ex_ = other.ex_;
    }
    return *this;
  }
  basic_session(const basic_session&) = delete;
  basic_session& operator=(const basic_session&) = delete;

  /// The executor operations complete on by default.
  executor_type get_executor() const noexcept { return ex_; }
  /// The options it was constructed with.
  const session_options& options() const noexcept { return detail::session_ops::options(*impl_); }
  /// The session's state now (async_wait_state waits for a change).
  session_state state() const noexcept { return detail::session_ops::state(*impl_); }
  /// The server-assigned session id (0 before the first connect).
  std::int64_t session_id() const noexcept { return detail::session_ops::session_id(*impl_); }
  /// The session timeout the server granted (it clamps the requested one to [2, 20] ticks);
  /// the requested one before the first connect.
  std::chrono::milliseconds negotiated_timeout() const noexcept {
    return detail::session_ops::negotiated_timeout(*impl_);
  }
  /// Id and password of the current session (id 0 when none).
  session_credentials credentials() const { return detail::session_ops::credentials(*impl_); }
  /// Requests sent and watch events received since construction (for benchmarks and tests).
  session_stats stats() const noexcept { return detail::session_ops::stats(*impl_); }
  /// A copy of the lock metrics of this session's locks, per path and kind (zklock/metrics.hpp;
  /// to_prometheus() renders it). May be called from any thread: the counters are behind a mutex.
  lock_metrics_snapshot lock_metrics() const { return detail::session_ops::lock_metrics(*impl_); }

  /// Opens a new ZooKeeper session and waits until it is established.
  /// Handler: void(error_code). Errors: errc::empty_connect_string, malformed_connect_string,
  /// path errors for the chroot, errc::connect_timeout (options().connect_timeout passed with no
  /// server accepting, or with a name still being looked up: the message names it),
  /// errc::unresolvable_host (no host of the connect string resolved: the message names each,
  /// with why; when some did, the others are tried and a warning names those that did not),
  /// zk_errc::auth_failed, errc::already_connecting.
  /// Also restarts a session after it expired or was closed: the old handle is discarded and a
  /// new session (new id, no ephemerals) is created. A suspended session (connection lost, the
  /// session may still live on the server with its locks) is not replaced:
  /// errc::session_suspended; wait for reconnected or expired, or async_close it first. A
  /// suspension ends within the negotiated session timeout: when no server answered by then,
  /// the session expires here (every server that had it has expired it): state `expired`,
  /// pending operations fail with errc::session_expired (requests: zk_errc::session_expired).
  /// Cancellation: terminal/partial/total: the connect attempt is abandoned, the handle closed,
  /// state returns to disconnected; completes with operation_aborted.
  template <class Token = detail::default_token_t<Executor>>
  auto async_connect(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [impl = impl_](auto h) { detail::session_ops::connect(*impl, detail::void_handler(std::move(h))); }, token);
  }

  /// Closes the session gracefully: the server ends it at once, deleting its ephemeral nodes,
  /// and this completes once it has (they are gone from the server then). A server that does
  /// not answer (stopped, a link that stopped moving bytes): completes within 1 s, without its
  /// answer; the server ends the session when it expires. No thread waits meanwhile (the close
  /// runs on the session's executor, as everything else), and other sessions do not notice.
  /// Pending operations complete with errc::session_closed. A completion already queued when
  /// the close runs (an acquire granted just before) still reaches its handler, as with any Asio
  /// operation that completed before its cancel: its guard then says lost (status lost,
  /// owns_lock false). Handler: void(error_code). Not cancellable (bounded: 1 s).
  template <class Token = detail::default_token_t<Executor>>
  auto async_close(Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [impl = impl_](auto h) { detail::session_ops::close(*impl, detail::void_handler(std::move(h))); }, token);
  }

  /// Completes as soon as the state differs from `known` (at once if it already does) with the
  /// new state. Pass the last state you saw to miss no change of current state.
  /// Handler: void(error_code, session_state). Cancellation: all types, nothing left behind.
  template <class Token = detail::default_token_t<Executor>>
  auto async_wait_state(session_state known, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, session_state)>(
        [impl = impl_](auto h, session_state k) {
          detail::session_ops::wait_state(*impl, k, detail::state_handler(std::move(h)));
        },
        token, known);
  }

  /// Creates a node. Handler: void(error_code, create_result).
  /// Cancellation: terminal and partial complete at once with operation_aborted, but the
  /// request is already on its way: the node may still be created. Such a node is reported to
  /// session_options::on_abandoned_create so the caller can delete it. Total cancellation
  /// is not honoured (the request is on the wire).
  template <class Token = detail::default_token_t<Executor>>
  auto async_create(std::string path, std::string data, create_mode mode, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, create_result)>(
        [impl = impl_](auto h, std::string p, std::string d, create_mode m) {
          detail::session_ops::create(*impl, std::move(p), std::move(d), m,
                                      detail::create_handler(std::move(h)));
        },
        token, std::move(path), std::move(data), mode);
  }

  /// Deletes a node if its version matches (-1: any). Handler: void(error_code).
  /// Cancellation: terminal and partial complete with operation_aborted at once; the delete
  /// may still happen. Total cancellation is not honoured (the request is on the wire).
  template <class Token = detail::default_token_t<Executor>>
  auto async_delete(std::string path, int version = -1, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [impl = impl_](auto h, std::string p, int v) {
          detail::session_ops::remove(*impl, std::move(p), v, detail::void_handler(std::move(h)));
        },
        token, std::move(path), version);
  }

  /// Stat of a node, or nullopt if it does not exist (not an error).
  /// Handler: void(error_code, std::optional<node_stat>). Cancellation: operation_aborted, no
  /// side effect.
  template <class Token = detail::default_token_t<Executor>>
  auto async_exists(std::string path, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::optional<node_stat>)>(
        [impl = impl_](auto h, std::string p) {
          detail::session_ops::exists(*impl, std::move(p), nullptr, detail::exists_handler(std::move(h)));
        },
        token, std::move(path));
  }

  /// Like async_exists, and sets a one-shot watch (fires on created, deleted or changed), which
  /// is registered even when the node does not exist. `w` is filled at once; it becomes usable
  /// when the handler ran without error. Cancellation: operation_aborted; the watch may be set:
  /// remove it with async_remove_watch(w).
  template <class Token = detail::default_token_t<Executor>>
  auto async_exists(std::string path, watch& w, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::optional<node_stat>)>(
        [impl = impl_, &w](auto h, std::string p) {
          boost::intrusive_ptr<detail::watch_state> st;
          detail::session_ops::exists(*impl, std::move(p), &st, detail::exists_handler(std::move(h)));
          w = detail::access::construct<watch>(std::move(st));
        },
        token, std::move(path));
  }

  /// Children of a node (names) and its stat. Handler: void(error_code, children_result).
  template <class Token = detail::default_token_t<Executor>>
  auto async_get_children(std::string path, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, children_result)>(
        [impl = impl_](auto h, std::string p) {
          detail::session_ops::get_children(*impl, std::move(p), nullptr, detail::children_handler(std::move(h)));
        },
        token, std::move(path));
  }

  /// Like async_get_children and sets a one-shot child watch (only when the node exists).
  template <class Token = detail::default_token_t<Executor>>
  auto async_get_children(std::string path, watch& w, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, children_result)>(
        [impl = impl_, &w](auto h, std::string p) {
          boost::intrusive_ptr<detail::watch_state> st;
          detail::session_ops::get_children(*impl, std::move(p), &st, detail::children_handler(std::move(h)));
          w = detail::access::construct<watch>(std::move(st));
        },
        token, std::move(path));
  }

  /// Data and stat of a node. Handler: void(error_code, data_result).
  template <class Token = detail::default_token_t<Executor>>
  auto async_get_data(std::string path, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, data_result)>(
        [impl = impl_](auto h, std::string p) {
          detail::session_ops::get_data(*impl, std::move(p), nullptr, detail::data_handler(std::move(h)));
        },
        token, std::move(path));
  }

  /// Like async_get_data and sets a one-shot data watch (only when the node exists).
  template <class Token = detail::default_token_t<Executor>>
  auto async_get_data(std::string path, watch& w, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, data_result)>(
        [impl = impl_, &w](auto h, std::string p) {
          boost::intrusive_ptr<detail::watch_state> st;
          detail::session_ops::get_data(*impl, std::move(p), &st, detail::data_handler(std::move(h)));
          w = detail::access::construct<watch>(std::move(st));
        },
        token, std::move(path));
  }

  /// Sets a node's data if its version matches (-1: any). Handler: void(error_code, node_stat).
  /// Cancellation: terminal and partial: operation_aborted at once; the write may still
  /// happen. Total cancellation is not honoured (the request is on the wire).
  template <class Token = detail::default_token_t<Executor>>
  auto async_set_data(std::string path, std::string data, int version = -1, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, node_stat)>(
        [impl = impl_](auto h, std::string p, std::string d, int v) {
          detail::session_ops::set_data(*impl, std::move(p), std::move(d), v,
                                        detail::stat_handler(std::move(h)));
        },
        token, std::move(path), std::move(data), version);
  }

  /// Atomic transaction. Handler: void(error_code, std::vector<multi_result>); on failure the
  /// error is the first failing op's, and each result's ec tells which failed (ops after it get
  /// zk_errc::runtime_inconsistency: not tried). lock_guard::check_op() guards a transaction by a lock.
  /// Cancellation: terminal and partial: operation_aborted at once; the transaction may still
  /// commit. Total cancellation is not honoured (the request is on the wire).
  template <class Token = detail::default_token_t<Executor>>
  auto async_multi(std::vector<multi_op> ops, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code, std::vector<multi_result>)>(
        [impl = impl_](auto h, std::vector<multi_op> o) {
          detail::session_ops::multi(*impl, std::move(o), detail::multi_handler(std::move(h)));
        },
        token, std::move(ops));
  }

  /// Removes a watch from the server and the client (ZooKeeper 3.5+ removeWatches). A pending
  /// async_wait on it completes with a not_watching event. Errors: zk_errc::no_watcher when it
  /// already fired. Handler: void(error_code).
  template <class Token = detail::default_token_t<Executor>>
  auto async_remove_watch(const watch& w, Token&& token = {}) {
    return asio::async_initiate<Token, void(error_code)>(
        [impl = impl_](auto h, boost::intrusive_ptr<detail::watch_state> st) {
          detail::session_ops::remove_watch(*impl, std::move(st), detail::void_handler(std::move(h)));
        },
        token, detail::access::state(w));
  }

 private:
  template <class>
  friend class basic_session;
  friend struct detail::access;
  std::shared_ptr<detail::session_impl> impl_;
  executor_type ex_;
};

/// A session on any I/O executor: operations default to asio::deferred.
using session = basic_session<>;

}  // namespace zklock
