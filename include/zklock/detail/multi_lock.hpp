// What <zklock/multi_lock.hpp> needs from the library's internals: one lock of the set and the
// multi-lock runner's entry point.
#pragma once

#include <zklock/detail/lock_guard.hpp>
#include <zklock/detail/mutex.hpp>
#include <zklock/export.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace zklock {
class multi_guard;
}  // namespace zklock

namespace zklock::detail {

/// One lock of a multi_lock: a mutex path's lock dir, or a side of a shared_mutex path's.
struct multi_lock_item {
  std::shared_ptr<lock_dir> dir;
  lock_kind kind;
};
using multi_handler_t = asio::any_completion_handler<void(error_code, multi_guard)>;
/// `ex`: the session's executor (an empty set completes through it too, never inline).
ZKLOCK_API void start_multi(std::vector<multi_lock_item> items, multi_handler_t h, std::chrono::steady_clock::duration timeout,
                            asio::any_io_executor ex);

}  // namespace zklock::detail
