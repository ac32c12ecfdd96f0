#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zklock::detail {
/// A fresh random UUID, the id in our nodes' names ("_c_<id>-lock-"): how a create lost with
/// the connection is found again (protected creation).
std::string new_client_id();

/// "<hostname>:<pid>", the pid as the host sees it: inside a PID namespace of its own (the
/// command of `zklock exec`), "<hostname>:<outer-pid>/<inner-pid>" (the outer pid from the
/// NSpid line of /proc/self/status, whose /proc is the host's there).
std::string default_identity();

/// The environment variable in which `zklock exec` tells its command its own session
/// ("0x<hex session id>"): a session started under it records it as its parent.
inline constexpr const char* parent_session_variable = "ZKLOCK_SESSION";

/// What a session's lock nodes carry after their marker: `configured` (session_options::identity)
/// or default_identity(), followed by " parent=0x<hex>" when $ZKLOCK_SESSION names a session
/// (the process runs under `zklock exec`); an empty identity stays empty.
std::string node_identity(const std::optional<std::string>& configured);

/// The parent suffix of an identity (" parent=0x<hex>" at its end), split off: {identity, parent
/// session id (0: none)}.
struct identity_parts {
  std::string_view identity;
  std::int64_t parent = 0;
};
identity_parts split_parent(std::string_view identity) noexcept;
/// "0x<hex>" as a session id; 0 when it is not one.
std::int64_t parse_session_id(std::string_view text) noexcept;
}  // namespace zklock::detail
