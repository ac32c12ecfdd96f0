// What zklock writes into its lock nodes' data, in one place: the markers (which zklock wrote
// the node, and what for), the identity after them, and how a node's data is read. No data
// grants anything (the grant rule is in grant_rule.hpp): data only says who and what. Sans-I/O.
#pragma once

#include <zklock/types.hpp>

#include <string>
#include <string_view>

namespace zklock::detail {

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
/// for the others, see acquire_fsm::node_data), then the identity if any.
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
