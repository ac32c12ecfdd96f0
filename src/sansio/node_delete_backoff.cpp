#include "sansio/node_delete_backoff.hpp"

namespace zklock::detail {

std::optional<std::chrono::milliseconds> delete_backoff::after_refusal(const error_code& ec) noexcept {
  if ((ec != zk_errc::throttled_op && ec != zk_errc::system_error) || used_ >= max_backoffs) return std::nullopt;
  return std::chrono::milliseconds(100 << used_++);
}

std::string delete_refused_message(std::string_view node, const error_code& ec) {
  return "zklock: the server refused to delete lock node " + std::string(node) + " (" + ec.message() +
         "); it blocks the lock until the session ends";
}

}  // namespace zklock::detail
