// The session's state: its construction and accessors, its log, its listeners and state
// waiters, the C client's session events (connected, suspended, expired), the local expiry of a
// suspended session, and what the server has seen of us (the validity deadline of held locks).
#include "engine/client_id.hpp"
#include "engine/contact.hpp"
#include "engine/glue.hpp"
#include "engine/session_impl.hpp"

#include <boost/asio/post.hpp>

#include <unistd.h>

#include <algorithm>
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
  // Never the user's code under the C client's lock: the line waits for its release (glue.hpp).
  if (c_client_locked()) {
    deferred_log.push_back({this, false, level, std::string(message)});
    return;
  }
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
      // The server may have moved: its name is looked up again (off the loop; engine/connect.cpp).
      asio::post(ex_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->look_up_again();
      });
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
const session_options& options(const session_impl& s) noexcept { return s.options(); }
session_state state(const session_impl& s) noexcept { return s.state(); }
std::int64_t session_id(const session_impl& s) noexcept { return s.session_id(); }
std::chrono::milliseconds negotiated_timeout(const session_impl& s) noexcept { return s.negotiated_timeout(); }
session_credentials credentials(const session_impl& s) { return s.credentials(); }
session_stats stats(const session_impl& s) noexcept { return s.stats(); }
// Operations may start on any thread: each runs on the session's executor (on_executor).
void wait_state(session_impl& s, session_state known, state_handler h) {
  on_executor(s.executor(), std::move(h), [self = s.shared_from_this(), known](auto h) mutable {
    self->wait_state(known, std::move(h));
  });
}

}  // namespace session_ops

}  // namespace detail
}  // namespace zklock
