// A view of many lock directories at once, for tools that list them (`zklock locks`): what a
// directory is from its children's names, who holds and who waits by the grant rule, and the
// deadlocks across directories. Sans-I/O: the caller lists and reads (a listing per directory,
// one read per contender, as many in flight as it likes); these functions only decide.
#pragma once

#include <zklock/export.hpp>
#include <zklock/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace zklock {

/// What a lock directory is, from its contenders' names (lock_kind).
enum class lock_dir_kind {
  exclusive,   ///< a mutex: exclusive contenders only ("-lock-", "__lock__": zklock, Curator, kazoo)
  read_write,  ///< a read or write contender among them ("__READ__", "__WRIT__", "__rlock__")
  semaphore,   ///< leases ("-lease-"): a semaphore's PATH/leases, with its PATH/locks
  leader_election,  ///< an election: candidates ("-latch-": zklock::election, Curator LeaderLatch)
};
/// "mutex", "read/write", "semaphore", "election"; "?" for a value outside the enum.
ZKLOCK_API const char* to_string(lock_dir_kind k) noexcept;

/// The contenders among a listing's child names, in queue order, each with its name, sequence
/// and kind (from the name); data, stat and identity are empty until set_contender_data fills
/// them from a read of the node. Other children are left out. Empty: not a lock directory.
ZKLOCK_API std::vector<contender> lock_contenders(const std::vector<std::string>& children);

/// Fills `c`'s data, stat and identity from a read of its node, as mutex::async_contenders
/// does: the identity after a zklock marker, an election candidate's whole data, a foreign
/// node's whole data. Its kind stays the name's: a writer that downgraded is told by its
/// downgrade mark (set_downgrade_mark), never by what its data says.
ZKLOCK_API void set_contender_data(contender& c, data_result d);

/// The name of a writer's downgrade mark, a child of the lock directory beside it
/// ("zklock-downgraded-<sequence>"; zklock::shared_mutex's downgrade creates it, ephemeral);
/// empty for a contender that is no writer. Only the queue's head can have downgraded (a
/// writer holds with nobody ahead), so a view reads at most one mark: the head's, when the
/// listing has it.
ZKLOCK_API std::string downgrade_mark_of(const contender& writer);

/// `writer` (its data already set) becomes a read contender when `mark`, the stat of its
/// downgrade mark, proves the downgrade: the mark is owned by the writer node's session. A
/// mark of another session, or a "downgraded" marker someone wrote into the node's data,
/// leaves it a writer, as the grant rule does.
ZKLOCK_API void set_downgrade_mark(contender& writer, const node_stat& mark);

/// One lock directory, its queue split by the grant rule.
struct lock_dir_view {
  std::string path;                          ///< the lock directory (a semaphore's own path)
  lock_dir_kind kind = lock_dir_kind::exclusive;  ///< from its contenders' kinds
  std::vector<contender> holders;            ///< who holds now, in queue order
  std::vector<contender> waiters;            ///< who waits, in queue order (the oldest first)
};

/// The view of the lock directory `path` from its queue (lock_contenders, read): the holders by
/// the grant rule (the head for exclusive, write and candidate nodes, every read ahead of the
/// first exclusive or write node), the rest as waiters. Its kind: read_write when any contender
/// is a read or write one, election for candidates, semaphore for leases (see view_semaphore:
/// without the PATH/locks queue, every lease holds), else mutex.
ZKLOCK_API lock_dir_view view_lock_dir(std::string path, std::vector<contender> queue);

/// The view of a semaphore at `path` (zklock::semaphore, Curator's InterProcessSemaphoreV2):
/// `leases` is PATH/leases's queue, `locks` PATH/locks's. Nobody records the maximum number
/// of leases, but a lease node is only created behind the PATH/locks mutex, whose holder keeps
/// it until it has its lease: the newest lease node, when its session holds PATH/locks, is
/// still waiting; every other lease node holds. Every PATH/locks contender is a waiter (one
/// acquire under way each; the PATH/locks holder's age is when it queued).
ZKLOCK_API lock_dir_view view_semaphore(std::string path, std::vector<contender> leases,
                                        std::vector<contender> locks);

/// One session's wait in a deadlock: `session` waits in `path` (its node `node`) for
/// `blocker`, which holds there (`blocker_holds`) or is queued ahead of it.
struct deadlock_step {
  std::int64_t session = 0;  ///< the waiting session (its nodes' ephemeral owner)
  std::string path;          ///< where it waits
  std::string node;          ///< its waiting node there
  std::int64_t blocker = 0;  ///< the next session of the cycle, which it waits for there
  bool blocker_holds = true;  ///< false: blocker is queued ahead of it, not holding yet
  /// true: blocker is a session of a process that runs under `session` (`zklock exec`: its
  /// nodes' contender::parent): `session` cannot release before it ends. `path` and `node`
  /// are then the child's node, where the child is queued or holds.
  bool child = false;
};
/// A cycle of sessions, each waiting for the next, the last for the first.
struct deadlock {
  std::vector<deadlock_step> cycle;  ///< starts with the cycle's smallest session id
};

/// The deadlocks among `dirs`: sessions that hold (or are queued ahead) in one directory and
/// wait in another, round to themselves. A session is taken as one party: it does not release
/// what it holds while any of its waits is unfinished, and its waits behind its own nodes are
/// left out (tasks of one process that share a session wait for each other routinely). A
/// mutex, read/write or election waiter waits for every session that blocks it by the grant
/// rule; a semaphore waiter for any one lease holder (it is stuck only when every holder is).
/// A session waits for each of its children (contender::parent: processes that run under its
/// `zklock exec`), which links a parent's hold to its children's waits. Election candidates
/// other than the leader campaign: they wait for nobody.
/// One cycle per set of sessions that wait for each other; sessions that only wait behind a
/// deadlock are not reported. Nodes without an ephemeral owner (persistent) are left out.
ZKLOCK_API std::vector<deadlock> find_deadlocks(const std::vector<lock_dir_view>& dirs);

}  // namespace zklock
