// Glue between the engine and the ZooKeeper C client: the callbacks handed to it, the
// conversions of its types, and the request object (`request<Signature, Extra>`) that travels
// through it as the `data` of one call. Private to src/.
#pragma once

#include "session_impl.hpp"

#include <zookeeper/zookeeper.h>

#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace zklock::detail {

// The session whose C call is on the stack; routes the C client's log lines (its log callback
// has no context argument). Everything runs on the session's executor, one call at a time.
extern constinit thread_local session_impl* current_session;

struct in_session {
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

// The C client's callbacks.
void log_callback(const char* message);
void global_watcher(zhandle_t*, int type, int state, const char*, void* ctx);  // session events
void node_watcher(zhandle_t*, int type, int state, const char* path, void* ctx);  // ctx: a watch_state
void void_completion(int rc, const void* data);  // data: a request<void(error_code)>

node_stat to_stat(const Stat* s);
int to_flags(create_mode m);

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

}  // namespace zklock::detail
