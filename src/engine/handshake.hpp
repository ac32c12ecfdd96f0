// Whether the answer to our connect request can be a ZooKeeper server's. The C client takes
// any 40 bytes for the handshake's reply: an HTTP server's "HTTP/1.1 400 Bad Request" is read
// as protocol version "/1.1", a session timeout of 0x20343030 ms (" 400": 6 days) and session
// id 0x2042616420526571 (" Bad Req"), and reported connected. Sans-I/O: numbers in, verdict out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace zklock::detail {

/// The longest session timeout a server may grant beyond the one asked for. A server grants
/// the one asked for clamped to [minSessionTimeout, maxSessionTimeout]: more than asked only
/// when its minimum is above it. A day is far above any sane minimum and far below what a
/// text answer reads as: four printable bytes are at least 0x20202020 ms (6.2 days).
inline constexpr std::chrono::milliseconds max_granted_beyond_asked = std::chrono::hours(24);

/// Why a handshake reply (the negotiated timeout and session id the C client read) cannot be
/// ZooKeeper's; nullopt when it can be. `asked`: the session timeout we asked for.
inline std::optional<std::string> implausible_handshake(std::chrono::milliseconds asked, std::int64_t granted_ms,
                                                        std::int64_t session_id) {
  if (session_id == 0) return "session id 0";
  if (granted_ms <= 0) return "a session timeout of " + std::to_string(granted_ms) + " ms";
  if (granted_ms > asked.count() && granted_ms > max_granted_beyond_asked.count())
    return "a session timeout of " + std::to_string(granted_ms) + " ms for " + std::to_string(asked.count()) +
           " ms asked";
  return std::nullopt;
}

}  // namespace zklock::detail
