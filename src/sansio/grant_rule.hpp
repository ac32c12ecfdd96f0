// The grant rule, one place for every recipe: the queue order of a lock dir's contenders, and
// who blocks whom (mutex and writer: everyone ahead; reader: the writers ahead; lease: all once
// max_leases are ahead), who holds now, and what proves a writer's downgrade. Sans-I/O.
#pragma once

#include "sansio/node_name.hpp"

#include <zklock/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zklock::detail {

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

/// A writer downgraded when its mark's ephemeral owner is the writer node's (both from the
/// server's Stat: 0 for a node that is not there, or not ephemeral).
inline bool downgrade_proven(std::int64_t writer_owner, std::int64_t mark_owner) noexcept {
  return writer_owner != 0 && mark_owner == writer_owner;
}

}  // namespace zklock::detail
