// The lock metrics of one session (include/zklock/metrics.hpp): the registry the session owns,
// and the meters the lock runners carry. An acquire carries an acquire_meter from its start to
// its outcome; a grant hands a hold_meter to the hold, which ends it once (released or lost).
// Probes are used on the session's executor; the registry's counters are behind a mutex, so
// session::lock_metrics() may be called from any thread.
#pragma once

#include <zklock/metrics.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace zklock::detail {

class session_impl;

/// What a lock dir's acquires count (lock_dir::metering).
enum class lock_metering {
  full,
  /// The node a local queue's waiters share: its acquire is the queue's, not a user's; only a
  /// remote handoff (the node granted after a wait) is the lock passing to this process.
  local_queue_node,
};

class lock_metrics_registry {
 public:
  struct entry;

  /// The entry of (path, kind), created unless max_paths are counted already (then the kind's
  /// "(other)" entry); nullptr when max_paths is 0.
  entry* find(const std::string& path, lock_kind kind, std::size_t max_paths);
  /// Counts `ev` in `e` (may be null).
  void count(entry* e, const lock_event& ev);
  lock_metrics_snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, lock_kind>, std::unique_ptr<entry>> entries_;
  std::size_t distinct_ = 0;  // entries other than "(other)"
};

struct lock_metrics_registry::entry {
  lock_path_metrics m;
};

/// One held lock's end: released or lost, counted once.
class hold_meter {
 public:
  hold_meter() = default;  // counts nothing
  void released() noexcept { end(lock_event_type::released); }
  void lost() noexcept { end(lock_event_type::lost); }

 private:
  friend class acquire_meter;
  void end(lock_event_type t) noexcept;
  session_impl* s_ = nullptr;
  lock_metrics_registry::entry* e_ = nullptr;
  std::string path_;  // for the hook only (a hold may outlive its lock object): empty without one
  lock_kind kind_ = lock_kind::exclusive;
  std::chrono::steady_clock::time_point granted_at_{};
  bool active_ = false;
};

/// One acquire, from its start to its outcome (the first one counts).
class acquire_meter {
 public:
  acquire_meter() = default;  // counts nothing
  /// Counts the start of an acquire of `path` (which must outlive the meter: the lock dir's).
  static acquire_meter start(session_impl& s, const std::string& path, lock_kind kind,
                             lock_metering metering = lock_metering::full) noexcept;
  /// The acquire is blocked behind another contender (it sets a watch): its grant is a handoff.
  void waited() noexcept { waited_ = true; }
  /// Granted by ZooKeeper (the node is the head of its queue): the hold's meter.
  hold_meter granted() noexcept;
  /// Granted by a local queue: generation > 0 is a local handoff (generation 0 is the node's
  /// first holder: its remote handoff, if any, was counted by the node's acquire).
  hold_meter granted_locally(std::uint32_t generation) noexcept;
  /// Ended without a grant: timed out, cancelled, busy or failed by `ec`.
  void failed(error_code ec) noexcept;

 private:
  void emit(lock_event_type t, std::chrono::nanoseconds d, error_code ec) noexcept;
  hold_meter grant(bool local_handoff) noexcept;
  session_impl* s_ = nullptr;
  lock_metrics_registry::entry* e_ = nullptr;
  const std::string* path_ = nullptr;
  lock_kind kind_ = lock_kind::exclusive;
  lock_metering metering_ = lock_metering::full;
  std::chrono::steady_clock::time_point started_at_{};
  bool active_ = false, waited_ = false;
};

}  // namespace zklock::detail
