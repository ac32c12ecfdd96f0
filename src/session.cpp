// The session engine: drives the single-threaded ZooKeeper C client from an Asio executor.
//
// The loop: zookeeper_interest() tells which fd to watch, for what, and until when; we wait on
// that fd with a non-owning stream_descriptor and on a steady_timer, then call
// zookeeper_process(). The C client closes and reopens its socket inside those calls (often
// under the same fd number, which epoll has forgotten), so the descriptor is re-registered
// whenever the fd number or the socket's inode changes.
#include <zklock/session.hpp>

#include <zookeeper/zookeeper.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <utility>
#include <iostream>

namespace zklock {

const char* to_string(session_state s) noexcept {
  switch (s) {
    case session_state::disconnected: return "disconnected";
    case session_state::connecting: return "connecting";
    case session_state::connected: return "connected";
    case session_state::suspended: return "suspended";
    case session_state::reconnected: return "reconnected";
    case session_state::expired: return "expired";
    case session_state::closed: return "closed";
  }
  return "?";
}

const char* to_string(watch_event_type t) noexcept {
  switch (t) {
    case watch_event_type::created: return "created";
    case watch_event_type::deleted: return "deleted";
    case watch_event_type::changed: return "changed";
    case watch_event_type::child: return "child";
    case watch_event_type::not_watching: return "not_watching";
  }
  return "?";
}

namespace detail {
namespace {

// The session whose C call is on the stack; routes the C client's log lines (its log callback
// has no context argument). Everything runs on the session's executor, one call at a time.
thread_local session_impl* current_session = nullptr;

struct in_session {
  session_impl* prev;
  explicit in_session(session_impl* s) : prev(current_session) { current_session = s; }
  ~in_session() { current_session = prev; }
};

// Around a request: the C client's log goes to this session, and what it sends leaves in one
// segment (see session_impl::cork).
struct request_scope {
  session_impl::send_batch batch;
  in_session guard;
  explicit request_scope(session_impl* s) : batch(s), guard(s) {}
};

void log_callback(const char* message) {
  std::string_view m(message);
  log_level level = log_level::info;
  if (m.find("ZOO_ERROR@") != std::string_view::npos) level = log_level::error;
  else if (m.find("ZOO_WARN@") != std::string_view::npos) level = log_level::warn;
  else if (m.find("ZOO_DEBUG@") != std::string_view::npos) level = log_level::debug;
  if (current_session)
    current_session->log(level, m);
  else if (level <= log_level::warn)
    std::fprintf(stderr, "%s\n", message);
}

node_stat to_stat(const Stat* s) {
  node_stat r;
  if (!s) return r;
  r.czxid = s->czxid;
  r.mzxid = s->mzxid;
  r.ctime = s->ctime;
  r.mtime = s->mtime;
  r.version = s->version;
  r.cversion = s->cversion;
  r.aversion = s->aversion;
  r.ephemeral_owner = s->ephemeralOwner;
  r.data_length = s->dataLength;
  r.num_children = s->numChildren;
  r.pzxid = s->pzxid;
  return r;
}

int to_flags(create_mode m) {
  switch (m) {
    case create_mode::persistent: return ZOO_PERSISTENT;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case create_mode::container: return ZOO_CONTAINER;
  }
  return ZOO_PERSISTENT;
}

// Adopts the reference handed to the C client as `data`.
template <class Op>
boost::intrusive_ptr<Op> adopt(const void* data) {
  return boost::intrusive_ptr<Op>(static_cast<Op*>(const_cast<void*>(data)), false);
}
template <class Op>
void* hand_over(const boost::intrusive_ptr<Op>& op) {
  intrusive_ptr_add_ref(op.get());
  return op.get();
}

// One request handed to the C client: the pending op, the session (to note the reply and
// drop a watch that was not set), when it was queued, and the watch it sets, if any.
struct no_extra {};
template <class Signature, class Extra = no_extra>
struct request : boost::intrusive_ref_counter<request<Signature, Extra>, boost::thread_unsafe_counter> {
  typename pending<Signature>::ptr op;
  std::weak_ptr<session_impl> owner;
  std::chrono::steady_clock::time_point queued;
  boost::intrusive_ptr<watch_state> watch;
  Extra extra;

  explicit request(typename pending<Signature>::ptr p) : op(std::move(p)) {}
  /// Notes the reply with the session; drops a watch the server did not set (`set`: whether
  /// this reply code sets it). Returns the session when it still exists.
  std::shared_ptr<session_impl> replied(int rc, bool set = true) {
    auto s = owner.lock();
    if (!s) return s;
    s->on_reply(rc, queued);
    if (watch && !set) s->drop_watch(watch.get());
    return s;
  }
};
template <class Signature, class Extra = no_extra>
using request_ptr = boost::intrusive_ptr<request<Signature, Extra>>;

// A transaction's C-side buffers, alive until its completion.
struct multi_buffers {
  std::vector<multi_op> ops;
  std::vector<zoo_op_t> zops;
  std::vector<zoo_op_result_t> zresults;
  std::vector<std::vector<char>> path_buffers;
  std::vector<Stat> stats;
};

void global_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) static_cast<session_impl*>(ctx)->on_session_event(state);
}

void node_watcher(zhandle_t*, int type, int state, const char* path, void* ctx) {
  auto* w = static_cast<watch_state*>(ctx);
  if (auto owner = w->owner.lock()) owner->on_watch_fired(w, type, state, path);
}

void void_completion(int rc, const void* data) {
  auto r = adopt<request<void(error_code)>>(data);
  r->replied(rc);
  r->op->complete(zk_error(rc));
}

}  // namespace

void watch_state::deliver(error_code ec, watch_event ev) {
  if (fired) return;
  if (waiter && waiter->active()) {
    auto w = std::move(waiter);
    w->complete(ec, std::move(ev));
    // consumed; later waits see the same outcome, never an event that could be taken for one
    fired.emplace(ec, watch_event{watch_event_type::not_watching, path});
    return;
  }
  fired.emplace(ec, std::move(ev));
}

session_impl::session_impl(asio::any_io_executor ex, session_options opts)
    : ex_(ex), opts_(std::make_unique<session_options>(std::move(opts))), sd_(ex), timer_(ex), connect_timer_(ex) {}

session_impl::~session_impl() { shutdown(); }

std::int64_t session_impl::session_id() const noexcept {
  if (!zh_) return 0;
  const clientid_t* id = zoo_client_id(zh_);
  return id ? id->client_id : 0;
}

session_stats session_impl::stats() const noexcept {
  session_stats st;
  st.requests_sent = requests_sent_;
  st.watch_events = watch_events_;
  std::copy(std::begin(watch_events_by_type_), std::end(watch_events_by_type_), std::begin(st.watch_events_by_type));
  return st;
}

session_credentials session_impl::credentials() const {
  session_credentials c;
  if (!zh_) return c;
  if (const clientid_t* id = zoo_client_id(zh_)) {
    c.id = id->client_id;
    c.password.assign(id->passwd, sizeof id->passwd);
  }
  return c;
}

void session_impl::log(log_level level, std::string_view message) {
  if (level > opts_->log_threshold) return;
  if (opts_->log)
    opts_->log(level, message);
  else
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
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
    op->complete(error_code(errno ? errno : EINVAL, boost::system::system_category()));
    set_state(session_state::disconnected);
    return;
  }
  connect_op_ = op;
  std::weak_ptr<session_impl> weak = weak_from_this();
  op->on_cancel = [weak](asio::cancellation_type) {
    if (auto self = weak.lock()) {
      auto c = std::move(self->connect_op_);
      self->connect_timer_.cancel();
      self->close_handle(asio::error::operation_aborted);
      self->set_state(session_state::disconnected);
      c->abort();
    }
  };
  connect_timer_.expires_after(opts_->connect_timeout);
  connect_timer_.async_wait([weak](error_code ec) {
    auto self = weak.lock();
    if (ec || !self || !self->connect_op_) return;
    auto c = std::move(self->connect_op_);
    self->close_handle(errc::connect_timeout);
    self->set_state(session_state::disconnected);
    c->complete(errc::connect_timeout);
  });
  set_state(session_state::connecting);
  pump();
}

void session_impl::open_handle() {
  in_session guard(this);
  ever_connected_ = false;
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
  // Stop watching the fd before the C client closes it; never close it ourselves.
  if (sd_.is_open()) {
    error_code ignored;
    sd_.cancel(ignored);
    (void)sd_.release();
  }
  registered_fd_ = -1;
  registered_ino_ = 0;
  ++fd_generation_;
  read_waiting_ = write_waiting_ = false;
  ++timer_generation_;
  timer_waiting_ = false;
  connected_at_last_check_ = false;
  timer_.cancel();
  {
    in_session guard(this);
    zhandle_t* zh = zh_;
    zh_ = nullptr;
    // Flushes the close request (server deletes our ephemerals at once) and fails pending
    // completions with ZCLOSING; those only post their handlers.
    zookeeper_close(zh);
  }
  // The C client no longer calls any watcher of this handle: end them all.
  auto watches = std::move(watches_);
  watches_.clear();
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
}

void session_impl::on_session_event(int zstate) {
  if (zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE) {
    bool first = !ever_connected_;
    ever_connected_ = true;
    if (!first) last_ack_ = std::max(last_ack_, suspended_at_);
    finish_connect(error_code{});
    set_state(first ? session_state::connected : session_state::reconnected);
  } else if (zstate == ZOO_CONNECTING_STATE || zstate == ZOO_ASSOCIATING_STATE) {
    // Any reconnect request is sent after this: a reconnect touches the session no earlier.
    if (ever_connected_ && state_ != session_state::suspended) suspended_at_ = std::chrono::steady_clock::now();
    if (ever_connected_) set_state(session_state::suspended);
  } else if (zstate == ZOO_EXPIRED_SESSION_STATE || zstate == ZOO_AUTH_FAILED_STATE) {
    error_code ec = zstate == ZOO_AUTH_FAILED_STATE ? error_code(zk_errc::auth_failed) : error_code(errc::session_expired);
    for (watch_state* w : watches_) w->deliver(ec, {});
    finish_connect(ec);
    // The handle is dead; close it outside the C client's call stack.
    std::weak_ptr<session_impl> weak = weak_from_this();
    asio::post(ex_, [weak, ec] {
      if (auto self = weak.lock(); self && self->zh_ &&
          (zoo_state(self->zh_) == ZOO_EXPIRED_SESSION_STATE || zoo_state(self->zh_) == ZOO_AUTH_FAILED_STATE))
        self->close_handle(ec);
    });
    set_state(zstate == ZOO_AUTH_FAILED_STATE ? session_state::disconnected : session_state::expired);
  }
}

// ---------------------------------------------------------------------------------------------
// the event loop

// The C client sends each request as soon as it is queued, in two send() calls (length, then
// body), on a TCP_NODELAY socket: two segments per request, and two wake-ups of the server for
// each. Corked while a batch queues its requests, they leave in one segment when it ends: a
// request, or a pipelined create and listing. (The kernel flushes a forgotten cork at 200 ms.)
bool session_impl::cork() {
  if (corked_fd_ >= 0 || registered_fd_ < 0 || !zh_ || zoo_state(zh_) != ZOO_CONNECTED_STATE) return false;
  int on = 1;
  if (::setsockopt(registered_fd_, IPPROTO_TCP, TCP_CORK, &on, sizeof on) != 0) return false;
  corked_fd_ = registered_fd_;
  return true;
}

void session_impl::uncork() {
  int fd = std::exchange(corked_fd_, -1);
  // The C client may have dropped the socket while sending (then there is nothing to flush).
  if (fd < 0 || fd != registered_fd_ || !zh_) return;
  int off = 0;
  ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

void session_impl::schedule_pump() {
  if (pump_scheduled_ || !zh_) return;
  pump_scheduled_ = true;
  asio::post(ex_, [self = shared_from_this()] {
    self->pump_scheduled_ = false;
    self->pump();
  });
}

void session_impl::process(int events) {
  if (!zh_) return;
  {
    in_session guard(this);
    zookeeper_process(zh_, events);
  }
  pump();
}

void session_impl::pump() {
  if (!zh_) return;
  int fd = -1, interest = 0;
  timeval tv{};
  int rc;
  {
    in_session guard(this);
    rc = zookeeper_interest(zh_, &fd, &interest, &tv);
  }
  if (!zh_) return;  // a callback closed it
  if (rc == ZINVALIDSTATE) {
    // expired or auth failed: the watcher was told; nothing more to drive
    update_descriptor(-1);
    return;
  }
  std::chrono::microseconds timeout = std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
  if (rc != ZOK) {
    // The C client just dropped the connection: the fd it reports may be the closed one. Watch
    // nothing and come back soon to let it reconnect.
    fd = -1;
    timeout = std::min(timeout, std::chrono::microseconds(std::chrono::milliseconds(50)));
  }
  arm(fd, interest, timeout);
}

void session_impl::update_descriptor(int fd) {
  // While the client stays connected on the same fd number it is the same socket: reopening
  // one passes through the connecting state, seen by at least one turn of the loop. Otherwise
  // compare the socket's inode, since a new socket often gets the old number.
  bool connected = zh_ && zoo_state(zh_) == ZOO_CONNECTED_STATE;
  bool same_socket_certain = connected && connected_at_last_check_ && fd == registered_fd_;
  connected_at_last_check_ = connected;
  if (same_socket_certain) return;
  unsigned long ino = 0;
  if (fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) ino = st.st_ino;
  }
  if (fd == registered_fd_ && ino == registered_ino_) return;
  // The socket changed (a reconnect), possibly under the same number: epoll dropped the old one
  // when it was closed, so register the new one afresh.
  if (sd_.is_open()) {
    error_code ignored;
    sd_.cancel(ignored);
    (void)sd_.release();
  }
  ++fd_generation_;
  read_waiting_ = write_waiting_ = false;
  registered_fd_ = fd;
  registered_ino_ = ino;
  if (fd >= 0) {
    error_code ec;
    sd_.assign(fd, ec);
    if (ec) {
      log(log_level::error, "zklock: cannot watch the ZooKeeper socket: " + ec.message());
      registered_fd_ = -1;
    }
  }
}

void session_impl::arm(int fd, int interest, std::chrono::microseconds timeout) {
  update_descriptor(fd);
  auto gen = fd_generation_;
  if (registered_fd_ >= 0) {
    if ((interest & ZOOKEEPER_READ) && !read_waiting_) {
      read_waiting_ = true;
      sd_.async_wait(asio::posix::descriptor_base::wait_read, [self = shared_from_this(), gen](error_code ec) {
        if (gen != self->fd_generation_) return;
        self->read_waiting_ = false;
        if (ec) return;
        self->process(ZOOKEEPER_READ);
      });
    }
    if ((interest & ZOOKEEPER_WRITE) && !write_waiting_) {
      write_waiting_ = true;
      sd_.async_wait(asio::posix::descriptor_base::wait_write, [self = shared_from_this(), gen](error_code ec) {
        if (gen != self->fd_generation_) return;
        self->write_waiting_ = false;
        if (ec) return;
        self->process(ZOOKEEPER_WRITE);
      });
    }
  }
  // Re-arm the timer only when the C client wants to wake up earlier than already planned:
  // an early wake-up is harmless (we ask zookeeper_interest again), cancelling a wait on every
  // turn of the loop is not free.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (timer_waiting_ && deadline >= timer_.expiry()) return;
  auto tgen = ++timer_generation_;
  timer_waiting_ = true;
  timer_.expires_at(deadline);
  timer_.async_wait([self = shared_from_this(), tgen](error_code ec) {
    if (tgen != self->timer_generation_) return;
    self->timer_waiting_ = false;
    if (ec) return;
    self->process(0);
  });
}

// ---------------------------------------------------------------------------------------------
// operations

namespace {
// Returns an error for a request that cannot be sent now, or {} when it can.
error_code precheck(zhandle_t* zh, session_state st, std::string_view path) {
  if (auto ec = validate_path(path)) return ec;
  if (!zh) {
    if (st == session_state::expired) return errc::session_expired;
    if (st == session_state::closed) return errc::session_closed;
    return errc::not_connected;
  }
  return {};
}

// Replies that say nothing about the server having heard from us recently.
bool proves_contact(int rc) {
  return rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT && rc != ZRUNTIMEINCONSISTENCY && rc != ZCLOSING && rc != ZSESSIONEXPIRED &&
         rc != ZINVALIDSTATE;
}

// Requests already on the wire may still take effect: they honour only the cancellation types
// that allow side effects (Asio's rule); total cancellation is refused.
constexpr auto write_cancellation = asio::cancellation_type::terminal | asio::cancellation_type::partial;

const ACL_vector* acl_for(const session_options& o) {
  return o.default_acl == acl_policy::creator_all ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}
}  // namespace

void session_impl::on_reply(int rc, std::chrono::steady_clock::time_point queued) noexcept {
  if (proves_contact(rc) && queued > last_ack_) last_ack_ = queued;
}

std::chrono::milliseconds session_impl::negotiated_timeout() const noexcept {
  if (zh_ && ever_connected_) {
    int t = zoo_recv_timeout(zh_);
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

template <class Request, class Call>
void session_impl::submit(const boost::intrusive_ptr<Request>& r, Call&& call) {
  r->owner = weak_from_this();
  r->queued = std::chrono::steady_clock::now();
  request_scope scope(this);
  int rc = call(hand_over(r));
  if (rc != ZOK) {
    intrusive_ptr_release(r.get());  // the C client did not take it
    if (r->watch) drop_watch(r->watch.get());
    return r->op->fail(zk_error(rc));
  }
  ++requests_sent_;
  schedule_pump();
}

boost::intrusive_ptr<watch_state> session_impl::new_watch(const std::string& path, bool child) {
  boost::intrusive_ptr<watch_state> w(new watch_state);
  w->owner = weak_from_this();
  w->ex = ex_;
  w->path = path;
  w->child_watch = child;
  w->registered = true;
  intrusive_ptr_add_ref(w.get());  // the registry's reference
  watches_.insert(w.get());
  return w;
}

void session_impl::drop_watch(watch_state* w) {
  if (!w->registered) return;
  w->registered = false;
  if (watches_.erase(w)) intrusive_ptr_release(w);
}

void session_impl::on_watch_fired(watch_state* w, int type, int zstate, const char* path) {
  if (type == ZOO_SESSION_EVENT) {
    // Connection state changes reach every watcher; the watch survives a reconnect.
    if (zstate == ZOO_EXPIRED_SESSION_STATE) w->deliver(errc::session_expired, {});
    return;
  }
  ++watch_events_;
  watch_event ev;
  ev.path = path ? path : "";
  if (type == ZOO_CREATED_EVENT) ev.type = watch_event_type::created;
  else if (type == ZOO_DELETED_EVENT) ev.type = watch_event_type::deleted;
  else if (type == ZOO_CHANGED_EVENT) ev.type = watch_event_type::changed;
  else if (type == ZOO_CHILD_EVENT) ev.type = watch_event_type::child;
  else ev.type = watch_event_type::not_watching;
  ++watch_events_by_type_[static_cast<int>(ev.type)];
  boost::intrusive_ptr<watch_state> keep(w);
  drop_watch(w);
  w->deliver({}, std::move(ev));
}

void session_impl::on_watch_removed(watch_state* w) {
  boost::intrusive_ptr<watch_state> keep(w);
  drop_watch(w);
  w->deliver({}, watch_event{watch_event_type::not_watching, w->path});
}

void session_impl::wait_watch(boost::intrusive_ptr<watch_state> w, watch_handler h) {
  auto op = pending<void(error_code, watch_event)>::make(std::move(h), ex_);
  if (w->fired) {
    op->complete(w->fired->first, w->fired->second);
    return;
  }
  if (w->waiter && w->waiter->active()) w->waiter->abort();  // one waiter at a time
  w->waiter = op;
}

void session_impl::create(std::string path, std::string data, create_mode mode, create_handler h) {
  auto op = pending<void(error_code, create_result)>::make(std::move(h), ex_, write_cancellation);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<void(error_code, create_result)> r(new request<void(error_code, create_result)>(op));
  submit(r, [&](void* d) {
    return zoo_acreate2(
        zh_, path.c_str(), data.data(), static_cast<int>(data.size()), acl_for(*opts_), to_flags(mode),
        [](int rc, const char* value, const Stat* stat, const void* d) {
          auto r = adopt<request<void(error_code, create_result)>>(d);
          auto owner = r->replied(rc);
          if (r->op->active()) {
            create_result res;
            if (rc == ZOK) {
              res.path = value ? value : "";
              res.stat = to_stat(stat);
            }
            r->op->complete(zk_error(rc), std::move(res));
          } else if (rc == ZOK && value && owner) {
            owner->on_abandoned_create(value);
          }
        },
        d);
  });
}

void session_impl::remove(std::string path, int version, void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_, write_cancellation);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<void(error_code)> r(new request<void(error_code)>(op));
  submit(r, [&](void* d) { return zoo_adelete(zh_, path.c_str(), version, void_completion, d); });
}

void session_impl::exists(std::string path, boost::intrusive_ptr<watch_state>* watch, exists_handler h) {
  using sig = void(error_code, std::optional<node_stat>);
  auto op = pending<sig>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<sig> r(new request<sig>(op));
  if (watch) r->watch = *watch = new_watch(path, false);
  auto done = [](int rc, const Stat* stat, const void* d) {
    auto r = adopt<request<sig>>(d);
    r->replied(rc, rc == ZOK || rc == ZNONODE);  // an exists watch is set on a missing node too
    if (rc == ZNONODE) return r->op->complete({}, std::nullopt);
    if (rc != ZOK) return r->op->complete(zk_error(rc), std::nullopt);
    r->op->complete({}, to_stat(stat));
  };
  submit(r, [&](void* d) {
    return watch ? zoo_awexists(zh_, path.c_str(), node_watcher, r->watch.get(), done, d)
                 : zoo_aexists(zh_, path.c_str(), 0, done, d);
  });
  if (watch && !r->watch->registered && !r->watch->fired) *watch = nullptr;
}

void session_impl::get_children(std::string path, boost::intrusive_ptr<watch_state>* watch, children_handler h) {
  using sig = void(error_code, children_result);
  auto op = pending<sig>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<sig> r(new request<sig>(op));
  if (watch) r->watch = *watch = new_watch(path, true);
  auto done = [](int rc, const String_vector* strings, const Stat* stat, const void* d) {
    auto r = adopt<request<sig>>(d);
    r->replied(rc, rc == ZOK);
    children_result res;
    if (rc == ZOK) {
      if (strings) {
        res.children.reserve(strings->count);
        for (int i = 0; i < strings->count; ++i) res.children.emplace_back(strings->data[i]);
      }
      res.stat = to_stat(stat);
    }
    r->op->complete(zk_error(rc), std::move(res));
  };
  submit(r, [&](void* d) {
    return watch ? zoo_awget_children2(zh_, path.c_str(), node_watcher, r->watch.get(), done, d)
                 : zoo_aget_children2(zh_, path.c_str(), 0, done, d);
  });
  if (watch && !r->watch->registered && !r->watch->fired) *watch = nullptr;
}

void session_impl::get_data(std::string path, boost::intrusive_ptr<watch_state>* watch, data_handler h) {
  using sig = void(error_code, data_result);
  auto op = pending<sig>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<sig> r(new request<sig>(op));
  if (watch) r->watch = *watch = new_watch(path, false);
  auto done = [](int rc, const char* value, int len, const Stat* stat, const void* d) {
    auto r = adopt<request<sig>>(d);
    r->replied(rc, rc == ZOK);
    data_result res;
    if (rc == ZOK) {
      if (value && len > 0) res.data.assign(value, static_cast<std::size_t>(len));
      res.stat = to_stat(stat);
    }
    r->op->complete(zk_error(rc), std::move(res));
  };
  submit(r, [&](void* d) {
    return watch ? zoo_awget(zh_, path.c_str(), node_watcher, r->watch.get(), done, d)
                 : zoo_aget(zh_, path.c_str(), 0, done, d);
  });
  if (watch && !r->watch->registered && !r->watch->fired) *watch = nullptr;
}

void session_impl::set_data(std::string path, std::string data, int version, stat_handler h) {
  using sig = void(error_code, node_stat);
  auto op = pending<sig>::make(std::move(h), ex_, write_cancellation);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<sig> r(new request<sig>(op));
  submit(r, [&](void* d) {
    return zoo_aset(
        zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version,
        [](int rc, const Stat* stat, const void* d) {
          auto r = adopt<request<sig>>(d);
          r->replied(rc);
          r->op->complete(zk_error(rc), rc == ZOK ? to_stat(stat) : node_stat{});
        },
        d);
  });
}

void session_impl::multi(std::vector<multi_op> ops, multi_handler h) {
  using sig = void(error_code, std::vector<multi_result>);
  auto op = pending<sig>::make(std::move(h), ex_, write_cancellation);
  for (auto& o : ops)
    if (auto ec = precheck(zh_, state_, o.path)) return op->fail(ec);
  if (ops.empty()) return op->complete(zh_ ? error_code{} : error_code(errc::not_connected), {});
  request_ptr<sig, multi_buffers> r(new request<sig, multi_buffers>(op));
  auto& m = r->extra;
  m.ops = std::move(ops);
  const std::size_t n = m.ops.size();
  m.zops.resize(n);
  m.zresults.resize(n);
  m.path_buffers.resize(n);
  m.stats.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& o = m.ops[i];
    switch (o.type) {
      case multi_op::kind::create:
        m.path_buffers[i].resize(o.path.size() + 32);
        zoo_create_op_init(&m.zops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()),
                           acl_for(*opts_), to_flags(o.mode), m.path_buffers[i].data(),
                           static_cast<int>(m.path_buffers[i].size()));
        break;
      case multi_op::kind::remove:
        zoo_delete_op_init(&m.zops[i], o.path.c_str(), o.version);
        break;
      case multi_op::kind::set_data:
        zoo_set_op_init(&m.zops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), o.version,
                        &m.stats[i]);
        break;
      case multi_op::kind::check:
        zoo_check_op_init(&m.zops[i], o.path.c_str(), o.version);
        break;
    }
  }
  submit(r, [&](void* d) {
    return zoo_amulti(
        zh_, static_cast<int>(n), m.zops.data(), m.zresults.data(),
        [](int rc, const void* d) {
          auto r = adopt<request<sig, multi_buffers>>(d);
          r->replied(rc);
          auto& m = r->extra;
          std::vector<multi_result> results(m.ops.size());
          error_code first;
          for (std::size_t i = 0; i < m.ops.size(); ++i) {
            results[i].ec = zk_error(m.zresults[i].err);
            if (results[i].ec && !first) first = results[i].ec;
            if (m.ops[i].type == multi_op::kind::create && m.zresults[i].err == ZOK)
              results[i].path = m.path_buffers[i].data();
            if (m.ops[i].type == multi_op::kind::set_data && m.zresults[i].err == ZOK)
              results[i].stat = to_stat(&m.stats[i]);
          }
          r->op->complete(rc == ZOK ? error_code{} : (first ? first : zk_error(rc)), std::move(results));
        },
        d);
  });
}

void session_impl::sync(std::string path, void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<void(error_code)> r(new request<void(error_code)>(op));
  submit(r, [&](void* d) {
    return zoo_async(
        zh_, path.c_str(),
        [](int rc, const char*, const void* d) {
          auto r = adopt<request<void(error_code)>>(d);
          r->replied(rc);
          r->op->complete(zk_error(rc));
        },
        d);
  });
}

void session_impl::remove_watch(boost::intrusive_ptr<watch_state> w, void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_);
  if (!w) return op->fail(zk_errc::no_watcher);
  if (auto ec = precheck(zh_, state_, w->path)) return op->fail(ec);
  if (!w->registered) return op->fail(zk_errc::no_watcher);
  // The watch it removes (not `watch`: that one would be dropped if the removal failed).
  using removal = request<void(error_code), boost::intrusive_ptr<watch_state>>;
  boost::intrusive_ptr<removal> r(new removal(op));
  r->extra = w;
  // Removing one watcher only checks it on the server (checkWatches): the server keeps its
  // watch for the connection. When no other watch of this session is on the same path and
  // type, remove them all (removeWatches) so the server forgets it too.
  bool shared = false;
  for (watch_state* other : watches_)
    if (other != w.get() && other->child_watch == w->child_watch && other->path == w->path) {
      shared = true;
      break;
    }
  auto type = w->child_watch ? ZWATCHTYPE_CHILD : ZWATCHTYPE_DATA;
  // The header declares a void_completion_t*, but the C client stores and calls it as a
  // void_completion_t (as its own tests pass it).
  void_completion_t done_fn = [](int rc, const void* d) {
    auto r = adopt<removal>(d);
    // On connection loss the C client keeps the watcher (and sets it again on reconnect): the
    // caller must retry.
    if (auto owner = r->replied(rc); owner && rc == ZOK) owner->on_watch_removed(r->extra.get());
    r->op->complete(zk_error(rc));
  };
  auto done = reinterpret_cast<void_completion_t*>(done_fn);
  submit(r, [&](void* d) {
    return shared ? zoo_aremove_watches(zh_, w->path.c_str(), type, node_watcher, w.get(), 0, done, d)
                  : zoo_aremove_all_watches(zh_, w->path.c_str(), type, 0, done, d);
  });
}

}  // namespace detail
}  // namespace zklock
