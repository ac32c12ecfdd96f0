// What <zklock/revoke.hpp> needs from the library's internals: the revocation requester's
// entry points (src/lock/revocation.cpp).
#pragma once

#include <zklock/detail/session.hpp>
#include <zklock/export.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <memory>
#include <string>
#include <vector>

namespace zklock {
struct revoke_options;
struct revoke_result;
}  // namespace zklock

namespace zklock::detail {

using revoke_result_handler = asio::any_completion_handler<void(error_code, revoke_result)>;
using revoked_nodes_handler = asio::any_completion_handler<void(error_code, std::vector<std::string>)>;
ZKLOCK_API void request_revoke(const std::shared_ptr<session_impl>& s, std::string node_path, void_handler h);
ZKLOCK_API void revoke_holders(const std::shared_ptr<session_impl>& s, std::string lock_path, int max_leases,
                               revoked_nodes_handler h);
ZKLOCK_API void revoke_holders(const std::shared_ptr<session_impl>& s, std::string lock_path, revoke_options options,
                               revoke_result_handler h);

}  // namespace zklock::detail
