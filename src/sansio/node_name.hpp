// Lock contenders' node names, as every recipe reads them: which children of a lock dir are
// contenders (their names' markers, Curator's, kazoo's and ours), their kind and sequence; and
// the names zklock gives the nodes beside them (a writer's downgrade mark). Sans-I/O.
#pragma once

#include <zklock/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// A lock contender's node name: "<anything><marker><10 digits>" with a marker above; the
/// sign covers the server's sequence overflow. nullopt for anything else (ignored).
struct parsed_name {
  std::int64_t sequence;
  lock_kind kind;
};
std::optional<parsed_name> parse_contender(std::string_view name) noexcept;
/// Just the sequence number (parse_contender(name)->sequence).
std::optional<std::int64_t> lock_sequence(std::string_view name) noexcept;

/// The downgrade mark of writer node `writer` (a name in the lock dir): "zklock-downgraded-"
/// and the writer's sequence. The downgrading holder creates it EPHEMERAL, in one transaction
/// with the downgraded_marker write, and deletes it before its node; its ephemeral owner, set
/// by the server, is the writer's session: no other session can make one that proves a
/// downgrade (downgrade_proven). No lock marker in the name: Curator and kazoo sort it after
/// every contender and never wait for it; zklock's queue ignores it (parse_contender).
/// Empty for a node that is no writer's.
inline std::string downgrade_mark_name(std::string_view writer) {
  auto at = writer.rfind("__WRIT__");
  if (at == std::string_view::npos) return {};
  return "zklock-downgraded-" + std::string(writer.substr(at + 8));
}
/// downgrade_mark_name of a writer node's full path, in the same dir; empty for a non-writer.
inline std::string downgrade_mark_path(std::string_view writer_path) {
  auto slash = writer_path.rfind('/');
  if (slash == std::string_view::npos) return {};
  auto name = downgrade_mark_name(writer_path.substr(slash + 1));
  return name.empty() ? name : std::string(writer_path.substr(0, slash + 1)) + name;
}
}  // namespace zklock::detail
