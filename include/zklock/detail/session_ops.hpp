// What the public session header calls in the engine: non-template functions defined in src/,
// on a session_impl it only forward-declares. The engine itself (src/engine/session_impl.hpp, with
// the C client, the socket and the timers) stays out of the public headers.
#pragma once

#include <zklock/detail/watch_state.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock {
struct session_options;
struct session_credentials;
struct session_stats;
struct lock_metrics_snapshot;
}  // namespace zklock

namespace zklock::detail {

class session_impl;

using create_handler = asio::any_completion_handler<void(error_code, create_result)>;
using void_handler = asio::any_completion_handler<void(error_code)>;
using exists_handler = asio::any_completion_handler<void(error_code, std::optional<node_stat>)>;
using children_handler = asio::any_completion_handler<void(error_code, children_result)>;
using data_handler = asio::any_completion_handler<void(error_code, data_result)>;
using stat_handler = asio::any_completion_handler<void(error_code, node_stat)>;
using multi_handler = asio::any_completion_handler<void(error_code, std::vector<multi_result>)>;
using state_handler = asio::any_completion_handler<void(error_code, session_state)>;
using watch_handler = asio::any_completion_handler<void(error_code, watch_event)>;

// In a namespace of their own: inside zklock::detail, a `close` or `connect` of ours would
// hide the POSIX one from unqualified calls.
namespace session_ops {

// Lifecycle and state (src/engine/session_state.cpp, connect.cpp, close.cpp).
ZKLOCK_API std::shared_ptr<session_impl> make_session(asio::any_io_executor ex, session_options opts);
/// Closes the handle on the session's executor (the session object's destructor): at once when
/// called there, posted there otherwise; pending operations complete with session_closed.
ZKLOCK_API void shutdown(session_impl& s) noexcept;
ZKLOCK_API const session_options& options(const session_impl& s) noexcept;
ZKLOCK_API session_state state(const session_impl& s) noexcept;
ZKLOCK_API std::int64_t session_id(const session_impl& s) noexcept;
ZKLOCK_API std::chrono::milliseconds negotiated_timeout(const session_impl& s) noexcept;
ZKLOCK_API session_credentials credentials(const session_impl& s);
ZKLOCK_API session_stats stats(const session_impl& s) noexcept;
ZKLOCK_API lock_metrics_snapshot lock_metrics(const session_impl& s);  // src/engine/lock_metrics.cpp
ZKLOCK_API void connect(session_impl& s, void_handler h);
ZKLOCK_API void close(session_impl& s, void_handler h);
ZKLOCK_API void wait_state(session_impl& s, session_state known, state_handler h);

// Requests (src/session_requests.cpp). `watch` out-parameters are filled before the request
// is sent.
ZKLOCK_API void create(session_impl& s, std::string path, std::string data, create_mode mode, create_handler h);
ZKLOCK_API void remove(session_impl& s, std::string path, int version, void_handler h);
ZKLOCK_API void exists(session_impl& s, std::string path, boost::intrusive_ptr<watch_state>* watch, exists_handler h);
ZKLOCK_API void get_children(session_impl& s, std::string path, boost::intrusive_ptr<watch_state>* watch, children_handler h);
ZKLOCK_API void get_data(session_impl& s, std::string path, boost::intrusive_ptr<watch_state>* watch, data_handler h);
ZKLOCK_API void set_data(session_impl& s, std::string path, std::string data, int version, stat_handler h);
ZKLOCK_API void multi(session_impl& s, std::vector<multi_op> ops, multi_handler h);
ZKLOCK_API void remove_watch(session_impl& s, boost::intrusive_ptr<watch_state> w, void_handler h);

// Watches (src/session_watches.cpp).
/// Waits for `w` to fire; once its session is gone, completes with session_closed through the
/// session's executor (never inline).
ZKLOCK_API void wait_watch(boost::intrusive_ptr<watch_state> w, watch_handler h);

}  // namespace session_ops
}  // namespace zklock::detail
