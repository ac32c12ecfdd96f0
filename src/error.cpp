#include <zklock/error.hpp>

#include "error_message.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace zklock {
namespace {

class zk_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "zookeeper"; }
  std::string message(int ev) const override {
    switch (static_cast<zk_errc>(ev)) {
      case zk_errc::ok: return "ok";
      case zk_errc::system_error: return "ZooKeeper system error";
      case zk_errc::runtime_inconsistency: return "ZooKeeper runtime inconsistency";
      case zk_errc::data_inconsistency: return "ZooKeeper data inconsistency";
      case zk_errc::connection_loss: return "connection to the ZooKeeper server was lost (the request may or may not have been applied)";
      case zk_errc::marshalling_error: return "error marshalling or unmarshalling a ZooKeeper message";
      case zk_errc::unimplemented: return "operation not implemented by the ZooKeeper server";
      case zk_errc::operation_timeout: return "ZooKeeper operation timed out";
      case zk_errc::bad_arguments: return "invalid arguments to a ZooKeeper call";
      case zk_errc::invalid_state: return "the ZooKeeper handle is in an invalid state (session expired or auth failed)";
      case zk_errc::new_config_no_quorum: return "no quorum of the new ZooKeeper configuration is connected";
      case zk_errc::reconfig_in_progress: return "a ZooKeeper reconfiguration is already in progress";
      case zk_errc::ssl_connection_error: return "SSL connection error";
      case zk_errc::api_error: return "ZooKeeper API error";
      case zk_errc::no_node: return "znode does not exist";
      case zk_errc::no_auth: return "not authorized for this znode (check the session's auth and the node's ACL)";
      case zk_errc::bad_version: return "znode version conflict";
      case zk_errc::no_children_for_ephemerals: return "ephemeral znodes may not have children";
      case zk_errc::node_exists: return "znode already exists";
      case zk_errc::not_empty: return "znode has children";
      case zk_errc::session_expired: return "ZooKeeper session expired";
      case zk_errc::invalid_callback: return "invalid ZooKeeper callback";
      case zk_errc::invalid_acl: return "invalid ACL";
      case zk_errc::auth_failed: return "ZooKeeper authentication failed";
      case zk_errc::closing: return "ZooKeeper session is closing";
      case zk_errc::nothing: return "no server responses to process";
      case zk_errc::session_moved: return "session moved to another server; operation ignored";
      case zk_errc::not_read_only: return "state-changing request sent to a read-only server";
      case zk_errc::ephemeral_on_local_session: return "ephemeral znode on a local session";
      case zk_errc::no_watcher: return "no such watch";
      case zk_errc::reconfig_disabled: return "reconfiguration is disabled on the server";
      case zk_errc::session_closed_require_sasl_auth: return "session closed: the server requires SASL authentication";
      case zk_errc::throttled_op: return "operation throttled by the server; retry";
    }
    return "unknown ZooKeeper error " + std::to_string(ev);
  }
};

// zklock's category has an id so that detailed_category below compares equal to it.
constexpr unsigned long long zklock_category_id = 0x7a6b6c6f636b2d31ULL;  // "zklock-1"

class zklock_category_impl : public boost::system::error_category {
 public:
  constexpr zklock_category_impl() noexcept : error_category(zklock_category_id) {}
  const char* name() const noexcept override { return "zklock"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::empty_connect_string: return "connect string is empty: expected host:port[,host:port...][/chroot]";
      case errc::malformed_connect_string: return "malformed connect string: expected host:port[,host:port...][/chroot]";
      case errc::path_empty: return "znode path is empty";
      case errc::path_not_absolute: return "znode path must start with '/'";
      case errc::path_trailing_slash: return "znode path must not end with '/'";
      case errc::path_empty_segment: return "znode path has an empty segment (\"//\")";
      case errc::path_relative_segment: return "znode path has a \".\" or \"..\" segment";
      case errc::path_control_character: return "znode path contains a control character";
      case errc::path_too_long: return "znode path is too long (over 256 KiB): a server would drop the connection on the requests that carry it";
      case errc::connect_timeout: return "could not connect to any ZooKeeper server within the connect timeout";
      case errc::not_connected: return "the session is not connected (call async_connect first)";
      case errc::session_closed: return "the session was closed";
      case errc::session_expired: return "the ZooKeeper session expired; its ephemeral nodes and watches are gone";
      case errc::already_connecting: return "a connect is already in progress";
      case errc::session_suspended: return "the session is suspended and may still live on the server (with its locks): wait for it to reconnect or expire, or close it before connecting again";
      case errc::lock_busy: return "the lock is held by another contender";
      case errc::lock_timeout: return "timed out waiting for the lock";
      case errc::lock_lost: return "the lock was lost (session expired or lock node deleted)";
      case errc::already_released: return "the lock was already released";
      case errc::not_downgradable: return "only the write side of a shared_mutex can be downgraded";
      case errc::upgrade_refused: return "upgrade refused: the owner holds the read side, and a write request would wait behind its own read (release the read side first)";
      case errc::invalid_max_leases: return "a semaphore needs max_leases >= 1";
      case errc::connection_unavailable: return "not connected to ZooKeeper (the session is suspended or reconnecting): the lock could not be asked for; this says nothing about other holders";
      case errc::release_pending: return "released while the connection is down: the lock node is deleted once it is back, or goes with the session if it expires";
      case errc::not_zookeeper: return "an endpoint of the connect string answered with something that is not a ZooKeeper handshake (another service on that port?)";
      case errc::unresolvable_host: return "no host of the connect string could be resolved";
    }
    return "unknown zklock error " + std::to_string(ev);
  }
};

// A zklock code with a message of its own (detail::with_message): the same id as
// zklock_category(), so Boost.System compares it equal to that category.
class detailed_category final : public zklock_category_impl {
 public:
  detailed_category(int value, std::string text) : value_(value), text_(std::move(text)) {}
  std::string message(int ev) const override { return ev == value_ ? text_ : zklock_category_impl::message(ev); }

 private:
  int value_;
  std::string text_;
};

// errc::lock_lost with its cause in the message; every other code as the zklock category says.
class lost_category_impl final : public zklock_category_impl {
 public:
  explicit lost_category_impl(lost_cause cause) noexcept : cause_(cause) {}
  lost_cause cause() const noexcept { return cause_; }
  std::string message(int ev) const override {
    if (ev != static_cast<int>(errc::lock_lost)) return zklock_category_impl::message(ev);
    switch (cause_) {
      case lost_cause::deadline_passed:
        return "the lock was lost: its validity deadline passed with no reply from ZooKeeper (the session may have "
               "expired on the server, and someone else may hold the lock)";
      case lost_cause::session_expired: return "the lock was lost: its session expired";
      case lost_cause::session_closed: return "the lock was lost: its session was closed";
      case lost_cause::session_replaced:
        return "the lock was lost: its session was replaced by a new one (the lock node belonged to the old one)";
      case lost_cause::node_deleted: return "the lock was lost: its lock node was deleted by someone else";
      case lost_cause::unknown: break;
    }
    return zklock_category_impl::message(ev);
  }

 private:
  lost_cause cause_;
};

const lost_category_impl& lost_category(lost_cause c) noexcept {
  static const lost_category_impl cats[] = {
      lost_category_impl(lost_cause::unknown),          lost_category_impl(lost_cause::deadline_passed),
      lost_category_impl(lost_cause::session_expired),  lost_category_impl(lost_cause::session_closed),
      lost_category_impl(lost_cause::session_replaced), lost_category_impl(lost_cause::node_deleted)};
  return cats[static_cast<int>(c)];
}

class condition_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "zklock.condition"; }
  std::string message(int ev) const override {
    switch (static_cast<condition>(ev)) {
      case condition::connection_lost: return "the connection to ZooKeeper was lost";
      case condition::session_lost: return "the ZooKeeper session is over";
      case condition::lock_unavailable: return "the lock was held by someone else";
      case condition::lock_lost: return "a lock that was held was lost";
    }
    return "unknown zklock condition " + std::to_string(ev);
  }
  bool equivalent(const error_code& ec, int cond) const noexcept override {
    switch (static_cast<condition>(cond)) {
      case condition::connection_lost:
        // The C client fails every request in flight with runtime_inconsistency when it drops a
        // connection over an out-of-order reply: as after a connection loss, each may or may not
        // have been applied (seen under connection cuts, test "a cancellation storm").
        return ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout ||
               ec == zk_errc::runtime_inconsistency || ec == errc::connection_unavailable;
      case condition::session_lost:
        return ec == zk_errc::session_expired || ec == zk_errc::closing || ec == zk_errc::invalid_state ||
               ec == errc::session_expired || ec == errc::session_closed || ec == errc::not_connected ||
               ec == errc::connect_timeout || ec == errc::not_zookeeper || ec == errc::unresolvable_host;
      case condition::lock_unavailable:
        return ec == errc::lock_busy || ec == errc::lock_timeout;
      case condition::lock_lost:
        return ec == errc::lock_lost;
    }
    return false;
  }
};

}  // namespace

const boost::system::error_category& condition_category() noexcept {
  static const condition_category_impl c;
  return c;
}

const boost::system::error_category& zk_category() noexcept {
  static const zk_category_impl c;
  return c;
}
const boost::system::error_category& zklock_category() noexcept {
  static const zklock_category_impl c;
  return c;
}

namespace detail {

error_code with_message(errc e, std::string message) {
  // One category object per distinct (value, message), kept for the life of the process: an
  // error_code refers to its category by address. The messages name endpoints and causes (no
  // counts, no times), so a program meets few; past the bound the plain code is returned.
  constexpr std::size_t max_messages = 256;
  static std::mutex m;
  // Leaked on purpose: error_codes may outlive static destruction (a handler run at exit).
  static auto* kept = new std::map<std::pair<int, std::string>, std::unique_ptr<detailed_category>>;
  int value = static_cast<int>(e);
  std::lock_guard lock(m);
  auto key = std::make_pair(value, std::move(message));
  auto it = kept->find(key);
  if (it == kept->end()) {
    if (kept->size() >= max_messages) return e;
    auto cat = std::make_unique<detailed_category>(value, key.second);
    it = kept->emplace(std::move(key), std::move(cat)).first;
  }
  return {value, *it->second};
}

}  // namespace detail

error_code make_lock_lost(lost_cause cause) noexcept {
  if (cause == lost_cause::unknown) return errc::lock_lost;
  return {static_cast<int>(errc::lock_lost), lost_category(cause)};
}

lost_cause lock_lost_cause(const error_code& ec) noexcept {
  if (ec != errc::lock_lost) return lost_cause::unknown;
  auto* cat = dynamic_cast<const lost_category_impl*>(&ec.category());
  return cat ? cat->cause() : lost_cause::unknown;
}

}  // namespace zklock
