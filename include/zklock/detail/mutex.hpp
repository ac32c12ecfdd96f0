// What <zklock/mutex.hpp> needs from the library's internals: the lock dir (a lock path's
// queue and holds, only declared: src/lock/lock_dir.hpp) and the lock runner's entry points.
// The shared_mutex, semaphore, election and multi_lock headers build on them too.
#pragma once

#include <zklock/detail/acquire_params.hpp>
#include <zklock/detail/pending.hpp>
#include <zklock/detail/rebind.hpp>
#include <zklock/detail/session.hpp>
#include <zklock/export.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace zklock {
class lock_guard;
struct mutex_options;
}  // namespace zklock

namespace zklock::detail {

struct lock_dir;

using acquire_handler = asio::any_completion_handler<void(error_code, lock_guard)>;
using contenders_handler = asio::any_completion_handler<void(error_code, std::vector<contender>)>;
ZKLOCK_API std::shared_ptr<lock_dir> make_lock_dir(std::shared_ptr<session_impl> s, std::string path, int max_leases = 1);
ZKLOCK_API std::shared_ptr<lock_dir> make_lock_dir(std::shared_ptr<session_impl> s, std::string path, const mutex_options& o);
ZKLOCK_API const std::string& lock_dir_path(const lock_dir& d) noexcept;
/// mutex_options::lock_delay for a dir made without mutex_options (the other recipes' options).
ZKLOCK_API void set_lock_delay(const std::shared_ptr<lock_dir>& dir, std::chrono::milliseconds delay) noexcept;
ZKLOCK_API void start_acquire(const std::shared_ptr<lock_dir>& dir, acquire_handler h, acquire_params p);
ZKLOCK_API void list_contenders(const std::shared_ptr<lock_dir>& dir, contenders_handler h);

}  // namespace zklock::detail
