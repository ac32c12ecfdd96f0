// The session's engine: owns the zhandle_t of the single-threaded C client and drives it from
// the executor. Private to the library (src/): users talk to zklock::session, whose header
// reaches the engine only through detail/session_ops.hpp. Its definitions, by concern:
//   session_state.cpp  the state, its listeners, session events, local expiry, validity
//   connect.cpp    connect: the hosts looked up off the loop, the handle opened, the handshake
//                  checked, the C client's server list kept
//   close.cpp      close: the handle closed on the loop, never waiting on the server
//   loop.cpp       the event loop (descriptor, timer, pump) and send_batch
//   requests.cpp   the requests, all through submit()
//   watches.cpp    the watch registry
//   glue.hpp       the C client's callbacks, type conversions, request<> (inline)
#pragma once

#include <zklock/detail/pending.hpp>
#include <zklock/detail/session_ops.hpp>
#include <zklock/detail/watch_state.hpp>
#include <zklock/error.hpp>
#include <zklock/session.hpp>
#include <zklock/types.hpp>

#include "engine/lock_metrics.hpp"
#include "engine/log_summary.hpp"
#include "engine/server_list.hpp"
#include "sansio/dir_view.hpp"
#include "sansio/request_window.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct _zhandle;  // the C client's handle

namespace zklock::detail {

struct closing_handle;  // engine/close.cpp
struct host_lookup;     // engine/connect.cpp

/// A listing's result as the engine's own askers get it: one copy of the names, shared by every
/// asker of a coalesced listing (a deep queue's listing answers hundreds of acquires at once;
/// a copy each would cost the session O(askers x N)). async_get_children's callers still get a
/// children_result of their own.
using shared_children = std::shared_ptr<const children_result>;
using shared_children_handler = asio::any_completion_handler<void(error_code, shared_children)>;

/// One asker of a listing: a caller of async_get_children (`copy`: its own children_result) or
/// the engine's own (`shared`).
struct listing_asker {
  pending<void(error_code, children_result)>::ptr copy{};
  pending<void(error_code, shared_children)>::ptr shared{};

  bool active() const noexcept { return copy ? copy->active() : shared->active(); }
  void fail(error_code ec) {
    if (copy) copy->fail(ec);
    else shared->complete(ec, std::make_shared<const children_result>());
  }
  /// `last`: no asker after this one (a copy may then take the names themselves).
  void complete(error_code ec, std::shared_ptr<children_result>& r, bool last) {
    if (shared) return shared->complete(ec, r);
    if (last && r.use_count() == 1) return copy->complete(ec, std::move(*r));
    copy->complete(ec, *r);
  }
};

class session_impl : public std::enable_shared_from_this<session_impl> {
 public:
  session_impl(asio::any_io_executor ex, session_options opts);
  ~session_impl();

  const asio::any_io_executor& executor() const noexcept { return ex_; }
  const session_options& options() const noexcept { return *opts_; }
  /// What our lock nodes carry after their marker: options().identity, or "<hostname>:<pid>".
  const std::string& identity() const noexcept { return identity_; }
  session_state state() const noexcept { return state_; }
  std::int64_t session_id() const noexcept;
  session_credentials credentials() const;
  /// The session timeout the server granted (zoo_recv_timeout); the requested one before the
  /// first connect.
  std::chrono::milliseconds negotiated_timeout() const noexcept;
  /// When the newest request that the server answered was queued (a reconnect counts from the
  /// moment the connection was seen lost): the server touched the session no earlier.
  std::chrono::steady_clock::time_point last_acknowledged() const noexcept { return last_ack_; }
  /// last_acknowledged() + negotiated_timeout() - the validity margin: the server cannot expire
  /// the session before then.
  std::chrono::steady_clock::time_point valid_until() const noexcept;
  /// Counters for benchmarks and tests.
  session_stats stats() const noexcept;
  /// The session's view of lock dir `dir` (sansio/dir_view.hpp), shared by its acquires there:
  /// it lives while one of them holds it, and goes with the last.
  std::shared_ptr<dir_view> view_of(const std::string& dir);
  /// The locks' metrics (src/engine/lock_metrics.hpp): thread-safe.
  lock_metrics_registry& lock_metrics() const noexcept { return lock_metrics_; }

  void connect(void_handler h);
  void close(void_handler h);
  void wait_state(session_state known, state_handler h);
  /// Closes the handle now (destructor path); pending operations complete with session_closed.
  /// `loop_gone`: called while its io_context is being destroyed (nothing may be started on
  /// it): the handle is closed at once, without the server's answer.
  void shutdown(bool loop_gone = false) noexcept;

  // Operations. `watch` out-parameters are filled synchronously before the request is sent.
  void create(std::string path, std::string data, create_mode mode, create_handler h);
  void remove(std::string path, int version, void_handler h);
  void exists(std::string path, boost::intrusive_ptr<watch_state>* watch, exists_handler h);
  void get_children(std::string path, boost::intrusive_ptr<watch_state>* watch, children_handler h);
  /// The same, for the engine's own askers: the result shared with every other asker.
  void get_children(std::string path, boost::intrusive_ptr<watch_state>* watch, shared_children_handler h);
  void get_data(std::string path, boost::intrusive_ptr<watch_state>* watch, data_handler h);
  void set_data(std::string path, std::string data, int version, stat_handler h);
  void multi(std::vector<multi_op> ops, multi_handler h);
  void remove_watch(boost::intrusive_ptr<watch_state> w, void_handler h);
  /// zoo_async: the server we talk to catches up with the leader before our next read.
  void sync(std::string path, void_handler h);
  void wait_watch(boost::intrusive_ptr<watch_state> w, watch_handler h);

  /// Listeners see every state transition, synchronously; they must not call back into the
  /// session (post instead). Returns an id for unsubscribe.
  std::uint64_t subscribe(std::function<void(session_state)> fn);
  void unsubscribe(std::uint64_t id) noexcept;

  /// Keeps `obj` alive while it owes the server a request its owner no longer waits for (a
  /// hold's delete after its guard is gone). The session holds it, not the object itself, so
  /// closing the session ends the cycle: shutdown() hands them to one last posted handler,
  /// which runs after the state handlers it posted (or is destroyed with the io_context).
  /// Each object once (the caller remembers it did).
  void keep_owed(std::shared_ptr<void> obj);
  void drop_owed(const void* obj) noexcept;

  // --- called from the C client's callbacks (internal) ---
  void on_session_event(int zstate);
  void on_watch_fired(watch_state* w, int type, int zstate, const char* path);
  void on_watch_removed(watch_state* w);
  /// A removal of `w` (remove_watch) was answered with `rc`.
  void on_removal_replied(watch_state* w, int rc);
  void on_abandoned_create(const std::string& path);
  void drop_watch(watch_state* w);
  /// Another watch of this session keeps the server's watch on `w`'s path (and type): one
  /// registered, not being removed itself.
  bool watched_by_another(const watch_state& w) const;
  void log(log_level level, std::string_view message);
  /// A line of the C client's log: summarised (see log_summary.hpp), then logged.
  void log_client(log_level level, std::string_view message);
  /// A reply arrived (rc: the C client's code) to a request queued at `queued`.
  void on_reply(int rc, std::chrono::steady_clock::time_point queued) noexcept;
  /// A request left the window (answered, or failed by the C client): the next may go.
  void on_answered();
  /// True while a local expiry closes the handle (the requests it fails fail as expired).
  bool expiring_locally() const noexcept { return expiring_locally_; }
  /// Requests queued during its lifetime leave together, in one segment, when it ends (the
  /// socket is corked meanwhile; see engine/loop.cpp). Batches do not nest: an inner one is
  /// a no-op.
  class send_batch {
   public:
    explicit send_batch(session_impl* s);
    ~send_batch();
    send_batch(const send_batch&) = delete;
    send_batch& operator=(const send_batch&) = delete;

   private:
    session_impl* s_;
    bool opened_;
  };

 private:
  /// Sends a request when the window has room, else queues it (request_window; `cls` and
  /// `path` say whether it is a listing that later ones may join). `call(data)` makes the C
  /// call with the reference it hands over; it owns what it needs (it may run later).
  template <class Request, class Call>
  void submit(const boost::intrusive_ptr<Request>& r, Call call, request_class cls = request_class::other,
              std::string path = {});
  /// Hands a request to the C client now: on a refused call the op fails at once. Counts it,
  /// flushes it with the loop.
  template <class Request, class Call>
  void send_now(const boost::intrusive_ptr<Request>& r, Call& call);
  /// Sends what waits in the window while it has room (from pump).
  void send_queued();
  /// The handle closed: what waits in the window fails (as a request made now would).
  void fail_queued(error_code reason);
  /// The reads (exists, get_children, get_data): one shape, with or without a watch. `call(w,
  /// data)` makes the C call, watched when `w` (the watch_state to register) is not null.
  template <class Signature, class Call>
  void read(asio::any_completion_handler<Signature> h, const std::string& path,
            boost::intrusive_ptr<watch_state>* watch, bool child_watch, Call&& call);
  /// get_children's one path, for either kind of asker.
  void list(std::string path, boost::intrusive_ptr<watch_state>* watch, listing_asker asker);
  boost::intrusive_ptr<watch_state> new_watch(const std::string& path, bool child);

  /// Looks the connect string's host names up on asio's resolver (never on the loop, never
  /// under the C client's lock); `done` runs on the executor with the lookup, unless stopped.
  void start_lookup(std::function<void(session_impl&, host_lookup&)> done);
  void stop_lookup() noexcept;
  void on_connect_lookup(host_lookup& l);
  /// After a connection loss, between the C client's connections: the names looked up again (at
  /// most once per lookup_interval, one lookup at a time).
  void look_up_again();
  /// Opens the C client's handle on `hosts` (numeric addresses only, numeric_host_list).
  void open_handle(const std::string& hosts);
  void finish_connect(error_code ec);
  error_code connect_timeout_error() const;
  bool reject_handshake();
  /// Before the C client reads the answer to its connect request: drops a connection whose
  /// answer cannot be ZooKeeper's, as an unreachable server (engine/loop.cpp).
  void check_handshake_answer();
  void on_not_zookeeper(const std::string& server, const std::string& why);
  /// Hands the C client the server list it should have (servers_ as last looked up, without the
  /// endpoints of not_zookeeper_), between connections (engine/server_list.hpp); starts a new
  /// lookup when one is due.
  void update_server_list();
  void next_endpoint_in_turn();
  void note_attempt();
  /// Detaches the handle and closes it: at once when not connected; otherwise on the loop
  /// (engine/close.cpp), returned then, its end awaited by async_close.
  std::shared_ptr<closing_handle> close_handle(error_code reason) noexcept;
  /// Suspended: the session expires here when no server answered within the negotiated
  /// timeout (session_state.cpp, "local expiry").
  void arm_local_expiry();
  void expire_locally();
  void set_state(session_state s);
  void pump();
  void schedule_pump();
  void process(int events);
  void update_descriptor(int fd);
  /// Stops watching the C client's socket (closes our dup of it).
  void forget_descriptor() noexcept;
  void arm(int fd, int interest, std::chrono::microseconds timeout);
  void note_request_sent(int state_before);
  void recover_dropped_in_send(int fd);

  asio::any_io_executor ex_;
  std::unique_ptr<session_options> opts_;
  std::string identity_;
  _zhandle* zh_ = nullptr;
  std::uint64_t handle_generation_ = 0;  // one per zookeeper_init
  session_state state_ = session_state::disconnected;
  bool ever_connected_ = false;  // of the current ZooKeeper session

  // The C client's socket, watched through a dup() of it (see engine/loop.cpp): our own
  // number, so that deregistering it never touches a socket that took the C client's number.
  asio::posix::stream_descriptor sd_;
  bool descriptor_is_dup_ = false;  // false only when dup() failed: sd_ then holds the C client's fd
  int registered_fd_ = -1;          // the C client's number for it
  unsigned long registered_ino_ = 0;
  int batch_fd_ = -1;  // our number of the socket held back by an open send_batch, -1 when none
  std::uint64_t fd_generation_ = 0;
  bool read_waiting_ = false, write_waiting_ = false, pump_scheduled_ = false;
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  bool timer_waiting_ = false;
  bool connected_at_last_check_ = false;
  // The C client closed its socket inside a request call and kept that connection's requests
  // (see note_request_sent): its next socket is shut down before it reads the handshake reply.
  bool dropped_in_send_ = false;
  // The socket (fd_generation_) whose handshake answer was found plausible, and the endpoints
  // of this handle that answered something else; every endpoint the connect string resolves
  // to ("HOST:PORT", as the C client names them), to know when none is left.
  std::uint64_t handshake_checked_ = 0;
  std::map<std::string, std::string> not_zookeeper_;  // endpoint -> what it answered
  std::vector<resolved_server> servers_;              // the connect string's, as last looked up
  std::set<std::string> endpoints_;                   // all their addresses
  std::string c_hosts_;        // the C client's server list (numeric_host_list), as last handed over
  bool list_stale_ = false;    // servers_ or not_zookeeper_ changed: update_server_list at the next chance
  bool has_names_ = false;     // the connect string has host names (not only addresses): looked up again
  std::shared_ptr<host_lookup> lookup_;  // the lookup in flight, if any
  std::chrono::steady_clock::time_point last_lookup_{};
  // The endpoint of the C client's connection in progress or established ("HOST:PORT"), until
  // it fails and next_endpoint_in_turn has put the C client back on it; empty otherwise.
  std::string attempt_server_;
  std::uint64_t attempt_generation_ = 0;  // the socket (fd_generation_) attempt_server_ was noted for

  asio::steady_timer connect_timer_;
  asio::steady_timer expiry_timer_;       // the local expiry of a suspended session
  std::uint64_t suspension_ = 0;          // one per suspension: a stale timer finds another
  bool expiring_locally_ = false;
  pending<void(error_code)>::ptr connect_op_;
  std::weak_ptr<closing_handle> closing_;  // the last handle being closed on the loop
  bool loop_gone_ = false;                 // see shutdown()
  std::vector<pending<void(error_code, session_state)>::ptr> state_waiters_;
  std::map<std::uint64_t, std::function<void(session_state)>> listeners_;
  std::uint64_t next_listener_ = 1;
  std::unordered_set<watch_state*> watches_;  // holds one reference each
  std::unordered_multiset<const watch_state*> removals_;  // watches whose removal is on its way
  std::vector<std::shared_ptr<void>> owed_;     // see keep_owed
  std::unordered_map<std::string, std::weak_ptr<dir_view>> views_;  // see view_of
  std::size_t views_swept_at_ = 16;  // views_ is swept of ended views when it grows past this
  log_summary log_summary_;

  // A request waiting in the window (see submit): how to send it, fail it, whether anyone still
  // waits for it, and (a listing) how another asker joins it.
  struct queued_request {
    std::function<void()> send;
    std::function<void(error_code)> fail;
    std::function<bool()> wanted;
    std::function<void(listing_asker)> join;
  };
  request_window<queued_request> window_{opts_->max_outstanding_requests};

  std::chrono::steady_clock::time_point last_ack_{}, suspended_at_{};
  std::uint64_t requests_sent_ = 0, watch_events_ = 0;
  std::uint64_t watch_events_by_type_[5] = {};
  mutable lock_metrics_registry lock_metrics_;
};

}  // namespace zklock::detail
