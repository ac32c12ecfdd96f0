// The state of one one-shot watch, shared by the engine and the zklock::watch handle. Light on
// purpose: the public headers see it, never the engine (src/engine/session_impl.hpp).
#pragma once

#include <zklock/detail/pending.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace zklock::detail {

class session_impl;

/// One registered one-shot watch. Shared by the C client's watcher context (kept alive by the
/// session's registry while the C client may call it) and the user's zklock::watch handle.
struct watch_state : boost::intrusive_ref_counter<watch_state, boost::thread_unsafe_counter> {
  std::weak_ptr<session_impl> owner;
  asio::any_io_executor ex;                       // the session's: completes waits once it is gone
  std::string path;
  bool child_watch = false;
  bool registered = false;                        // in the C client's watcher tables
  std::optional<std::pair<error_code, watch_event>> fired;
  pending<void(error_code, watch_event)>::ptr waiter;

  void deliver(error_code ec, watch_event ev);    // store or hand to the waiter
};

}  // namespace zklock::detail
