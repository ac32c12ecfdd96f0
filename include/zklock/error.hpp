// zklock error codes: one enum for ZooKeeper's return codes, one for zklock's own conditions.
#pragma once

#include <boost/system/error_code.hpp>
#include <zklock/export.hpp>
#include <type_traits>

namespace zklock {

/// The error type of every completion handler (Boost.System's, as Asio's).
using error_code = boost::system::error_code;

/// Mirrors the ZooKeeper C client's ZOO_ERRORS one to one (same numeric values), so that a
/// return code `rc` of the C client becomes `make_error_code(static_cast<zk_errc>(rc))`.
enum class zk_errc : int {
  ok = 0,
  system_error = -1,
  runtime_inconsistency = -2,
  data_inconsistency = -3,
  connection_loss = -4,
  marshalling_error = -5,
  unimplemented = -6,
  operation_timeout = -7,
  bad_arguments = -8,
  invalid_state = -9,
  new_config_no_quorum = -13,
  reconfig_in_progress = -14,
  ssl_connection_error = -15,
  api_error = -100,
  no_node = -101,
  no_auth = -102,
  bad_version = -103,
  no_children_for_ephemerals = -108,
  node_exists = -110,
  not_empty = -111,
  session_expired = -112,
  invalid_callback = -113,
  invalid_acl = -114,
  auth_failed = -115,
  closing = -116,
  nothing = -117,
  session_moved = -118,
  not_read_only = -119,
  ephemeral_on_local_session = -120,
  no_watcher = -121,
  reconfig_disabled = -123,
  session_closed_require_sasl_auth = -124,
  throttled_op = -127,
};

/// zklock's own conditions: bad input (each malformed input has its own code), session life,
/// and lock recipes.
enum class errc : int {
  // connect string
  empty_connect_string = 1,       ///< the connect string is empty
  malformed_connect_string,       ///< not "host:port[,host:port...][/chroot]"
  // znode paths
  path_empty,                     ///< a path is the empty string
  path_not_absolute,              ///< a path does not start with '/'
  path_trailing_slash,            ///< a path other than "/" ends with '/'
  path_empty_segment,             ///< a path contains "//"
  path_relative_segment,          ///< a path contains a "." or ".." segment
  path_control_character,         ///< a path contains a control character (U+0000..U+001F, U+007F)
  // session
  connect_timeout,                ///< no server of the ensemble accepted the session in time
  not_connected,                  ///< the operation needs a session that was connected first
  session_closed,                 ///< the session was closed by its owner
  session_expired,                ///< the session expired: its ephemeral nodes and watches are gone
  already_connecting,             ///< async_connect while a connect is already under way
  session_suspended,              ///< async_connect while the session is suspended: it may still live; close it first
  // locks
  lock_busy,                      ///< try-acquire found the lock held by someone else
  lock_timeout,                   ///< a timed acquire gave up when its time ran out
  lock_lost,                      ///< the lock was held and is lost; its message (and lock_lost_cause) says why
  already_released,               ///< the guard's lock was released already
  release_pending,                ///< released while disconnected: the node goes after the reconnect (or with the session)
  not_downgradable,               ///< async_downgrade on a guard that does not hold a shared_mutex's write side
  upgrade_refused,                ///< a reentrant owner holding the read side asked for the write side (it would wait for itself)
  invalid_max_leases,             ///< a semaphore needs max_leases >= 1
  path_too_long,                  ///< a path is longer than zklock::max_path_length (a server would drop the connection)
  connection_unavailable,         ///< a try-acquire, or a timed acquire whose time ran out, while the session was not connected (suspended or reconnecting): nobody may hold the lock; ZooKeeper could not be asked
  not_zookeeper,                  ///< an endpoint of the connect string answered the connect request with something that cannot be a ZooKeeper server's handshake (another service on that port)
  unresolvable_host,              ///< no host of the connect string could be resolved
};

/// Conditions that group the codes above, for callers (and zklock itself) to compare one
/// thing: `if (ec == zklock::condition::session_lost)`.
enum class condition : int {
  connection_lost = 1,  ///< zk connection_loss, operation_timeout, runtime_inconsistency (the C client drops the connection): the request may or may not have been applied; errc connection_unavailable (not connected: nothing was asked)
  session_lost,         ///< no session: zk session_expired, closing, invalid_state; errc session_expired, session_closed, not_connected; connect_timeout, not_zookeeper, unresolvable_host (none could be established)
  lock_unavailable,     ///< errc lock_busy, lock_timeout: someone else held the lock
  lock_lost,            ///< errc lock_lost: a lock that was held may be held by someone else now
};

/// The category of zk_errc codes.
ZKLOCK_API const boost::system::error_category& zk_category() noexcept;
/// zklock's errc values. Errors about a connect (errc::connect_timeout, not_zookeeper,
/// unresolvable_host) carry their details in message(): the host or endpoint and the cause
/// ("... within the connect timeout: 127.0.0.1:2181: Connection refused"). Their category
/// object is then another one, with this category's id: Boost.System compares them equal
/// (`ec == errc::connect_timeout`, `ec.category() == zklock_category()` hold).
ZKLOCK_API const boost::system::error_category& zklock_category() noexcept;
/// The category of condition: what zk_errc and errc codes compare equal to.
ZKLOCK_API const boost::system::error_category& condition_category() noexcept;

/// Why a held lock was lost. An errc::lock_lost from a guard carries it: its message names it,
/// and lock_lost_cause() returns it, while the code still compares equal to errc::lock_lost and
/// to condition::lock_lost (one category per cause, all with the zklock category's identity).
enum class lost_cause {
  unknown,           ///< a plain errc::lock_lost, or not a lock_lost at all
  deadline_passed,   ///< the validity deadline passed with no reply from ZooKeeper: the session may have expired on the server
  session_expired,   ///< the session expired: the lock node went with it
  session_closed,    ///< the session was closed (by its owner, or after an authentication failure)
  session_replaced,  ///< the session was replaced by a new one: the lock node belonged to the old one
  node_deleted,      ///< the lock node was deleted by someone else (or is not our session's any more)
};
/// errc::lock_lost naming `cause` (equal to errc::lock_lost).
ZKLOCK_API error_code make_lock_lost(lost_cause cause) noexcept;
/// The cause an errc::lock_lost carries (lost_cause::unknown for anything else).
ZKLOCK_API lost_cause lock_lost_cause(const error_code& ec) noexcept;

/// `e` as an error_code of zk_category() (found by ADL: `error_code ec = zk_errc::no_node;`).
inline error_code make_error_code(zk_errc e) noexcept {
  return {static_cast<int>(e), zk_category()};
}
/// `e` as an error_code of zklock_category() (found by ADL: `error_code ec = errc::lock_busy;`).
inline error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), zklock_category()};
}

/// `c` as an error_condition, to compare codes with: `ec == condition::lock_unavailable`.
inline boost::system::error_condition make_error_condition(condition c) noexcept {
  return {static_cast<int>(c), condition_category()};
}

/// Turns a C client return code into an error_code (ZOK becomes the empty error_code).
inline error_code zk_error(int rc) noexcept {
  return rc == 0 ? error_code{} : make_error_code(static_cast<zk_errc>(rc));
}

}  // namespace zklock

namespace boost::system {
template <> struct is_error_code_enum<zklock::zk_errc> : std::true_type {};
template <> struct is_error_code_enum<zklock::errc> : std::true_type {};
template <> struct is_error_condition_enum<zklock::condition> : std::true_type {};
}  // namespace boost::system
