// The session's event loop: drives the single-threaded ZooKeeper C client from an Asio
// executor, and batches the requests it sends (send_batch).
//
// The loop: zookeeper_interest() tells which fd to watch, for what, and until when; we wait on
// that fd with a non-owning stream_descriptor and on a steady_timer, then call
// zookeeper_process() (process) and ask again (pump). The C client closes and reopens its socket
// inside those calls (often under the same fd number, which epoll has forgotten), so the
// descriptor is re-registered whenever the fd number or the socket's inode changes.
//
// What we register is a dup() of the C client's socket, a number of our own: epoll and Asio
// deregister by number (EPOLL_CTL_DEL on release or close), and by the time we learn that the
// C client closed its socket, its number may already be another socket's (another session's
// reconnect, a user's socket on the same io_context, another thread): deregistering that
// number would silence the other socket. Our dup is ours until we close it; it keeps the
// C client's closed socket open only until the next turn of the loop (forget_descriptor).
#include "engine/glue.hpp"
#include "engine/handshake.hpp"
#include "engine/session_impl.hpp"

#include <boost/asio/post.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace zklock::detail {

// ---------------------------------------------------------------------------------------------
// send_batch

// The C client sends each request as soon as it is queued, in two send() calls (length, then
// body), on a TCP_NODELAY socket: two segments per request, and two wake-ups of the server for
// each. A send_batch corks the socket (TCP_CORK) while its requests are queued, so they leave
// in one segment when it ends: a request, or a pipelined create and listing. (The kernel
// flushes a forgotten cork at 200 ms.)
session_impl::send_batch::send_batch(session_impl* s) : s_(s), opened_(false) {
  if (s->batch_fd_ >= 0 || s->registered_fd_ < 0 || !s->sd_.is_open() || !s->zh_ ||
      c_state(s->zh_) != ZOO_CONNECTED_STATE)
    return;
  int on = 1;
  int fd = s->sd_.native_handle();  // our number for the C client's socket
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on) != 0) return;
  s->batch_fd_ = fd;
  opened_ = true;
}

session_impl::send_batch::~send_batch() {
  if (!opened_) return;
  int fd = std::exchange(s_->batch_fd_, -1);
  // The C client may have dropped the socket while sending (then there is nothing to flush,
  // and we released our number).
  if (fd < 0 || !s_->sd_.is_open() || fd != s_->sd_.native_handle() || !s_->zh_ ||
      c_state(s_->zh_) != ZOO_CONNECTED_STATE)
    return;
  int off = 0;
  ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

// ---------------------------------------------------------------------------------------------
// a connection dropped inside a request call

// A zoo_a* call sends its request at once. When that send() fails (the peer has closed the
// connection: EPIPE, ECONNRESET), the C client (3.6.3 and later, ZOOKEEPER-4210's
// nonblocking_send) closes the socket and sets ZOO_NOTCONNECTED_STATE, but skips the cleanup
// it does for every other connection loss (handle_error): the completions of the requests
// already sent on that connection stay at the head of its queue of sent requests, unsent ones
// stay queued, and no session event is raised. Its next zookeeper_interest connects again, and
// the first reply there (to a request sent on the new connection) is compared with the oldest
// of those orphans: "unexpected server response: expected <the reply's xid>, but received <the
// orphan's>", and every request fails with ZRUNTIMEINCONSISTENCY. With no request to answer,
// the orphans stop its pings instead (it pings only with nothing outstanding) until the
// receive timeout drops the connection.
//
// The cure is the cleanup the C client skipped, which it does on any failure of its next
// connection: that socket is shut down as soon as the handshake request is on it (the
// associating state), before the reply to it can be read. The C client then reads the end of
// the stream, fails every request it holds with ZCONNECTIONLOSS, and connects again.
//
// The lost connection is also reported at once, here: the C client raises no session event
// for it, and its next connect may be refused (a killed server), which it cleans up without
// an event either (it only raises one when the connection it drops was established). Without
// this the session stayed connected, and its guards held, for the whole outage.
void session_impl::note_request_sent(int state_before) {
  if ((state_before == ZOO_CONNECTED_STATE || state_before == ZOO_READONLY_STATE) &&
      c_state(zh_) == ZOO_NOTCONNECTED_STATE && !dropped_in_send_) {
    dropped_in_send_ = true;
    log(log_level::warn,
        "zklock: the ZooKeeper connection failed while a request was sent; dropping the next connection at its "
        "handshake, so that the requests of the lost one fail with connection loss");
    forget_descriptor();  // the C client closed it: stop watching now, not at the next pump
    on_session_event(ZOO_CONNECTING_STATE);
  }
}

// Called after every C call that may clean up a connection (zookeeper_process, and
// zookeeper_interest in pump). The check after zookeeper_process cannot wait for pump's:
// when the C client cleans up inside zookeeper_process (a connect refused asynchronously), the
// zookeeper_interest in pump starts the next server's connection at once (no delay unless the
// refused server was the last of its list), and the cleanup's state 0 is gone: the healthy
// next connection would be shut down at its handshake, a reconnect cycle for nothing.
void session_impl::recover_dropped_in_send(int fd) {
  if (!dropped_in_send_ || !zh_) return;
  int st = c_state(zh_);
  if (st == 0 || st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE) {
    // The C client cleaned up after all (another failure, or the end): the lost connection's
    // requests failed there. The loss itself was reported when the flag was set.
    dropped_in_send_ = false;
  } else if (st == ZOO_ASSOCIATING_STATE && fd >= 0) {
    dropped_in_send_ = false;
    ::shutdown(fd, SHUT_RDWR);
    // The C client raised no session event for the lost connection (nonblocking_send skips
    // it), nor will it for this one (not connected yet): the engine is told here.
    on_session_event(ZOO_CONNECTING_STATE);
  }
}

// ---------------------------------------------------------------------------------------------
// an endpoint that is not ZooKeeper

// The C client takes any 41 bytes for the answer to its connect request (engine/handshake.hpp):
// on a first connect a text answer reads as a session, on a reconnect as another session's
// id, and the C client then ends the session as expired, although it lives on the servers of
// the same connect string. So the answer is peeked at before the C client reads it: one that
// cannot be ZooKeeper's is thrown away and the connection shut down, which the C client takes
// for a connection loss (it moves on to the next server), and the endpoint counts as one
// unreachable server (on_not_zookeeper).
void session_impl::check_handshake_answer() {
  if (!zh_ || c_state(zh_) != ZOO_ASSOCIATING_STATE || !sd_.is_open() || handshake_checked_ == fd_generation_)
    return;
  int fd = sd_.native_handle();  // our dup of the C client's socket
  char answer[handshake_reply_size];
  ssize_t n = ::recv(fd, answer, sizeof answer, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return;  // nothing yet, or the end: the C client's to see
  auto why = implausible_handshake_bytes(opts_->session_timeout, {answer, static_cast<std::size_t>(n)},
                                         session_id() != 0);
  if (!why) {
    // Judged once per connection: the C client may now read part of it, and a later peek
    // would start in the middle.
    handshake_checked_ = fd_generation_;
    return;
  }
  std::string server = c_current_server(zh_);
  char rest[4096];
  for (int i = 0; i < 16 && ::recv(fd, rest, sizeof rest, MSG_DONTWAIT) > 0; ++i) {
  }
  ::shutdown(fd, SHUT_RDWR);
  on_not_zookeeper(server.empty() ? "?" : server, *why);
}

// ---------------------------------------------------------------------------------------------
// every endpoint in turn

// The C client (3.8) moves one endpoint on when a connection fails (handle_error) and one more
// when its next zookeeper_interest chooses the server (zoo_cycle_next_server): two per failed
// connection, so of an even number of endpoints it only ever tries half (of two, the same one
// again and again; a live session whose server was the other expired). After each failure
// the C client is put back on the endpoint that failed, by moving it on around its list
// (zoo_cycle_next_server, which wraps), so that its own next move takes the one after it:
// every endpoint is tried in turn, and the C client's pause after the last one of its list
// comes once per round. Moving on until the current server is the failed one needs no
// knowledge of the list's order, and stops after one full round when that endpoint has left
// the list (update_server_list) or the C client is choosing among a new list's servers.

// Once per socket (the C client's server is the one it connects to while its socket is open).
void session_impl::note_attempt() {
  if (!zh_ || registered_fd_ < 0 || attempt_generation_ == fd_generation_ || c_state(zh_) == 0) return;
  attempt_generation_ = fd_generation_;
  attempt_server_ = c_current_server(zh_);
}

void session_impl::next_endpoint_in_turn() {
  if (attempt_server_.empty() || !zh_ || c_state(zh_) != 0) return;
  std::string failed = std::exchange(attempt_server_, std::string{});
  std::size_t count = 1 + std::count(c_hosts_.begin(), c_hosts_.end(), ',');
  in_session guard(this);
  for (std::size_t i = 0; i < count; ++i) {
    if (failed == c_current_server(zh_)) return;
    zoo_cycle_next_server(zh_);
  }
}

// ---------------------------------------------------------------------------------------------
// the loop

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
  if (events & ZOOKEEPER_READ) {
    check_handshake_answer();
    if (!zh_) return;  // no endpoint of the connect string is ZooKeeper: the connect failed
  }
  {
    in_session guard(this);
    zookeeper_process(zh_, events);
  }
  recover_dropped_in_send(-1);  // before pump: see recover_dropped_in_send
  if (!zh_) return;
  next_endpoint_in_turn();  // both before pump's zookeeper_interest chooses the next server
  update_server_list();
  pump();
}

void session_impl::pump() {
  if (!zh_) return;
  send_queued();  // the window has room again (on_answered scheduled this)
  if (!zh_) return;
  int fd = -1, interest = 0;
  timeval tv{};
  int rc;
  {
    in_session guard(this);
    rc = zookeeper_interest(zh_, &fd, &interest, &tv);
  }
  if (!zh_) return;  // a callback closed it
  recover_dropped_in_send(rc == ZOK ? fd : -1);
  if (!zh_) return;  // a state listener closed it
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
  note_attempt();
}

void session_impl::update_descriptor(int fd) {
  // While the client stays connected on the same fd number it is the same socket: reopening
  // one passes through the connecting state, seen by at least one turn of the loop. Otherwise
  // compare the socket's inode, since a new socket often gets the old number.
  bool connected = zh_ && c_state(zh_) == ZOO_CONNECTED_STATE;
  bool same_socket_certain = connected && connected_at_last_check_ && fd == registered_fd_;
  connected_at_last_check_ = connected;
  if (same_socket_certain) return;
  unsigned long ino = 0;
  if (fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) ino = st.st_ino;
  }
  if (fd == registered_fd_ && ino == registered_ino_) return;
  // The socket changed (a reconnect), possibly under the same number: register the new one.
  forget_descriptor();
  connected_at_last_check_ = connected;
  if (fd < 0) return;
  // Our own number for it (see the top of this file). Should dup() fail (fd exhaustion), watch
  // the C client's number itself: blind would be worse.
  int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  error_code ec;
  sd_.assign(own >= 0 ? own : fd, ec);
  if (ec) {
    if (own >= 0) ::close(own);
    log(log_level::error, "zklock: cannot watch the ZooKeeper socket: " + ec.message());
    return;
  }
  descriptor_is_dup_ = own >= 0;
  registered_fd_ = fd;
  registered_ino_ = ino;
}

void session_impl::forget_descriptor() noexcept {
  if (sd_.is_open()) {
    error_code ignored;
    sd_.cancel(ignored);
    if (descriptor_is_dup_)
      sd_.close(ignored);  // our number: deregistered, then closed
    else
      (void)sd_.release();  // the C client's: it closes it
  }
  descriptor_is_dup_ = false;
  registered_fd_ = -1;
  registered_ino_ = 0;
  ++fd_generation_;
  read_waiting_ = write_waiting_ = false;
  connected_at_last_check_ = false;
}

void session_impl::arm(int fd, int interest, std::chrono::microseconds timeout) {
  update_descriptor(fd);
  auto gen = fd_generation_;
  // One wait per direction the C client is interested in (ZOOKEEPER_READ, ZOOKEEPER_WRITE).
  auto wait = [this, gen](int event, bool session_impl::*waiting) {
    if (this->*waiting) return;
    this->*waiting = true;
    using base = asio::posix::descriptor_base;
    auto type = event == ZOOKEEPER_READ ? base::wait_read : base::wait_write;
    sd_.async_wait(type, [self = shared_from_this(), gen, event, waiting](error_code ec) {
      if (gen != self->fd_generation_) return;
      (*self).*waiting = false;
      if (ec) return;
      self->process(event);
    });
  };
  if (registered_fd_ >= 0) {
    if (interest & ZOOKEEPER_READ) wait(ZOOKEEPER_READ, &session_impl::read_waiting_);
    if (interest & ZOOKEEPER_WRITE) wait(ZOOKEEPER_WRITE, &session_impl::write_waiting_);
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

}  // namespace zklock::detail
