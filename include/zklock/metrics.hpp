// Lock metrics: what the locks of one session did, per lock path, without a metrics library.
// Counters and latency histograms are read with session::lock_metrics(); every event can also be
// passed to a hook (lock_metrics_options::on_event); to_prometheus() renders a snapshot in the
// Prometheus text exposition format.
#pragma once

#include <zklock/error.hpp>
#include <zklock/export.hpp>
#include <zklock/types.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

/// Durations in fixed log-scale buckets (1, 2.5, 5 per decade from 10 us to 1000 s, then +Inf),
/// as a Prometheus histogram keeps them.
struct latency_histogram {
  /// Upper bounds of the finite buckets, inclusive (Prometheus' `le`).
  static constexpr std::array<std::chrono::nanoseconds, 25> bounds{
      std::chrono::nanoseconds(10'000),          std::chrono::nanoseconds(25'000),
      std::chrono::nanoseconds(50'000),          std::chrono::nanoseconds(100'000),
      std::chrono::nanoseconds(250'000),         std::chrono::nanoseconds(500'000),
      std::chrono::nanoseconds(1'000'000),       std::chrono::nanoseconds(2'500'000),
      std::chrono::nanoseconds(5'000'000),       std::chrono::nanoseconds(10'000'000),
      std::chrono::nanoseconds(25'000'000),      std::chrono::nanoseconds(50'000'000),
      std::chrono::nanoseconds(100'000'000),     std::chrono::nanoseconds(250'000'000),
      std::chrono::nanoseconds(500'000'000),     std::chrono::nanoseconds(1'000'000'000),
      std::chrono::nanoseconds(2'500'000'000),   std::chrono::nanoseconds(5'000'000'000),
      std::chrono::nanoseconds(10'000'000'000),  std::chrono::nanoseconds(25'000'000'000),
      std::chrono::nanoseconds(50'000'000'000),  std::chrono::nanoseconds(100'000'000'000),
      std::chrono::nanoseconds(250'000'000'000), std::chrono::nanoseconds(500'000'000'000),
      std::chrono::nanoseconds(1'000'000'000'000)};
  /// Observations per bucket (not cumulative); the last one is +Inf (above every bound).
  std::array<std::uint64_t, bounds.size() + 1> buckets{};
  /// observations recorded
  std::uint64_t count = 0;
  /// their total (Prometheus' `_sum`)
  std::chrono::nanoseconds sum{0};

  /// Counts `d` in the first bucket whose bound is >= d (negative durations count as 0).
  ZKLOCK_API void record(std::chrono::nanoseconds d) noexcept;
  /// Observations <= bounds[i] (i == bounds.size(): all of them), as Prometheus' `_bucket`.
  ZKLOCK_API std::uint64_t cumulative(std::size_t i) const noexcept;
};

/// The counters of one lock path (and kind) of one session.
///
/// An acquire is counted once when it starts and once by its outcome: granted, timed_out
/// (errc::lock_timeout), cancelled (operation_aborted), busy (a try-acquire refused:
/// errc::lock_busy) or failed (any other error). The outcome follows the handler's code: a timed
/// acquire whose time ran out while the session was not connected completes with
/// errc::connection_unavailable and is failed, not timed_out (an outage is not contention). A
/// grant ends as released or lost (once; a lost hold released later counts as lost).
struct lock_path_metrics {
  std::string path;  ///< the lock dir; "(other)": paths beyond lock_metrics_options::max_paths
  /// the side or kind of lock these counters are for
  lock_kind kind = lock_kind::exclusive;
  /// acquires started
  std::uint64_t acquires_started = 0;
  /// acquires that ended granted
  std::uint64_t acquires_granted = 0;
  /// acquires that ended with errc::lock_timeout
  std::uint64_t acquires_timed_out = 0;
  /// acquires that ended cancelled (operation_aborted)
  std::uint64_t acquires_cancelled = 0;
  /// try-acquires refused with errc::lock_busy
  std::uint64_t acquires_busy = 0;
  /// acquires that ended with any other error
  std::uint64_t acquires_failed = 0;
  /// grants that ended released
  std::uint64_t releases = 0;
  /// grants that ended lost
  std::uint64_t losses = 0;
  /// Grants after waiting for another contender through ZooKeeper (a watch was set).
  std::uint64_t handoffs_remote = 0;
  /// Grants passed from one waiter of a local queue to the next, without ZooKeeper
  /// (mutex_options::local_queue).
  std::uint64_t handoffs_local = 0;
  latency_histogram wait;  ///< from the acquire's start to its grant (granted acquires only)
  latency_histogram hold;  ///< from the grant to the release or the loss

  /// Acquires started and not finished yet.
  std::uint64_t waiting() const noexcept {
    return acquires_started - acquires_granted - acquires_timed_out - acquires_cancelled - acquires_busy -
           acquires_failed;
  }
  /// Grants not yet released nor lost.
  std::uint64_t held() const noexcept { return acquires_granted - releases - losses; }
};

/// A copy of a session's lock metrics, sorted by path, then kind.
struct lock_metrics_snapshot {
  /// one entry per (path, kind)
  std::vector<lock_path_metrics> paths;
};

/// What happened to a lock (lock_metrics_options::on_event).
enum class lock_event_type {
  acquire_started,
  granted,         ///< `duration`: the wait
  timed_out,       ///< `duration`: the wait; `ec`: errc::lock_timeout
  cancelled,       ///< `duration`: the wait; `ec`: operation_aborted
  busy,            ///< a try-acquire found the lock taken; `ec`: errc::lock_busy
  failed,          ///< `duration`: the wait; `ec`: why
  released,        ///< `duration`: how long it was held
  lost,            ///< `duration`: how long it was held until reported lost
  handoff_remote,  ///< a grant after waiting for another contender through ZooKeeper
  handoff_local,   ///< a grant passed on inside a local queue, without ZooKeeper
};
/// The enumerator's name.
ZKLOCK_API const char* to_string(lock_event_type t) noexcept;

/// One lock event, as lock_metrics_options::on_event receives it.
struct lock_event {
  /// what happened
  lock_event_type type;
  std::string_view path;  ///< the lock dir (valid during the call only)
  /// the side or kind of lock
  lock_kind kind;
  /// the wait or the hold, for the event types whose comment names `duration`
  std::chrono::nanoseconds duration{0};
  /// the error, for the outcomes lock_event_type lists one for
  error_code ec;
};

/// session_options::lock_metrics.
struct lock_metrics_options {
  /// Distinct (path, kind) pairs counted one by one; events of further pairs are added up in
  /// one "(other)" entry per kind. Each pair is 68 Prometheus series (to_prometheus) and about
  /// 700 bytes plus the path: the default keeps a session's scrape to 1,360 series (1,700 with
  /// every kind's "(other)"). Raise it when a few more lock paths are worth their series.
  /// 0: count nothing (the hook is still called).
  std::size_t max_paths = 20;
  /// Called on the session's executor for every event, after it was counted. It must not block
  /// nor call into the session or a lock synchronously (post instead), as state listeners.
  std::function<void(const lock_event&)> on_event;
};

/// Renders `m` in the Prometheus text exposition format (version 0.0.4): families
/// `<prefix>_lock_acquires_started_total`, `<prefix>_lock_acquires_total{outcome=...}`,
/// `<prefix>_lock_releases_total`, `<prefix>_lock_losses_total`,
/// `<prefix>_lock_handoffs_total{via="remote"|"local"}`, gauges `<prefix>_lock_waiting` and
/// `<prefix>_lock_held`, histograms `<prefix>_lock_wait_seconds` and
/// `<prefix>_lock_hold_seconds`; each series labelled `path` and `kind` (label values escaped:
/// backslash, double quote, newline). Each family has its `# HELP` and `# TYPE` lines, also
/// when `m` is empty.
ZKLOCK_API std::string to_prometheus(const lock_metrics_snapshot& m, std::string_view prefix = "zklock");

/// A Prometheus label value, escaped (`\` -> `\\`, `"` -> `\"`, newline -> `\n`).
ZKLOCK_API std::string prometheus_escape(std::string_view label_value);

}  // namespace zklock
