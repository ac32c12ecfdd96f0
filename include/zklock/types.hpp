// Plain value types shared by the session and the recipes.
#pragma once

#include <zklock/error.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

/// What the user sees of a session's life.
enum class session_state {
  disconnected,  ///< never connected, or a connect failed
  connecting,    ///< async_connect is under way
  connected,     ///< the session is established (first connection of this session)
  suspended,     ///< the connection was lost; the session may still live on the server
  reconnected,   ///< connected again after `suspended`: same session, ephemerals and watches kept
  expired,       ///< the server expired the session (or no server answered for the session timeout
                 ///< after the connection was lost): its ephemeral nodes and watches are gone
  closed,        ///< closed by its owner, or by zklock when the server rejected its authentication
                 ///< (zk_errc::auth_failed; the session then lives on the server until it expires)
};
/// The enumerator's name ("connected", ...); "?" for a value outside the enum.
ZKLOCK_API const char* to_string(session_state s) noexcept;

/// True for connected and reconnected.
inline bool is_connected(session_state s) noexcept {
  return s == session_state::connected || s == session_state::reconnected;
}

/// The kind of node basic_session::async_create and multi_op::create make (ZooKeeper's CreateMode).
enum class create_mode {
  persistent,             ///< stays until deleted
  ephemeral,              ///< deleted by the server when the creating session ends
  persistent_sequential,  ///< persistent, the server appends a 10-digit sequence number to the name
  ephemeral_sequential,   ///< ephemeral, with a sequence number appended to the name
  container,  ///< persistent node that the server deletes once its last child is gone
};

/// ACL for nodes the session creates.
enum class acl_policy {
  open,         ///< world:anyone, all permissions
  creator_all,  ///< all permissions to the creator's authenticated ids only (needs digest auth)
};

/// Severity of a log line; session_options::log_threshold keeps the lines at or below a level.
enum class log_level {
  error = 1,  ///< errors (the C client's ZOO_ERROR lines)
  warn = 2,   ///< warnings (ZOO_WARN lines, zklock's summaries); the default threshold
  info = 3,   ///< informational lines (ZOO_INFO)
  debug = 4,  ///< debugging detail (ZOO_DEBUG, and the C client's retry lines that zklock summarises)
};
/// Receives the C client's log lines (and zklock's own). Called on the session's executor.
using log_sink = std::function<void(log_level, std::string_view message)>;

/// A znode's Stat.
struct node_stat {
  std::int64_t czxid = 0;            ///< zxid of the transaction that created the node
  std::int64_t mzxid = 0;            ///< zxid of the last change to its data
  std::int64_t ctime = 0;            ///< creation time, ms since the epoch (the server's clock)
  std::int64_t mtime = 0;            ///< last data change, ms since the epoch (the server's clock)
  std::int32_t version = 0;          ///< number of changes to its data
  std::int32_t cversion = 0;         ///< number of changes to its children
  std::int32_t aversion = 0;         ///< number of changes to its ACL
  std::int64_t ephemeral_owner = 0;  ///< session id of an ephemeral node's owner; 0 for other nodes
  std::int32_t data_length = 0;      ///< length of its data in bytes
  std::int32_t num_children = 0;     ///< number of children
  std::int64_t pzxid = 0;            ///< zxid of the last change to its children
};

/// Who leads an election, as an observer sees it (election::async_leader, async_observe).
struct leader_info {
  std::string identity;  ///< the leader's participant id (its node's data)
  std::string node;      ///< the leader's node, a child of the election path
  std::int64_t since = 0;  ///< the node's ctime (ms since the epoch, the server's clock): when it queued
  friend bool operator==(const leader_info&, const leader_info&) = default;
};

/// What basic_session::async_create completes with.
struct create_result {
  std::string path;  ///< the created path (with the sequence suffix for sequential nodes)
  node_stat stat;    ///< the created node's stat
};

/// What basic_session::async_get_children completes with.
struct children_result {
  std::vector<std::string> children;  ///< child names, not full paths
  node_stat stat;                     ///< stat of the parent
};

/// What basic_session::async_get_data completes with.
struct data_result {
  std::string data;  ///< the node's data
  node_stat stat;    ///< the node's stat when the data was read
};

/// What fired a watch.
enum class watch_event_type {
  created,       ///< the watched node was created (a watch set by exists on a missing node)
  deleted,       ///< the watched node was deleted
  changed,       ///< the watched node's data changed
  child,         ///< the watched node's children changed (a child watch)
  not_watching,  ///< the watch was removed (async_remove_watch)
};
/// The enumerator's name ("created", ...); "?" for a value outside the enum.
ZKLOCK_API const char* to_string(watch_event_type t) noexcept;

/// A fired watch, as watch::async_wait completes with.
struct watch_event {
  watch_event_type type{};  ///< what happened
  std::string path;         ///< the watched node's path
};

/// One operation of a multi (transaction).
struct multi_op {
  /// The operation.
  enum class kind {
    create,    ///< create `path` with `data` and `mode`
    remove,    ///< delete `path` if its version is `version` (-1: any)
    set_data,  ///< set `path`'s data if its version is `version` (-1: any)
    check,     ///< fail the transaction unless `path`'s version is `version`
  };
  kind type = kind::check;                     ///< which operation
  std::string path;                            ///< the node it applies to
  std::string data;                            ///< for create and set_data
  create_mode mode = create_mode::persistent;  ///< for create
  int version = -1;                            ///< expected version (-1: any); for remove, set_data, check

  /// Creates `path` with `data` as `mode`.
  static multi_op create(std::string path, std::string data = {}, create_mode mode = create_mode::persistent) {
    return {kind::create, std::move(path), std::move(data), mode, -1};
  }
  /// Deletes `path` if its version is `version` (-1: any).
  static multi_op remove(std::string path, int version = -1) {
    return {kind::remove, std::move(path), {}, create_mode::persistent, version};
  }
  /// Sets `path`'s data to `data` if its version is `version` (-1: any).
  static multi_op set_data(std::string path, std::string data, int version = -1) {
    return {kind::set_data, std::move(path), std::move(data), create_mode::persistent, version};
  }
  /// Fails the whole transaction unless `path`'s version is `version`.
  static multi_op check(std::string path, int version) {
    return {kind::check, std::move(path), {}, create_mode::persistent, version};
  }
};

/// One operation's outcome in what basic_session::async_multi completes with (same order as the ops).
struct multi_result {
  error_code ec;     ///< this op's outcome (zk_errc; empty when it applied)
  std::string path;  ///< created path, for creates
  node_stat stat;    ///< for set_data
};

/// What a lock contender's node asks for, from the marker in its name (see
/// mutex::async_contenders). The grant rule: a read waits for the nearest exclusive or write
/// node ahead of it; the others wait for the nearest node ahead of any kind.
enum class lock_kind {
  exclusive,  ///< "-lock-": zklock::mutex, Curator InterProcessMutex; "__lock__": kazoo Lock, WriteLock
  read,       ///< "__READ__": zklock::shared_mutex shared side, Curator read lock; "__rlock__": kazoo ReadLock
  write,      ///< "__WRIT__": zklock::shared_mutex exclusive side, Curator write lock
  lease,      ///< "-lease-": a zklock::semaphore or Curator InterProcessSemaphoreV2 lease
  /// "-latch-": a zklock::election candidate or a Curator LeaderLatch participant. The grant
  /// rule is exclusive: the head of the queue leads.
  candidate,
};
/// The enumerator's name ("exclusive", ...); "?" for a value outside the enum.
ZKLOCK_API const char* to_string(lock_kind k) noexcept;

/// What a guard knows of its lock.
enum class lock_status {
  held,        ///< our node is the head of the queue and our session is connected
  maybe_lost,  ///< the connection is suspended: if the session expires, the lock is lost
  lost,        ///< the session expired (or was closed): another contender may hold the lock
  released,    ///< released by us (or moved-from / empty guard)
};
/// The enumerator's name ("held", ...); "?" for a value outside the enum.
ZKLOCK_API const char* to_string(lock_status s) noexcept;

/// Identifies a reentrant owner (a coroutine, a request, a job): acquiring again with the same
/// owner while it holds the lock through the same zklock::mutex succeeds at once.
struct owner_id {
  std::uint64_t value = 0;  ///< any value the caller picks; equal values are the same owner
  friend bool operator==(owner_id, owner_id) = default;
};

/// One contender in a lock's queue, as mutex::async_contenders reports it.
struct contender {
  std::string node;           ///< the node's name (a child of the lock dir)
  std::int64_t sequence = 0;  ///< its sequence number: the queue order
  lock_kind kind = lock_kind::exclusive;  ///< from the name (a downgraded zklock writer: data "zklock/2:downgraded")
  node_stat stat;             ///< stat.ephemeral_owner: the contender's session id; stat.ctime: when it queued
  std::string data;           ///< the node's data ("zklock/3 web-1:4242" for a zklock mutex contender)
  /// Who created the node: a zklock node's identity (session_options::identity, by default
  /// "<hostname>:<pid>"; what follows the marker in its data), an election candidate's
  /// participant id; for a node of another client, its whole data (Curator writes the client's
  /// IP address by default, kazoo its `identifier`). Empty when the node says nothing.
  /// Without the parent suffix (below).
  std::string identity;
  /// The session of the `zklock exec` this contender's process runs under ($ZKLOCK_SESSION when
  /// its session started: the data's identity then ends in " parent=0x<hex>"); 0: none.
  std::int64_t parent = 0;
};

}  // namespace zklock
