// What <zklock/semaphore.hpp> needs from the library's internals: a semaphore's state (only
// declared: src/recipes/semaphore.cpp) and its runner's entry points.
#pragma once

#include <zklock/detail/mutex.hpp>
#include <zklock/export.hpp>

#include <memory>
#include <optional>
#include <string>

namespace zklock::detail {

struct semaphore_state;

ZKLOCK_API std::shared_ptr<semaphore_state> make_semaphore_state(std::shared_ptr<session_impl> s, std::string path,
                                                                 int max_leases, const std::optional<std::string>& identity);
ZKLOCK_API const std::string& semaphore_leases_path(const semaphore_state& s) noexcept;
ZKLOCK_API int semaphore_max_leases(const semaphore_state& s) noexcept;
ZKLOCK_API std::shared_ptr<lock_dir> semaphore_leases(const std::shared_ptr<semaphore_state>& s);
ZKLOCK_API void start_lease(const std::shared_ptr<semaphore_state>& st, acquire_handler h, acquire_params p);

}  // namespace zklock::detail
