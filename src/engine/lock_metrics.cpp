// Lock metrics, the session's half (see metrics.hpp): the registry and the meters. The public
// half (histograms, to_prometheus) is src/metrics.cpp.
#include "engine/lock_metrics.hpp"

#include "engine/session_impl.hpp"

#include <zklock/detail/session_ops.hpp>

#include <chrono>

namespace zklock::detail {

lock_metrics_registry::entry* lock_metrics_registry::find(const std::string& path, lock_kind kind,
                                                          std::size_t max_paths) {
  if (max_paths == 0) return nullptr;
  std::lock_guard<std::mutex> lk(mutex_);
  auto it = entries_.find({path, kind});
  if (it != entries_.end()) return it->second.get();
  const bool room = distinct_ < max_paths;
  std::pair<std::string, lock_kind> key{room ? path : std::string("(other)"), kind};
  auto& e = entries_[key];
  if (!e) {
    e = std::make_unique<entry>();
    e->m.path = key.first;
    e->m.kind = kind;
    if (room) ++distinct_;
  }
  return e.get();
}

void lock_metrics_registry::count(entry* e, const lock_event& ev) {
  if (!e) return;
  std::lock_guard<std::mutex> lk(mutex_);
  auto& m = e->m;
  switch (ev.type) {
    case lock_event_type::acquire_started: ++m.acquires_started; break;
    case lock_event_type::granted:
      ++m.acquires_granted;
      m.wait.record(ev.duration);
      break;
    case lock_event_type::timed_out: ++m.acquires_timed_out; break;
    case lock_event_type::cancelled: ++m.acquires_cancelled; break;
    case lock_event_type::busy: ++m.acquires_busy; break;
    case lock_event_type::failed: ++m.acquires_failed; break;
    case lock_event_type::released:
    case lock_event_type::lost:  // a hold's end: how long it held
      ++(ev.type == lock_event_type::released ? m.releases : m.losses);
      m.hold.record(ev.duration);
      break;
    case lock_event_type::handoff_remote: ++m.handoffs_remote; break;
    case lock_event_type::handoff_local: ++m.handoffs_local; break;
  }
}

lock_metrics_snapshot lock_metrics_registry::snapshot() const {
  lock_metrics_snapshot out;
  std::lock_guard<std::mutex> lk(mutex_);
  out.paths.reserve(entries_.size());
  for (const auto& [key, e] : entries_) out.paths.push_back(e->m);  // the map's order: path, kind
  return out;
}

namespace {
void notify(session_impl& s, lock_metrics_registry::entry* e, const lock_event& ev) {
  s.lock_metrics().count(e, ev);
  if (const auto& hook = s.options().lock_metrics.on_event) hook(ev);
}
}  // namespace

void hold_meter::end(lock_event_type t) noexcept {
  if (!active_) return;
  active_ = false;
  auto held = std::chrono::steady_clock::now() - granted_at_;
  const std::string_view path = e_ && path_.empty() ? std::string_view(e_->m.path) : std::string_view(path_);
  notify(*s_, e_, {t, path, kind_, std::chrono::duration_cast<std::chrono::nanoseconds>(held), {}});
}

acquire_meter acquire_meter::start(session_impl& s, const std::string& path, lock_kind kind,
                                   lock_metering metering) noexcept {
  acquire_meter p;
  p.s_ = &s;
  p.path_ = &path;
  p.kind_ = kind;
  p.metering_ = metering;
  p.e_ = s.lock_metrics().find(path, kind, s.options().lock_metrics.max_paths);
  p.started_at_ = std::chrono::steady_clock::now();
  p.active_ = true;
  if (metering == lock_metering::full) p.emit(lock_event_type::acquire_started, {}, {});
  return p;
}

void acquire_meter::emit(lock_event_type t, std::chrono::nanoseconds d, error_code ec) noexcept {
  notify(*s_, e_, {t, *path_, kind_, d, ec});
}

hold_meter acquire_meter::grant(bool local_handoff) noexcept {
  hold_meter h;
  if (!active_) return h;
  active_ = false;
  const auto now = std::chrono::steady_clock::now();
  if (metering_ == lock_metering::local_queue_node) {
    // The queue's node: only the lock reaching this process counts (its waiters count the rest).
    if (waited_) emit(lock_event_type::handoff_remote, {}, {});
    return h;
  }
  emit(lock_event_type::granted, std::chrono::duration_cast<std::chrono::nanoseconds>(now - started_at_), {});
  if (local_handoff) emit(lock_event_type::handoff_local, {}, {});
  else if (waited_) emit(lock_event_type::handoff_remote, {}, {});
  h.s_ = s_;
  h.e_ = e_;
  h.kind_ = kind_;
  h.granted_at_ = now;
  h.active_ = true;
  if (s_->options().lock_metrics.on_event) h.path_ = *path_;
  return h;
}

hold_meter acquire_meter::granted() noexcept { return grant(false); }

hold_meter acquire_meter::granted_locally(std::uint32_t generation) noexcept {
  waited_ = false;  // the node's acquire counted its own wait
  return grant(generation > 0);
}

void acquire_meter::failed(error_code ec) noexcept {
  if (!active_) return;
  active_ = false;
  if (metering_ != lock_metering::full) return;
  auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_at_);
  // The outcome follows the code the handler gets: "timeout" is errc::lock_timeout only (the
  // time ran out while connected: the lock was busy). A timed acquire whose time ran out while the session was
  // not connected gets errc::connection_unavailable and counts as "error": ZooKeeper could not be
  // asked, so an outage shows as errors, never as contention.
  auto type = ec == errc::lock_timeout                  ? lock_event_type::timed_out
              : ec == asio::error::operation_aborted    ? lock_event_type::cancelled
              : ec == errc::lock_busy                   ? lock_event_type::busy
                                                        : lock_event_type::failed;
  emit(type, waited, ec);
}

lock_metrics_snapshot session_ops::lock_metrics(const session_impl& s) { return s.lock_metrics().snapshot(); }

}  // namespace zklock::detail
