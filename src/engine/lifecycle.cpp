// The session's lifecycle: connect, close, the session events of the C client, the state and
// its listeners, and what the server has seen of us (the validity deadline of held locks).
#include "engine/client_id.hpp"
#include "engine/contact.hpp"
#include "engine/glue.hpp"
#include "engine/handshake.hpp"
#include "engine/hooks.hpp"
#include "engine/session_impl.hpp"
#include "error_message.hpp"

#include <zklock/path.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

namespace zklock {

namespace detail {

session_impl::session_impl(asio::any_io_executor ex, session_options opts)
    : ex_(ex), opts_(std::make_unique<session_options>(std::move(opts))), sd_(ex), timer_(ex), connect_timer_(ex), expiry_timer_(ex) {
  identity_ = node_identity(opts_->identity);
}

session_impl::~session_impl() { shutdown(); }

std::int64_t session_impl::session_id() const noexcept {
  if (!zh_) return 0;
  return c_client_id(zh_).client_id;
}

session_stats session_impl::stats() const noexcept {
  session_stats st;
  st.requests_sent = requests_sent_;
  st.max_outstanding_requests = window_.max_outstanding();
  st.max_queued_requests = window_.max_queued();
  st.listings_coalesced = window_.coalesced();
  st.outstanding_requests = window_.outstanding();
  st.queued_requests = window_.queued();
  st.watch_events = watch_events_;
  std::copy(std::begin(watch_events_by_type_), std::end(watch_events_by_type_), std::begin(st.watch_events_by_type));
  return st;
}

session_credentials session_impl::credentials() const {
  session_credentials c;
  if (!zh_) return c;
  clientid_t id = c_client_id(zh_);
  c.id = id.client_id;
  c.password.assign(id.passwd, sizeof id.passwd);
  return c;
}

void session_impl::log(log_level level, std::string_view message) {
  if (level > opts_->log_threshold) return;
  if (opts_->log)
    opts_->log(level, message);
  else
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
}

void session_impl::log_client(log_level level, std::string_view message) {
  // Classified either way: the summary keeps each server's last failure, which a connect
  // timeout's error names.
  std::optional<log_summary::line> summary;
  auto summarized = log_summary_.classify(level, message, summary);
  if (!opts_->summarize_client_log) return log(level, message);
  if (summary) log(summary->level, summary->text);
  log(summarized, message);
}

void session_impl::on_abandoned_create(const std::string& path) {
  if (opts_->on_abandoned_create)
    opts_->on_abandoned_create(path);
  else
    log(log_level::warn, "zklock: a cancelled create created " + path + " anyway");
}

std::uint64_t session_impl::subscribe(std::function<void(session_state)> fn) {
  auto id = next_listener_++;
  listeners_.emplace(id, std::move(fn));
  return id;
}

void session_impl::unsubscribe(std::uint64_t id) noexcept { listeners_.erase(id); }

void session_impl::keep_owed(std::shared_ptr<void> obj) { owed_.push_back(std::move(obj)); }

void session_impl::drop_owed(const void* obj) noexcept {
  auto it = std::find_if(owed_.begin(), owed_.end(), [obj](const std::shared_ptr<void>& p) { return p.get() == obj; });
  if (it == owed_.end()) return;
  auto last = std::move(*it);  // released after the erase: its destructor may call us
  owed_.erase(it);
}

void session_impl::set_state(session_state s) {
  if (s == state_) return;
  state_ = s;
  auto waiters = std::move(state_waiters_);
  state_waiters_.clear();
  for (auto& w : waiters) w->complete({}, s);
  // listeners may unsubscribe themselves while we iterate: walk a copy of the ids
  std::vector<std::uint64_t> ids;
  ids.reserve(listeners_.size());
  for (auto& [id, fn] : listeners_) ids.push_back(id);
  for (auto id : ids) {
    auto it = listeners_.find(id);
    if (it != listeners_.end()) it->second(s);
  }
}

void session_impl::wait_state(session_state known, state_handler h) {
  auto op = pending<void(error_code, session_state)>::make(std::move(h), ex_);
  if (state_ != known) {
    op->complete({}, state_);
    return;
  }
  state_waiters_.push_back(op);
}

// ---------------------------------------------------------------------------------------------
// connect / close

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
  in_session guard(this);
  ++handle_generation_;
  ever_connected_ = false;
  dropped_in_send_ = false;
  not_zookeeper_.clear();
  drop_pending_ = false;
  attempt_server_.clear();
  servers_ = resolve_servers(opts_->connect);
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

void session_impl::close_handle(error_code reason) noexcept {
  if (!zh_) return;
  ++suspension_;  // a pending local expiry is this handle's
  expiry_timer_.cancel();
  // Stop watching the socket before the C client closes it (our dup closes here).
  forget_descriptor();
  ++timer_generation_;
  timer_waiting_ = false;
  timer_.cancel();
  {
    in_session guard(this);
    zhandle_t* zh = zh_;
    zh_ = nullptr;
    // Flushes the close request (server deletes our ephemerals at once) and fails pending
    // completions with ZCLOSING; those only post their handlers.
    zookeeper_close(zh);
  }
  fail_queued(reason);
  // The C client no longer calls any watcher of this handle: end them all.
  auto watches = std::move(watches_);
  watches_.clear();
  removals_.clear();  // (their replies came with ZCLOSING; none can come later)
  for (watch_state* w : watches) {
    w->registered = false;
    w->deliver(reason == errc::session_expired ? reason : error_code(errc::session_closed), {});
    intrusive_ptr_release(w);
  }
}

// Completes a pending async_connect, if any.
void session_impl::finish_connect(error_code ec) {
  if (!connect_op_) return;
  connect_timer_.cancel();
  auto c = std::move(connect_op_);
  c->complete(ec);
}

void session_impl::close(void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_);
  finish_connect(errc::session_closed);
  close_handle(errc::session_closed);
  set_state(session_state::closed);
  op->complete({});
}

void session_impl::shutdown() noexcept {
  finish_connect(errc::session_closed);
  connect_timer_.cancel();
  expiry_timer_.cancel();
  // Guards and acquires learn that the session is over (their listeners only post), as from
  // async_close; state waiters complete with session_closed.
  auto waiters = std::move(state_waiters_);
  state_waiters_.clear();
  if (zh_) {
    close_handle(errc::session_closed);
    set_state(session_state::closed);
  }
  for (auto& w : waiters) w->complete(errc::session_closed, state_);
  listeners_.clear();
  // Nothing is owed to a closed session; the objects live until the state handlers posted
  // above have told them (their waiters complete with the outcome).
  if (!owed_.empty()) asio::post(ex_, [keep = std::move(owed_)] {});
  owed_.clear();
}

void session_impl::on_session_event(int zstate) {
  if (zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE) {
    bool first = !ever_connected_;
    if (first && zh_ && reject_handshake()) return;
    ever_connected_ = true;
    log_summary_.on_connected();  // the next outage is reported afresh
    if (!first) last_ack_ = std::max(last_ack_, suspended_at_);
    ++suspension_;  // over: no local expiry
    expiry_timer_.cancel();
    finish_connect(error_code{});
    set_state(first ? session_state::connected : session_state::reconnected);
  } else if (zstate == ZOO_CONNECTING_STATE || zstate == ZOO_ASSOCIATING_STATE) {
    // Any reconnect request is sent after this: a reconnect touches the session no earlier.
    if (ever_connected_ && state_ != session_state::suspended) {
      suspended_at_ = std::chrono::steady_clock::now();
      arm_local_expiry();
    }
    if (ever_connected_) set_state(session_state::suspended);
  } else if (zstate == ZOO_EXPIRED_SESSION_STATE || zstate == ZOO_AUTH_FAILED_STATE) {
    error_code ec = zstate == ZOO_AUTH_FAILED_STATE ? error_code(zk_errc::auth_failed) : error_code(errc::session_expired);
    for (watch_state* w : watches_) w->deliver(ec, {});
    finish_connect(ec);
    // The handle is dead; close it outside the C client's call stack.
    std::weak_ptr<session_impl> weak = weak_from_this();
    asio::post(ex_, [weak, ec] {
      if (auto self = weak.lock(); self && self->zh_ &&
          (c_state(self->zh_) == ZOO_EXPIRED_SESSION_STATE || c_state(self->zh_) == ZOO_AUTH_FAILED_STATE))
        self->close_handle(ec);
    });
    // An authentication the server rejected ends the handle as surely as an expiry (the C
    // client never reconnects): closed, which guards (lost) and waiting acquires
    // (session_closed) handle. The session itself lives on the server until it expires.
    if (zstate == ZOO_AUTH_FAILED_STATE)
      log(log_level::error, "zklock: the server rejected the session's authentication; the session is closed");
    set_state(zstate == ZOO_AUTH_FAILED_STATE ? session_state::closed : session_state::expired);
  }
}

// Local expiry. A server expires a session it heard nothing from for the negotiated timeout;
// the C client only learns it from a server that answers its reconnect, and retries for ever
// while none does: a session whose ensemble is gone would stay suspended, its operations
// waiting, until destroyed. So once the negotiated timeout has passed since the connection was
// lost (no server answered meanwhile: that would have ended the suspension) any server that
// still has the session has expired it, and the session expires here as well: the handle is
// closed (nothing is sent: it is not connected), pending operations fail with
// session_expired, and the next async_connect starts a new session. Its ephemeral nodes are
// the server's to delete, at its own expiry; our guards turned lost at their deadline, before.
void session_impl::arm_local_expiry() {
  auto gen = ++suspension_;
  expiry_timer_.expires_at(suspended_at_ + negotiated_timeout());
  expiry_timer_.async_wait([weak = weak_from_this(), gen](error_code ec) {
    auto self = weak.lock();
    if (ec || !self || gen != self->suspension_ || !self->zh_ || self->state_ != session_state::suspended) return;
    self->expire_locally();
  });
}

void session_impl::expire_locally() {
  log(log_level::warn, "zklock: no ZooKeeper server answered within the session timeout (" +
                           std::to_string(negotiated_timeout().count()) +
                           " ms) after the connection was lost: the session has expired (a new async_connect "
                           "starts a new session)");
  expiring_locally_ = true;
  close_handle(errc::session_expired);
  expiring_locally_ = false;
  set_state(session_state::expired);
}

// The first connection of a handle: is the answer to the connect request a ZooKeeper
// server's? (A later one is checked by the C client: a different session id is an expiry.)
// If not, the connect fails with errc::not_zookeeper and the handle is closed; the session was
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
// what the server has seen of us

void session_impl::on_reply(int rc, std::chrono::steady_clock::time_point queued) noexcept {
  if (proves_contact(rc) && queued > last_ack_) last_ack_ = queued;
}

std::chrono::milliseconds session_impl::negotiated_timeout() const noexcept {
  if (zh_ && ever_connected_) {
    int t = c_recv_timeout(zh_);
    if (t > 0) return std::chrono::milliseconds(t);
  }
  return opts_->session_timeout;
}

std::chrono::steady_clock::time_point session_impl::valid_until() const noexcept {
  auto timeout = negotiated_timeout();
  auto margin = opts_->validity_margin.count() > 0
                    ? opts_->validity_margin
                    : std::max<std::chrono::milliseconds>(timeout / 10, std::chrono::milliseconds(200));
  return last_ack_ + timeout - margin;
}

// ---------------------------------------------------------------------------------------------
// the public header's entry points (detail/session_ops.hpp)

namespace session_ops {

std::shared_ptr<session_impl> make_session(asio::any_io_executor ex, session_options opts) {
  return std::make_shared<session_impl>(std::move(ex), std::move(opts));
}
namespace {
// The shutdown handed to the session's executor. Destroyed without having run (its io_context
// goes without running again: a program's teardown, no thread runs it any more), it shuts the
// engine down then, as the destructor did: the objects the engine keeps for what they owe the
// server (keep_owed) keep the engine too, and only shutdown() lets them go.
struct shutdown_handler {
  std::shared_ptr<session_impl> self;
  void operator()() { std::exchange(self, nullptr)->shutdown(); }
  explicit shutdown_handler(std::shared_ptr<session_impl> s) : self(std::move(s)) {}
  shutdown_handler(shutdown_handler&&) noexcept = default;  // the source left empty
  shutdown_handler& operator=(shutdown_handler&&) = delete;
  ~shutdown_handler() {
    if (self) self->shutdown();
  }
};
}  // namespace

// The session object's destructor (and move assignment), on any thread. The engine's state
// belongs to its executor, where the session's own work may be running at this moment on
// another thread: the completion whose future the caller just saw ready, the unsubscribe of a
// guard the caller just dropped. So the shutdown runs there too: at once when the caller is on
// the executor (asio::dispatch), next there otherwise.
void shutdown(session_impl& s) noexcept { asio::dispatch(s.executor(), shutdown_handler(s.shared_from_this())); }
const session_options& options(const session_impl& s) noexcept { return s.options(); }
session_state state(const session_impl& s) noexcept { return s.state(); }
std::int64_t session_id(const session_impl& s) noexcept { return s.session_id(); }
std::chrono::milliseconds negotiated_timeout(const session_impl& s) noexcept { return s.negotiated_timeout(); }
session_credentials credentials(const session_impl& s) { return s.credentials(); }
session_stats stats(const session_impl& s) noexcept { return s.stats(); }
// Operations may start on any thread: each runs on the session's executor (on_executor).
void connect(session_impl& s, void_handler h) {
  on_executor(s.executor(), std::move(h), [self = s.shared_from_this()](auto h) mutable { self->connect(std::move(h)); });
}
void close(session_impl& s, void_handler h) {
  on_executor(s.executor(), std::move(h), [self = s.shared_from_this()](auto h) mutable { self->close(std::move(h)); });
}
void wait_state(session_impl& s, session_state known, state_handler h) {
  on_executor(s.executor(), std::move(h), [self = s.shared_from_this(), known](auto h) mutable {
    self->wait_state(known, std::move(h));
  });
}

}  // namespace session_ops

}  // namespace detail
}  // namespace zklock
