// Whether the answer to our connect request can be a ZooKeeper server's. The C client takes
// any 41 bytes for the handshake's reply: an HTTP server's "HTTP/1.1 400 Bad Request" is read
// as protocol version "/1.1", a session timeout of 0x20343030 ms (" 400": 6 days) and session
// id 0x2042616420526571 (" Bad Req"), and reported connected. Sans-I/O: numbers in, verdict out.
#pragma once

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

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

/// The bytes of a ConnectResponse the C client reads: length (4), protocol version (4),
/// timeout (4), session id (8), password length (4), password (16), read-only flag (1).
inline constexpr std::size_t handshake_reply_size = 41;

/// Why the first bytes of the answer to our connect request (as many as arrived, up to
/// handshake_reply_size) cannot begin a ZooKeeper server's ConnectResponse; nullopt when they
/// can. Read before the C client reads them: it takes any 41 bytes for the reply, and on a
/// reconnect a reply it cannot match to the session ends the session. `resuming`: we asked to
/// resume a session (a server that expired it answers with a timeout and id of 0).
inline std::optional<std::string> implausible_handshake_bytes(std::chrono::milliseconds asked, std::string_view bytes,
                                                              bool resuming) {
  auto int32_at = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return static_cast<std::int32_t>(v);
  };
  auto quoted = [&] {  // what it answered, as text a reader can recognise ("HTTP/1.1 400 ...")
    std::string q;
    for (char c : bytes.substr(0, std::min<std::size_t>(bytes.size(), 24)))
      q += c >= 0x20 && c < 0x7f ? c : '.';
    return "answered \"" + q + "\"";
  };
  // A reply without the read-only flag (servers before 3.4) is 36 bytes long, with it 37.
  if (bytes.size() >= 4 && int32_at(0) != 36 && int32_at(0) != 37) return quoted();
  if (bytes.size() >= 8 && int32_at(4) != 0) return quoted() + ", protocol version " + std::to_string(int32_at(4));
  if (bytes.size() >= 20) {
    std::int64_t timeout = int32_at(8);
    std::int64_t id = (static_cast<std::int64_t>(static_cast<std::uint32_t>(int32_at(12))) << 32) |
                      static_cast<std::uint32_t>(int32_at(16));
    if (!(resuming && timeout == 0 && id == 0))  // the server's "expired"
      if (auto why = implausible_handshake(asked, timeout, id)) return why;
  }
  if (bytes.size() >= 24 && int32_at(20) != 16) return "a password of " + std::to_string(int32_at(20)) + " bytes";
  if (bytes.size() >= 41 && static_cast<unsigned char>(bytes[40]) > 1) return quoted();
  return std::nullopt;
}

}  // namespace zklock::detail
