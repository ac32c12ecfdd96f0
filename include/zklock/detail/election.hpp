// What <zklock/election.hpp> needs from the library's internals: an election's state (only
// declared: src/recipes/election.cpp) and the election runner's entry points.
#pragma once

#include <zklock/detail/mutex.hpp>
#include <zklock/export.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace zklock {
class leadership;
struct leader_info;
}  // namespace zklock

namespace zklock::detail {

struct election_state;

using leadership_handler = asio::any_completion_handler<void(error_code, leadership)>;
using leader_handler = asio::any_completion_handler<void(error_code, std::optional<leader_info>)>;
ZKLOCK_API std::shared_ptr<election_state> make_election_state(std::shared_ptr<session_impl> s, std::string path,
                                                               std::string identity);
ZKLOCK_API const std::string& election_path(const election_state& e) noexcept;
ZKLOCK_API const std::string& election_identity(const election_state& e) noexcept;
ZKLOCK_API std::shared_ptr<lock_dir> election_dir(const std::shared_ptr<election_state>& e);
ZKLOCK_API void start_campaign(const std::shared_ptr<election_state>& e, leadership_handler h,
                               std::chrono::steady_clock::duration timeout);
ZKLOCK_API void try_campaign(const std::shared_ptr<election_state>& e, leadership_handler h);
ZKLOCK_API void query_leader(const std::shared_ptr<election_state>& e, leader_handler h);
ZKLOCK_API void observe_leader(const std::shared_ptr<election_state>& e, std::optional<leader_info> known,
                               leader_handler h);

}  // namespace zklock::detail
