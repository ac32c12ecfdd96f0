// The session's close: the C client's handle closed without ever waiting on the server.
//
// zookeeper_close (C client 3.8) on a connected handle queues the close request, then blocks:
// up to 3 s for its send queue to leave (poll POLLOUT), then up to 1.5 s for anything to read
// (poll POLLIN, wait_for_session_to_be_closed), under the C-client lock of the process (glue.hpp).
// Against a server that stopped answering, that stalled the loop and every other session. So a
// connected handle is closed on the loop, in steps (closing_handle):
//  1. a cheap request (exists "/") goes out, and its answer is awaited on a dup of the socket of
//     our own, left unread: the server answers, and reads what we send;
//  2. then zookeeper_close: its send finds room, its poll finds the unread answer at once; it
//     fails the handle's requests (ZCLOSING), frees the handle and closes its number of the
//     socket;
//  3. our dup keeps the connection open: the server's answer to the close request and the end of
//     the stream that follows it (the session ended, its ephemeral nodes deleted) are read on the
//     loop, and only then does async_close complete.
// A server that has not answered step 1 within close_answer_wait: the socket is shut down first,
// so that zookeeper_close sends nothing and waits for nothing; the server ends the session when it
// expires. All three steps take close_answer_wait at most. A handle that is not connected
// (connecting, expired, refused) is closed at once: zookeeper_close then neither sends nor waits.
#include "engine/glue.hpp"
#include "engine/session_impl.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <utility>

namespace zklock {

namespace detail {

namespace {

// The longest a close follows the server (steps 1-3 above).
constexpr std::chrono::milliseconds close_answer_wait{1000};
// Bytes waiting in the kernel's send queue above which zookeeper_close's send might have to
// wait for room: then the server is not reading, and the handle is closed as unanswered.
constexpr int send_queue_limit = 64 * 1024;

void ignore_stat(int, const Stat*, const void*) {}

}  // namespace

struct closing_handle : std::enable_shared_from_this<closing_handle> {
  std::shared_ptr<session_impl> s;  // its log, and what the C client's last callbacks reach
  zhandle_t* zh;
  asio::posix::stream_descriptor sd;  // our own number of the handle's socket
  asio::steady_timer deadline;
  // The watches the C client holds as the context of its watchers: alive until it let them go.
  std::vector<boost::intrusive_ptr<watch_state>> watches;
  std::vector<pending<void(error_code)>::ptr> waiters;  // async_close
  std::array<char, 1024> sink{};
  bool finished = false;

  closing_handle(std::shared_ptr<session_impl> session, zhandle_t* handle, int own_fd)
      : s(std::move(session)), zh(handle), sd(s->executor()), deadline(s->executor()) {
    error_code ec;
    sd.assign(own_fd, ec);
    if (ec) ::close(own_fd);
  }
  // Destroyed before its end (its io_context destroyed with the handlers that held it): the
  // handle closed without a wait; its I/O objects are left to their own destructors (the
  // io_context's services are shutting down: nothing may be started or closed on them).
  ~closing_handle() {
    close_unanswered();
    finished = true;
    for (auto& w : waiters) w->complete({});
  }
  closing_handle(const closing_handle&) = delete;
  closing_handle& operator=(const closing_handle&) = delete;

  void start() {
    deadline.expires_after(close_answer_wait);
    deadline.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->on_deadline();
    });
    if (!probe()) return on_deadline();
    sd.async_wait(asio::posix::descriptor_base::wait_read, [self = shared_from_this()](error_code ec) {
      if (!ec && self->zh) self->on_answered();
    });
  }

  // Step 1. The socket may be corked (a send_batch still open up the stack): the request leaves now.
  bool probe() {
    if (!sd.is_open()) return false;
    int off = 0;
    ::setsockopt(sd.native_handle(), IPPROTO_TCP, TCP_CORK, &off, sizeof off);
    in_session guard(s.get());
    return zoo_aexists(zh, "/", 0, ignore_stat, nullptr) == ZOK;
  }

  // Step 2.
  void on_answered() {
    int queued = 0;
    if (::ioctl(sd.native_handle(), SIOCOUTQ, &queued) == 0 && queued > send_queue_limit) return on_deadline();
    {
      in_session guard(s.get());
      zookeeper_close(std::exchange(zh, nullptr));
    }
    watches.clear();
    drain();
  }

  // Step 3: read (and drop) until the server ends the stream.
  void drain() {
    sd.async_read_some(asio::buffer(sink), [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->finish();  // the end of the stream, or the deadline's cancel
      self->drain();
    });
  }

  void on_deadline() {
    if (zh) {
      s->log(log_level::warn, "zklock: the ZooKeeper server did not answer within " +
                                  std::to_string(close_answer_wait.count()) +
                                  " ms while the session closed: closed without its answer (the server ends the "
                                  "session when it expires, and deletes its ephemeral nodes then)");
      close_unanswered();
    }
    finish();
  }

  // The socket shut down first: zookeeper_close's send fails at once, and it skips its wait.
  void close_unanswered() noexcept {
    if (!zh) return;
    if (sd.is_open()) ::shutdown(sd.native_handle(), SHUT_RDWR);
    {
      in_session guard(s.get());
      zookeeper_close(std::exchange(zh, nullptr));
    }
    watches.clear();
  }

  void finish() noexcept {
    if (finished) return;
    finished = true;
    deadline.cancel();
    error_code ignored;
    sd.close(ignored);
    auto done = std::move(waiters);
    waiters.clear();
    for (auto& w : done) w->complete({});
  }
};

std::shared_ptr<closing_handle> session_impl::close_handle(error_code reason) noexcept {
  if (!zh_) return nullptr;
  ++suspension_;  // a pending local expiry is this handle's
  expiry_timer_.cancel();
  zhandle_t* zh = std::exchange(zh_, nullptr);
  const int st = c_state(zh);
  const bool connected = st == ZOO_CONNECTED_STATE || st == ZOO_READONLY_STATE;
  // Followed on the loop (above) when connected and kept alive by someone (not from our
  // destructor); otherwise closed here, after a shutdown of the socket if connected.
  auto self = loop_gone_ ? nullptr : weak_from_this().lock();
  int own = -1;
  if (connected && self && sd_.is_open()) own = ::fcntl(sd_.native_handle(), F_DUPFD_CLOEXEC, 0);
  if (connected && own < 0 && sd_.is_open()) ::shutdown(sd_.native_handle(), SHUT_RDWR);
  // Stop watching the socket (our dup closes here) and the C client's timer.
  forget_descriptor();
  ++timer_generation_;
  timer_waiting_ = false;
  timer_.cancel();
  // Requests still waiting for room in the window were never sent: they end with the handle.
  fail_queued(reason);
  // The watches end now; the C client keeps their pointers until zookeeper_close.
  std::vector<boost::intrusive_ptr<watch_state>> watches;
  watches.reserve(watches_.size());
  for (watch_state* w : watches_) {
    w->registered = false;
    w->deliver(reason == errc::session_expired ? reason : error_code(errc::session_closed), {});
    watches.emplace_back(w, false);  // adopts the registry's reference
  }
  watches_.clear();
  removals_.clear();  // (their replies come with ZCLOSING; none can come later)
  if (own < 0) {
    in_session guard(this);
    // Not connected (nothing sent, nothing awaited), or its socket shut down above. The
    // handle's pending completions fail with ZCLOSING here; those only post their handlers.
    zookeeper_close(zh);
    return nullptr;
  }
  auto c = std::make_shared<closing_handle>(std::move(self), zh, own);
  c->watches = std::move(watches);
  closing_ = c;
  c->start();
  return c;
}

void session_impl::close(void_handler h) {
  // Not cancellable: it waits for nothing but the bounded close of the handle.
  auto op = pending<void(error_code)>::make(std::move(h), ex_, asio::cancellation_type::none);
  finish_connect(errc::session_closed);
  auto closing = close_handle(errc::session_closed);
  if (!closing) closing = closing_.lock();  // closed already, the handle still closing
  set_state(session_state::closed);
  if (closing && !closing->finished)
    closing->waiters.push_back(std::move(op));
  else
    op->complete({});
}

void session_impl::shutdown(bool loop_gone) noexcept {
  loop_gone_ = loop_gone_ || loop_gone;
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

// ---------------------------------------------------------------------------------------------
// the public header's entry points (detail/session_ops.hpp)

namespace session_ops {

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
    if (self) self->shutdown(/*loop_gone=*/true);
  }
};
}  // namespace

// The session object's destructor (and move assignment), on any thread. The engine's state
// belongs to its executor, where the session's own work may be running at this moment on
// another thread: the completion whose future the caller just saw ready, the unsubscribe of a
// guard the caller just dropped. So the shutdown runs there too: at once when the caller is on
// the executor (asio::dispatch), next there otherwise. A connected handle is then closed as
// async_close closes it, on the loop (the engine lives until that ends).
void shutdown(session_impl& s) noexcept { asio::dispatch(s.executor(), shutdown_handler(s.shared_from_this())); }
void close(session_impl& s, void_handler h) {
  on_executor(s.executor(), std::move(h), [self = s.shared_from_this()](auto h) mutable { self->close(std::move(h)); });
}

}  // namespace session_ops

}  // namespace detail
}  // namespace zklock
