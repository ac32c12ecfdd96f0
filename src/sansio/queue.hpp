// The lock dir's queue, as every recipe sees it: which children are contenders (their names'
// markers, Curator's, kazoo's and ours), their order, and the grant rules (mutex, read, write,
// lease) that say who blocks whom. Also what zklock writes into its nodes' data, in one place.
// Sans-I/O: no Asio, no ZooKeeper calls.
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

struct queued_node {
  std::string name;
  std::int64_t sequence;
  lock_kind kind = lock_kind::exclusive;
};
/// The contenders among `children`, in queue order (sequence, then name).
std::vector<queued_node> queue_order(const std::vector<std::string>& children);

/// The grant rule: which contenders ahead of q[mine] block it (all of them for exclusive and
/// write; the exclusive and write ones for read; for a lease, all of them once `max_leases`
/// are ahead). Returns the index of the nearest blocker (the one to watch) and how many block
/// it; nullopt when none does (q[mine] holds the lock, or a lease).
struct blockers {
  std::size_t nearest;
  std::size_t count;
};
std::optional<blockers> find_blockers(const std::vector<queued_node>& q, std::size_t mine, lock_kind kind,
                                      int max_leases = 1) noexcept;
/// Every contender ahead of q[mine] that blocks it by the grant rule (indexes into `q`, in queue
/// order: the nearest is last); empty when none does. For a lease: every lease ahead once
/// `max_leases` are ahead.
std::vector<std::size_t> all_blockers(const std::vector<queued_node>& q, std::size_t mine, lock_kind kind,
                                      int max_leases = 1);
/// The contenders of `q` that hold now by the grant rule (each by its own kind), in queue
/// order: the head for exclusive, write and candidate nodes, the reads ahead of the first
/// exclusive or write node, the first `max_leases` leases. What a revocation asks.
std::vector<std::size_t> current_holders(const std::vector<queued_node>& q, int max_leases = 1);

/// Data of a zklock mutex contender's node when created. No data write ever grants the lock:
/// the watch event carries only its type, so a data change on a predecessor cannot tell a
/// release from a foreign write (Curator's Revoker writes "__REVOKE__" into the holder's node;
/// an operator may `set` anything): a waiter that sees one lists the dir again. "zklock/3"
/// because zklock 2 waiters took a data change on a "zklock/2" predecessor as its release:
/// they treat a "zklock/3" node like Curator's (a data change makes them read it again).
inline constexpr std::string_view contender_marker = "zklock/3";
/// What zklock 2 contenders were created with (still a zklock contender when read).
inline constexpr std::string_view contender_marker_v2 = "zklock/2";
/// What a zklock 2 holder wrote into its node in the transaction that released the lock,
/// multi(setData(node, release_marker), delete(node)). zklock holders now release with a plain
/// delete; behind an older holder, this write is just "changed": the waiter lists again.
inline constexpr std::string_view release_marker = "zklock/2:released";
/// Data of a shared lock's nodes (not contender_marker: zklock 2 waiters trusted a data change
/// on a contender_marker node, never on these).
inline constexpr std::string_view shared_marker = "zklock/2:rw";
/// What a downgraded writer writes into its node: it holds the read side now. The write wakes
/// the zklock readers that watch the node; it proves nothing (any session may write any data
/// into the node): the proof is the writer's downgrade mark below. Writers still wait for it
/// (it stays where it is in the queue, so no writer gets in between). Curator and kazoo readers
/// keep waiting until it is deleted.
inline constexpr std::string_view downgraded_marker = "zklock/2:downgraded";

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
/// A writer downgraded when its mark's ephemeral owner is the writer node's (both from the
/// server's Stat: 0 for a node that is not there, or not ephemeral).
inline bool downgrade_proven(std::int64_t writer_owner, std::int64_t mark_owner) noexcept {
  return writer_owner != 0 && mark_owner == writer_owner;
}

/// A zklock node's data: its marker, then, after one space, the identity of its creator
/// ("zklock/3 web-1:4242": who holds or waits; session_options::identity). Without an
/// identity, the marker alone (as zklock wrote before identities). Older zklock waiters compare
/// the whole data with their markers: they take "zklock/3 web-1:4242" for a foreign node (as
/// Curator's, a data change makes them list again) and "zklock/2:downgraded web-1:4242" for a
/// writer still holding (they wait until it releases, as Curator readers do). Curator and
/// kazoo never read a lock node's data (kazoo's contenders() shows it as text).
struct node_data_parts {
  std::string_view marker;    ///< one of the markers above; empty for anything else
  std::string_view identity;  ///< after the marker; the whole data of a foreign node
};
inline node_data_parts parse_node_data(std::string_view data) noexcept {
  for (std::string_view m : {contender_marker, contender_marker_v2, shared_marker, downgraded_marker, release_marker}) {
    if (data == m) return {m, {}};
    if (data.size() > m.size() && data.starts_with(m) && data[m.size()] == ' ') return {m, data.substr(m.size() + 1)};
  }
  return {{}, data};
}
/// What a node is created with: `marker` (contender_marker for exclusive nodes, shared_marker
/// for the others, see lock_fsm::node_data), then the identity if any.
inline std::string make_node_data(std::string_view marker, std::string_view identity) {
  std::string d(marker);
  if (!identity.empty()) (d += ' ') += identity;
  return d;
}
inline std::string_view creation_marker(lock_kind kind) noexcept {
  return kind == lock_kind::exclusive ? contender_marker : shared_marker;
}

/// What the predecessor's data says about it.
enum class predecessor_data { other, zklock_contender, downgraded };
inline predecessor_data classify_predecessor(std::string_view data) noexcept {
  auto marker = parse_node_data(data).marker;
  if (marker == contender_marker || marker == contender_marker_v2) return predecessor_data::zklock_contender;
  if (marker == downgraded_marker) return predecessor_data::downgraded;
  return predecessor_data::other;
}

}  // namespace zklock::detail
