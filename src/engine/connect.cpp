// Connecting: the connect string's hosts resolved, the C client's handle opened, the connect's
// timeout and its error, the first answer of a handle checked (is it ZooKeeper's?), and the
// endpoints that answered something else dropped from the handle's list.
#include "engine/contact.hpp"
#include "engine/glue.hpp"
#include "engine/handshake.hpp"
#include "engine/hooks.hpp"
#include "engine/session_impl.hpp"
#include "error_message.hpp"

#include <zklock/path.hpp>

#include <boost/asio/post.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace zklock {

namespace detail {

namespace {

// The servers of a connect string already validated (connect() checks it first).
std::vector<connect_endpoint> endpoints_of(std::string_view connect) {
  error_code ignored;
  return parse_connect_string(connect, ignored).endpoints;
}

// Resolves a server as the C client does (getaddrinfo with AI_ADDRCONFIG, again without it
// where the flag is refused). Returns getaddrinfo's code; `res` to be freed by the caller.
int resolve(const connect_endpoint& e, addrinfo*& res) {
  addrinfo hints{};
  hints.ai_flags = AI_ADDRCONFIG;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  res = nullptr;
  auto port = std::to_string(e.port);
  int rc = ::getaddrinfo(e.host.c_str(), port.c_str(), &hints, &res);
  if (rc == EAI_BADFLAGS || rc == EAI_ADDRFAMILY) {
    hints.ai_flags = 0;
    rc = ::getaddrinfo(e.host.c_str(), port.c_str(), &hints, &res);
  }
  return rc;
}

// The hosts of `connect` that do not resolve, each with why ("'zk1.invalid': Name or service
// not known"); empty when all resolve. Only after zookeeper_init failed, which resolved them
// the same way (and says ENOENT, or EINVAL, without a name).
std::string unresolvable_hosts(std::string_view connect) {
  std::string r;
  for (const auto& e : endpoints_of(connect)) {
    addrinfo* res = nullptr;
    int rc = resolve(e, res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0)
      r += (r.empty() ? "'" : "; '") + e.host + "': " + (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
  }
  return r;
}

// Each server of `connect` with every address it resolves to, named as the C client names its
// current server ("127.0.0.1:2181", "[::1]:2181"), resolved as it resolves them.
std::vector<resolved_server> resolve_servers(std::string_view connect) {
  std::vector<resolved_server> r;
  for (const auto& e : endpoints_of(connect)) {
    auto& server = r.emplace_back(resolved_server{e, {}});
    addrinfo* res = nullptr;
    resolve(e, res);
    for (addrinfo* a = res; a; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      std::string name;
      if (a->ai_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(a->ai_addr);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        name = "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
      } else if (a->ai_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(a->ai_addr);
        ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        name = std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
      }
      if (!name.empty() && std::find(server.addresses.begin(), server.addresses.end(), name) == server.addresses.end())
        server.addresses.push_back(std::move(name));
    }
    if (res) ::freeaddrinfo(res);
  }
  return r;
}

}  // namespace

void session_impl::connect(void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_);
  if (auto ec = validate_connect_string(opts_->connect)) {
    op->complete(ec);
    return;
  }
  if (connect_op_) {
    op->complete(errc::already_connecting);
    return;
  }
  if (zh_ && is_connected(state_)) {
    op->complete({});
    return;
  }
  if (zh_ && state_ == session_state::suspended) {
    // The session may still live on the server, with our ephemeral nodes: replacing it here
    // would leave its locks to expire later, under guards that believe they hold them.
    op->complete(errc::session_suspended);
    return;
  }
  if (zh_) close_handle(errc::session_closed);  // the expired handle
  open_handle();
  if (!zh_) {
    error_code ec(errno ? errno : EINVAL, boost::system::system_category());
    // The C client fails when no host resolves, with ENOENT ("No such file or directory"):
    // name them, and why.
    if (auto why = unresolvable_hosts(opts_->connect); !why.empty())
      ec = with_message(errc::unresolvable_host, "cannot resolve the ZooKeeper host " + why);
    op->complete(ec);
    set_state(session_state::disconnected);
    return;
  }
  connect_op_ = op;
  std::weak_ptr<session_impl> weak = weak_from_this();
  hook_cancel(*op, weak, [](session_impl& self, asio::cancellation_type) {
    auto c = std::move(self.connect_op_);
    self.connect_timer_.cancel();
    self.close_handle(asio::error::operation_aborted);
    self.set_state(session_state::disconnected);
    c->abort();
  });
  connect_timer_.expires_after(opts_->connect_timeout);
  connect_timer_.async_wait([weak](error_code ec) {
    auto self = weak.lock();
    if (ec || !self || !self->connect_op_) return;
    auto c = std::move(self->connect_op_);
    // Nothing logged here: the error names each server and its cause, and the summary's line
    // named them when they first failed; a third telling is noise.
    auto timeout_ec = self->connect_timeout_error();
    self->close_handle(errc::connect_timeout);
    self->set_state(session_state::disconnected);
    c->complete(timeout_ec);
  });
  set_state(session_state::connecting);
  pump();
}

// errc::connect_timeout, with why: each server's last failure, or the one we wait for.
error_code session_impl::connect_timeout_error() const {
  std::string cause = log_summary_.causes();
  if (cause.empty() && zh_) {
    // Nothing failed: the server we are at has not answered yet (a dropped SYN, a listener
    // that does not accept, a server too busy to answer the handshake).
    std::string server = c_current_server(zh_);
    cause = (server.empty() ? "?" : server) +
            (c_state(zh_) == ZOO_ASSOCIATING_STATE ? ": no answer to the connect request" : ": no answer");
  }
  if (cause.empty()) return errc::connect_timeout;
  return with_message(errc::connect_timeout,
                      "could not connect to any ZooKeeper server within the connect timeout: " + cause);
}

void session_impl::open_handle() {
  // Our own lookup of the hosts, outside the C client's lock (zookeeper_init2's is under it).
  auto servers = resolve_servers(opts_->connect);
  in_session guard(this);
  ++handle_generation_;
  ever_connected_ = false;
  dropped_in_send_ = false;
  not_zookeeper_.clear();
  drop_pending_ = false;
  attempt_server_.clear();
  servers_ = std::move(servers);
  endpoints_.clear();
  for (const auto& server : servers_) endpoints_.insert(server.addresses.begin(), server.addresses.end());
  errno = 0;
  clientid_t resume{};
  if (opts_->resume) {
    resume.client_id = opts_->resume->id;
    std::memcpy(resume.passwd, opts_->resume->password.data(), std::min(sizeof resume.passwd, opts_->resume->password.size()));
  }
  last_ack_ = std::chrono::steady_clock::now();  // the connect request goes after this
  zh_ = zookeeper_init2(opts_->connect.c_str(), global_watcher, static_cast<int>(opts_->session_timeout.count()),
                        opts_->resume ? &resume : nullptr, this, 0, log_callback);
  if (!zh_) return;
  // By default the C client resolves the connect string's hosts again on every
  // zookeeper_interest call (a socket, a netlink dump and file reads each time): resolve on
  // connection loss only.
  zoo_set_servers_resolution_delay(zh_, -1);
  if (!opts_->digest_auth.empty()) {
    int rc = zoo_add_auth(zh_, "digest", opts_->digest_auth.data(),
                          static_cast<int>(opts_->digest_auth.size()), nullptr, nullptr);
    if (rc != ZOK) log(log_level::error, std::string("zklock: zoo_add_auth failed: ") + zerror(rc));
  }
}

// Completes a pending async_connect, if any.
void session_impl::finish_connect(error_code ec) {
  if (!connect_op_) return;
  connect_timer_.cancel();
  auto c = std::move(connect_op_);
  c->complete(ec);
}

// never connected.
bool session_impl::reject_handshake() {
  auto why = implausible_handshake(opts_->session_timeout, c_recv_timeout(zh_), c_client_id(zh_).client_id);
  if (!why) return false;
  std::string server = c_current_server(zh_);
  auto ec = with_message(errc::not_zookeeper, (server.empty() ? "?" : server) +
                                                  " answered the connect request with something that is not a "
                                                  "ZooKeeper handshake (" + *why +
                                                  "): is it a ZooKeeper server's client port?");
  log(log_level::error, "zklock: " + ec.message());
  // We are inside the C client's call: close the handle after it returns (unless a new
  // connect replaced it meanwhile).
  asio::post(ex_, [weak = weak_from_this(), gen = handle_generation_] {
    if (auto self = weak.lock(); self && self->zh_ && self->handle_generation_ == gen)
      self->close_handle(errc::not_zookeeper);
  });
  finish_connect(ec);
  set_state(session_state::disconnected);
  return true;
}

// An endpoint answered the connect request with something that is not ZooKeeper's
// (check_handshake_answer dropped the connection): one unreachable server, reported once per
// outage as the others are. A connect fails at once only when every endpoint answered so; a
// reconnect never fails for it. While others are left, it leaves the C client's list once the
// C client has let its connection go (drop_not_zookeeper): a reconnect would otherwise keep
// choosing it (see engine/server_list.hpp) until the session expired.
void session_impl::on_not_zookeeper(const std::string& server, const std::string& why) {
  not_zookeeper_[server] = why;
  drop_pending_ = true;
  if (auto line = log_summary_.note_failure(server, "not a ZooKeeper server (" + why + ")")) log(line->level, line->text);
  if (ever_connected_ || !connect_op_ || endpoints_.empty()) return;
  std::string answers;
  for (const auto& endpoint : endpoints_) {
    auto it = not_zookeeper_.find(endpoint);
    if (it == not_zookeeper_.end()) return;  // one is left to try
    answers += (answers.empty() ? "" : "; ") + endpoint + ": " + it->second;
  }
  auto ec = with_message(errc::not_zookeeper,
                         "no endpoint answered the connect request with a ZooKeeper handshake (" + answers +
                             "): is it a ZooKeeper server's client port?");
  log(log_level::error, "zklock: " + ec.message());
  close_handle(errc::not_zookeeper);
  finish_connect(ec);
  set_state(session_state::disconnected);
}

// The endpoints that answered something else than ZooKeeper leave the handle's server list
// (zoo_set_servers: the session, its id and its requests are kept), for the life of this
// handle: a new session (async_connect) tries every server of the connect string again. Only
// between connections (the C client's state 0, its socket closed and cleaned up): with a
// socket open, zoo_set_servers would close it without that cleanup.
void session_impl::drop_not_zookeeper() {
  if (!drop_pending_ || !zh_ || c_state(zh_) != 0) return;
  drop_pending_ = false;
  std::set<std::string> dropped;
  for (const auto& [endpoint, why] : not_zookeeper_) dropped.insert(endpoint);
  auto hosts = servers_without(servers_, dropped);
  if (!hosts) return;  // dropped already, or none would be left
  int rc;
  {
    in_session guard(this);
    rc = zoo_set_servers(zh_, hosts->c_str());
  }
  if (rc != ZOK) {
    log(log_level::error, std::string("zklock: zoo_set_servers(\"") + *hosts + "\") failed: " + zerror(rc));
    return;
  }
  log(log_level::info, "zklock: endpoints that are not ZooKeeper servers are no longer tried by this session; servers: " +
                           *hosts);
}

// ---------------------------------------------------------------------------------------------
// the public header's entry point (detail/session_ops.hpp)

namespace session_ops {

// From any thread: it runs on the session's executor (on_executor).
void connect(session_impl& s, void_handler h) {
  on_executor(s.executor(), std::move(h), [self = s.shared_from_this()](auto h) mutable { self->connect(std::move(h)); });
}

}  // namespace session_ops

}  // namespace detail
}  // namespace zklock
