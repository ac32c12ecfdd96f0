// Deleting our own lock node when the server refuses, for an acquire's cleanup and a hold's
// release alike. Refused for now (throttled_op: the server throttles; system_error: the C client
// failed locally) the node is still ours to delete: sent again after 100 ms, 200 ms, ... at most
// max_backoffs times. Refused for good (no_auth: the lock dir's ACL lacks DELETE), or the
// backoffs used up: the node blocks the lock until the session ends, and the runner says so
// (delete_refused_message), never silently.
#pragma once

#include <zklock/error.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace zklock::detail {

class delete_backoff {
 public:
  static constexpr int max_backoffs = 5;
  /// A delete refused with `ec` (neither done, nor no_node, nor lost with the connection or the
  /// session): how long to wait before sending it again, or nothing when it is refused for good.
  std::optional<std::chrono::milliseconds> after_refusal(const error_code& ec) noexcept;

 private:
  int used_ = 0;
};

/// The log line for a node the server refused to delete for good.
std::string delete_refused_message(std::string_view node, const error_code& ec);

}  // namespace zklock::detail
