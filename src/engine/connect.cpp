// Connecting: the connect string's host names looked up off the loop (asio's resolver), the C
// client's handle opened on their numeric addresses, the connect's timeout and its error, the
// first answer of a handle checked (is it ZooKeeper's?), and the C client's server list kept:
// the names looked up again after a connection loss, the endpoints that answered something
// else dropped.
//
// Why our own lookup: the C client resolves its host list with a blocking getaddrinfo in
// zookeeper_init2, in zoo_set_servers, and (3.8, update_addrs) in every zookeeper_interest
// while it has no socket, that is after each connection loss, before each attempt. Those calls
// run on the loop and under the C-client lock of the process (glue.hpp): a slow DNS server
// would stall this io_context and every session of the process, once per reconnect attempt.
// It is handed numeric addresses only, which getaddrinfo parses without a lookup.
#include "engine/contact.hpp"
#include "engine/glue.hpp"
#include "engine/handshake.hpp"
#include "engine/hooks.hpp"
#include "engine/session_impl.hpp"
#include "error_message.hpp"

#include <zklock/path.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace zklock {

namespace detail {

namespace {

// The parts of a connect string already validated (connect() checks it first).
connect_string_parts parts_of(std::string_view connect) {
  error_code ignored;
  return parse_connect_string(connect, ignored);
}

// The least time between two lookups of the names while the C client is between connections
// (it attempts a refused server every few milliseconds).
constexpr std::chrono::seconds lookup_interval{1};

// An address named as the C client names its current server: "127.0.0.1:2181", "[::1]:2181".
std::string address_name(const asio::ip::address& a, std::uint16_t port) {
  return a.is_v6() ? "[" + a.to_string() + "]:" + std::to_string(port) : a.to_string() + ":" + std::to_string(port);
}

// "'zk1.invalid': Host not found (authoritative); 'zk2.invalid': ..."
std::string named_failures(const std::vector<resolved_server>& servers, const std::vector<std::string>& why) {
  std::string r;
  for (std::size_t i = 0; i < servers.size(); ++i)
    if (!why[i].empty()) r += (r.empty() ? "'" : "; '") + servers[i].server.host + "': " + why[i];
  return r;
}

}  // namespace

// One lookup of every server of the connect string: an address is taken as it is, a name is
// looked up with asio's resolver (getaddrinfo on a thread of the io_context's resolver service;
// it completes on the session's executor). As the C client looks them up: AI_ADDRCONFIG, and
// again without it when that fails.
struct host_lookup : std::enable_shared_from_this<host_lookup> {
  asio::ip::tcp::resolver resolver;
  std::vector<resolved_server> servers;  // in the connect string's order
  std::vector<std::string> failures;     // per server: why its name did not resolve, "" if it did
  std::vector<char> waiting;             // per server: its lookup has not completed
  std::size_t remaining = 0;
  bool stopped = false;
  std::function<void(host_lookup&)> done;

  host_lookup(const asio::any_io_executor& ex, const std::vector<connect_endpoint>& endpoints)
      : resolver(ex), failures(endpoints.size()), waiting(endpoints.size(), 0) {
    for (const auto& e : endpoints) servers.push_back({e, {}});
  }

  // False when every server is an address: then done already (and `done` not called).
  bool start() {
    for (std::size_t i = 0; i < servers.size(); ++i) {
      const auto& e = servers[i].server;
      error_code ec;
      auto address = asio::ip::make_address(e.host, ec);
      if (!ec) {
        servers[i].addresses.push_back(address_name(address, e.port));
        continue;
      }
      waiting[i] = 1;
      ++remaining;
    }
    if (remaining == 0) return false;
    for (std::size_t i = 0; i < servers.size(); ++i)
      if (waiting[i]) look_up(i, true);
    return true;
  }

  void look_up(std::size_t i, bool addrconfig) {
    using flags = asio::ip::resolver_base;
    const auto& e = servers[i].server;
    resolver.async_resolve(
        e.host, std::to_string(e.port),
        addrconfig ? flags::address_configured | flags::numeric_service : flags::numeric_service,
        [self = shared_from_this(), i, addrconfig](error_code ec, asio::ip::tcp::resolver::results_type results) {
          if (self->stopped) return;
          // EAI_BADFLAGS and EAI_ADDRFAMILY (which asio reports as host_not_found) may be
          // AI_ADDRCONFIG's doing: the C client tries once more without it, as we do.
          if (ec && addrconfig && (ec == asio::error::invalid_argument || ec == asio::error::host_not_found))
            return self->look_up(i, false);
          auto& server = self->servers[i];
          if (ec) self->failures[i] = ec.message();
          for (const auto& entry : results) {
            auto name = address_name(entry.endpoint().address(), entry.endpoint().port());
            if (std::find(server.addresses.begin(), server.addresses.end(), name) == server.addresses.end())
              server.addresses.push_back(std::move(name));
          }
          if (ec.value() == 0 && server.addresses.empty()) self->failures[i] = "no address";
          self->waiting[i] = 0;
          if (--self->remaining == 0 && self->done) std::exchange(self->done, nullptr)(*self);
        });
  }

  void stop() noexcept {
    stopped = true;
    done = nullptr;
    resolver.cancel();
  }

  // The names still being looked up: "'zk1.example'".
  std::string waiting_names() const {
    std::string r;
    for (std::size_t i = 0; i < servers.size(); ++i)
      if (waiting[i]) r += (r.empty() ? "'" : ", '") + servers[i].server.host + "'";
    return r;
  }
};

void session_impl::start_lookup(std::function<void(session_impl&, host_lookup&)> done) {
  auto l = std::make_shared<host_lookup>(ex_, parts_of(opts_->connect).endpoints);
  last_lookup_ = std::chrono::steady_clock::now();
  lookup_ = l;
  l->done = [weak = weak_from_this(), done = std::move(done)](host_lookup& l) {
    auto self = weak.lock();
    if (!self || self->lookup_.get() != &l) return;
    auto keep = std::move(self->lookup_);
    done(*self, l);
  };
  if (!l->start()) {
    auto finish = std::exchange(l->done, nullptr);
    finish(*l);
  }
}

void session_impl::stop_lookup() noexcept {
  if (auto l = std::move(lookup_)) l->stop();
}

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
  connect_op_ = op;
  std::weak_ptr<session_impl> weak = weak_from_this();
  hook_cancel(*op, weak, [](session_impl& self, asio::cancellation_type) {
    auto c = std::move(self.connect_op_);
    self.connect_timer_.cancel();
    self.stop_lookup();
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
    self->stop_lookup();
    self->close_handle(errc::connect_timeout);
    self->set_state(session_state::disconnected);
    c->complete(timeout_ec);
  });
  set_state(session_state::connecting);
  auto endpoints = parts_of(opts_->connect).endpoints;
  has_names_ = std::any_of(endpoints.begin(), endpoints.end(), [](const connect_endpoint& e) {
    error_code ec;
    asio::ip::make_address(e.host, ec);
    return bool(ec);
  });
  stop_lookup();  // one looking up again for the expired handle
  start_lookup([](session_impl& self, host_lookup& l) { self.on_connect_lookup(l); });
}

// The connect's lookup is over (at once when the connect string names addresses only): the
// handle opens on the addresses found; a name that found none fails the connect only when no
// other did.
void session_impl::on_connect_lookup(host_lookup& l) {
  if (!connect_op_ || zh_) return;
  servers_ = l.servers;
  auto failed = named_failures(l.servers, l.failures);
  auto hosts = numeric_host_list(servers_, {});
  if (hosts.empty()) {
    finish_connect(with_message(errc::unresolvable_host, "cannot resolve the ZooKeeper host " + failed));
    set_state(session_state::disconnected);
    return;
  }
  if (!failed.empty())
    log(log_level::warn, "zklock: cannot resolve the ZooKeeper host " + failed + "; trying the other servers");
  if (has_names_) log(log_level::info, "zklock: the ZooKeeper servers " + opts_->connect + " are at " + hosts);
  open_handle(hosts);
  if (!zh_) {
    finish_connect(error_code(errno ? errno : EINVAL, boost::system::system_category()));
    set_state(session_state::disconnected);
    return;
  }
  pump();
}

// errc::connect_timeout, with why: each server's last failure, or the one we wait for.
error_code session_impl::connect_timeout_error() const {
  std::string cause = log_summary_.causes();
  if (!zh_ && lookup_) cause = "the lookup of " + lookup_->waiting_names() + " did not finish";
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

void session_impl::open_handle(const std::string& hosts) {
  in_session guard(this);
  ++handle_generation_;
  ever_connected_ = false;
  dropped_in_send_ = false;
  not_zookeeper_.clear();
  list_stale_ = false;
  attempt_server_.clear();
  endpoints_ = all_addresses(servers_);
  c_hosts_ = hosts;
  errno = 0;
  clientid_t resume{};
  if (opts_->resume) {
    resume.client_id = opts_->resume->id;
    std::memcpy(resume.passwd, opts_->resume->password.data(), std::min(sizeof resume.passwd, opts_->resume->password.size()));
  }
  last_ack_ = std::chrono::steady_clock::now();  // the connect request goes after this
  zh_ = zookeeper_init2((hosts + parts_of(opts_->connect).chroot).c_str(), global_watcher, static_cast<int>(opts_->session_timeout.count()),
                        opts_->resume ? &resume : nullptr, this, 0, log_callback);
  if (!zh_) return;
  // By default the C client parses its host list again (getaddrinfo: a socket, a netlink dump
  // and file reads each time) on every zookeeper_interest call: only between connections.
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
  if (!zh_) stop_lookup();  // the connect's own (a close, a shutdown)
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
// C client has let its connection go (update_server_list): a reconnect would otherwise keep
// choosing it (see engine/server_list.hpp) until the session expired.
void session_impl::on_not_zookeeper(const std::string& server, const std::string& why) {
  not_zookeeper_[server] = why;
  list_stale_ = true;
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

// The C client's server list follows servers_ (the names as last looked up) without the
// endpoints that answered something else than ZooKeeper (zoo_set_servers: the session, its id
// and its requests are kept), for the life of this handle: a new session (async_connect) tries
// every server of the connect string again. Only between connections (the C client's state 0,
// its socket closed and cleaned up): with a socket open, zoo_set_servers would close it without
// that cleanup. Numeric addresses only: the C client's getaddrinfo never looks a name up.
void session_impl::update_server_list() {
  if (!zh_ || (!list_stale_ && !has_names_) || c_state(zh_) != 0) return;
  look_up_again();
  if (!list_stale_) return;
  list_stale_ = false;
  std::set<std::string> dropped;
  for (const auto& [endpoint, why] : not_zookeeper_) dropped.insert(endpoint);
  auto hosts = numeric_host_list(servers_, dropped);
  if (hosts.empty() || hosts == c_hosts_) return;  // none would be left, or nothing changes
  int rc;
  {
    in_session guard(this);
    rc = zoo_set_servers(zh_, hosts.c_str());
  }
  if (rc != ZOK) {
    log(log_level::error, "zklock: zoo_set_servers(\"" + hosts + "\") failed: " + zerror(rc));
    return;
  }
  c_hosts_ = hosts;
  log(log_level::info, std::string("zklock: ") +
                           (dropped.empty() ? "the addresses of the ZooKeeper servers " + opts_->connect + " changed"
                                            : "endpoints that are not ZooKeeper servers are no longer tried by this "
                                              "session") +
                           "; servers: " + hosts);
}

// The names are looked up again after a connection loss, and while no connection succeeds,
// once per lookup_interval: a server that moved (a new address under its name) is found as
// the C client would have found it; it now only parses addresses. A name that does not
// resolve this time keeps its addresses (refreshed).
void session_impl::look_up_again() {
  if (!has_names_ || lookup_ || !zh_) return;
  if (std::chrono::steady_clock::now() - last_lookup_ < lookup_interval) return;
  start_lookup([gen = handle_generation_](session_impl& self, host_lookup& l) {
    if (!self.zh_ || self.handle_generation_ != gen) return;
    auto servers = refreshed(self.servers_, l.servers);
    if (numeric_host_list(servers, {}) == numeric_host_list(self.servers_, {})) return;
    self.servers_ = std::move(servers);
    self.endpoints_ = all_addresses(self.servers_);
    self.list_stale_ = true;
    self.update_server_list();  // now if between connections, else at the next chance
  });
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
