// Glue between the engine and the ZooKeeper C client: the callbacks handed to it, the
// conversions of its types, and the request object (`request<Signature, Extra>`) that travels
// through it as the `data` of one call. Private to src/. All inline: a translation unit of its
// own would cost a parse of the engine's Asio headers for a few small functions.
#pragma once

#include "engine/session_impl.hpp"

#include <zookeeper/zookeeper.h>

#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

// One lock of the process around every call into the C client. The single-threaded C client
// keeps state of the process, not of a handle, that its calls on any handle write: the buffers
// it formats a log line in (zk_log.c: the time and the line, the line handed to log_callback),
// the buffer it writes a server's address in (format_endpoint_info: the connect and close log
// lines, and zoo_get_current_server's answer), its request counter (get_xid), the read-only
// server it found (addr_rw_server) and the random state it picks servers with (srand48,
// drand48). Each session makes its calls on its own executor, one at a time; sessions on two
// threads (strands of one io_context) would make them at once. Held by the thread making the
// call, for the call only (and for copying what it returned), never across a wait of ours;
// taken again by the same thread at no cost (a C callback, inside zookeeper_process, may start
// a request). Uncontended, one lock and unlock per C call. Only around calls that cannot wait:
// no user code runs under it (the log lines made meanwhile are handed to the sessions' sinks
// once it is released, on the same thread), and no call that blocks is made (zookeeper_close
// only where it neither sends nor waits: engine/close.cpp), and no name is looked up (the C client
// parses its host list with getaddrinfo under it: it is handed numeric addresses only, the names
// looked up off the loop, engine/connect.cpp). zerror (a table of constant strings) needs none.
inline constinit std::mutex c_client_mutex;
inline constinit thread_local int c_client_depth = 0;

// A log line made while this thread held the lock: the session it is for, and whether the C
// client made it (summarised by log_client) or we did.
struct deferred_log_line {
  session_impl* session;
  bool from_client;
  log_level level;
  std::string text;
};
inline thread_local std::vector<deferred_log_line> deferred_log;

/// Hands the lines made under the lock to their sessions' sinks (the lock released).
inline void deliver_deferred_log() {
  while (!deferred_log.empty()) {
    auto lines = std::move(deferred_log);
    deferred_log.clear();
    for (auto& l : lines) {
      if (l.from_client)
        l.session->log_client(l.level, l.text);
      else
        l.session->log(l.level, l.text);
    }
  }
}

struct c_client_lock {
  c_client_lock() {
    if (c_client_depth++ == 0) c_client_mutex.lock();
  }
  ~c_client_lock() {
    if (--c_client_depth != 0) return;
    c_client_mutex.unlock();
    if (!deferred_log.empty()) deliver_deferred_log();
  }
  c_client_lock(const c_client_lock&) = delete;
  c_client_lock& operator=(const c_client_lock&) = delete;
};

/// Whether this thread holds the lock now (a log line then waits for its release).
inline bool c_client_locked() noexcept { return c_client_depth > 0; }

// The C client's accessors, each under the lock.
inline int c_state(zhandle_t* zh) {
  c_client_lock lock;
  return zoo_state(zh);
}
inline int c_recv_timeout(zhandle_t* zh) {
  c_client_lock lock;
  return zoo_recv_timeout(zh);
}
inline clientid_t c_client_id(zhandle_t* zh) {
  c_client_lock lock;
  const clientid_t* id = zoo_client_id(zh);
  return id ? *id : clientid_t{};
}
// The server the handle connects or is connected to ("127.0.0.1:2181"), empty if none: copied
// out of the C client's buffer of the process while the lock is held.
inline std::string c_current_server(zhandle_t* zh) {
  c_client_lock lock;
  const char* server = zoo_get_current_server(zh);
  return server ? server : "";
}

// The session whose C call is on the stack; routes the C client's log lines (its log callback
// has no context argument). Everything runs on the session's executor, one call at a time, and
// under the C client's lock; the session outlives the guard, and so the lock's release, where
// its lines are delivered.
inline constinit thread_local session_impl* current_session = nullptr;

struct in_session {
  c_client_lock lock;
  session_impl* prev;
  explicit in_session(session_impl* s) : prev(current_session) { current_session = s; }
  ~in_session() { current_session = prev; }
  in_session(const in_session&) = delete;
  in_session& operator=(const in_session&) = delete;
};

// Around a request: the C client's log goes to this session, and what it sends leaves in one
// segment (a send_batch).
struct request_scope {
  session_impl::send_batch batch;
  in_session guard;
  explicit request_scope(session_impl* s) : batch(s), guard(s) {}
};

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
    s->on_answered();
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

// The C client's callbacks and conversions.

inline void log_callback(const char* message) {
  std::string_view m(message);
  log_level level = log_level::info;
  if (m.find("ZOO_ERROR@") != std::string_view::npos) level = log_level::error;
  else if (m.find("ZOO_WARN@") != std::string_view::npos) level = log_level::warn;
  else if (m.find("ZOO_DEBUG@") != std::string_view::npos) level = log_level::debug;
  if (current_session)
    deferred_log.push_back({current_session, true, level, std::string(m)});  // (under the lock)
  else if (level <= log_level::warn)
    std::fprintf(stderr, "%s\n", message);
}

inline node_stat to_stat(const Stat* s) {
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

inline int to_flags(create_mode m) {
  switch (m) {
    case create_mode::persistent: return ZOO_PERSISTENT;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case create_mode::container: return ZOO_CONTAINER;
  }
  return ZOO_PERSISTENT;
}

// Session events (ctx: the session).
inline void global_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) static_cast<session_impl*>(ctx)->on_session_event(state);
}

// Watch events (ctx: the watch_state).
inline void node_watcher(zhandle_t*, int type, int state, const char* path, void* ctx) {
  auto* w = static_cast<watch_state*>(ctx);
  if (auto owner = w->owner.lock()) owner->on_watch_fired(w, type, state, path);
}

// A reply's code as the operation's error. The requests a local expiry ends (the C client
// fails them with ZCLOSING as its handle closes) fail as a server's expiry fails them.
inline error_code reply_error(int rc) noexcept {
  if (rc == ZCLOSING && current_session && current_session->expiring_locally()) return zk_errc::session_expired;
  return zk_error(rc);
}

// Replies that carry only a code (data: a request<void(error_code)>).
inline void void_completion(int rc, const void* data) {
  auto r = adopt<request<void(error_code)>>(data);
  r->replied(rc);
  r->op->complete(reply_error(rc));
}

}  // namespace zklock::detail
