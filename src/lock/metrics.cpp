// Lock metrics: the registry, the probes, the Prometheus rendering (see metrics.hpp).
#include "lock/metrics.hpp"

#include "engine/session_impl.hpp"

#include <zklock/detail/session_ops.hpp>

#include <algorithm>
#include <charconv>

namespace zklock {

void latency_histogram::record(std::chrono::nanoseconds d) noexcept {
  if (d.count() < 0) d = std::chrono::nanoseconds(0);
  auto it = std::lower_bound(bounds.begin(), bounds.end(), d);  // first bound >= d
  ++buckets[static_cast<std::size_t>(it - bounds.begin())];
  ++count;
  sum += d;
}

std::uint64_t latency_histogram::cumulative(std::size_t i) const noexcept {
  std::uint64_t n = 0;
  for (std::size_t k = 0; k <= i && k < buckets.size(); ++k) n += buckets[k];
  return n;
}

const char* to_string(lock_event_type t) noexcept {
  switch (t) {
    case lock_event_type::acquire_started: return "acquire_started";
    case lock_event_type::granted: return "granted";
    case lock_event_type::timed_out: return "timed_out";
    case lock_event_type::cancelled: return "cancelled";
    case lock_event_type::busy: return "busy";
    case lock_event_type::failed: return "failed";
    case lock_event_type::released: return "released";
    case lock_event_type::lost: return "lost";
    case lock_event_type::handoff_remote: return "handoff_remote";
    case lock_event_type::handoff_local: return "handoff_local";
  }
  return "unknown";
}

std::string prometheus_escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {

// Shortest round-trip form: what Prometheus' own clients print ("0.005", "1e-05", "2.5").
std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

struct family {
  const char* name;
  const char* type;
  const char* help;
};

}  // namespace

std::string to_prometheus(const lock_metrics_snapshot& m, std::string_view prefix_view) {
  const std::string prefix(prefix_view);
  std::string out;
  auto header = [&](const family& f) {
    out += "# HELP " + prefix + f.name + " " + f.help + "\n";
    out += "# TYPE " + prefix + f.name + " " + f.type + "\n";
  };
  auto labels = [](const lock_path_metrics& p) {
    return "path=\"" + prometheus_escape(p.path) + "\",kind=\"" + to_string(p.kind) + "\"";
  };
  auto sample = [&](const char* name, const std::string& l, std::uint64_t v) {
    out += prefix + name + "{" + l + "} " + std::to_string(v) + "\n";
  };

  header({"_lock_acquires_started_total", "counter", "Lock acquires started."});
  for (const auto& p : m.paths) sample("_lock_acquires_started_total", labels(p), p.acquires_started);

  header({"_lock_acquires_total", "counter",
          "Lock acquires finished, by outcome: granted, timeout, cancelled, busy (a try-acquire refused), error."});
  for (const auto& p : m.paths) {
    auto l = labels(p);
    sample("_lock_acquires_total", l + ",outcome=\"granted\"", p.acquires_granted);
    sample("_lock_acquires_total", l + ",outcome=\"timeout\"", p.acquires_timed_out);
    sample("_lock_acquires_total", l + ",outcome=\"cancelled\"", p.acquires_cancelled);
    sample("_lock_acquires_total", l + ",outcome=\"busy\"", p.acquires_busy);
    sample("_lock_acquires_total", l + ",outcome=\"error\"", p.acquires_failed);
  }

  header({"_lock_releases_total", "counter", "Held locks released by their holder."});
  for (const auto& p : m.paths) sample("_lock_releases_total", labels(p), p.releases);

  header({"_lock_losses_total", "counter",
          "Held locks reported lost (session expired or closed, validity deadline passed, node deleted)."});
  for (const auto& p : m.paths) sample("_lock_losses_total", labels(p), p.losses);

  header({"_lock_handoffs_total", "counter",
          "Grants after waiting for another holder: via ZooKeeper (remote) or inside a local queue (local)."});
  for (const auto& p : m.paths) {
    auto l = labels(p);
    sample("_lock_handoffs_total", l + ",via=\"remote\"", p.handoffs_remote);
    sample("_lock_handoffs_total", l + ",via=\"local\"", p.handoffs_local);
  }

  header({"_lock_waiting", "gauge", "Lock acquires under way."});
  for (const auto& p : m.paths) sample("_lock_waiting", labels(p), p.waiting());

  header({"_lock_held", "gauge", "Locks held now."});
  for (const auto& p : m.paths) sample("_lock_held", labels(p), p.held());

  auto histogram = [&](const char* name, const char* help, latency_histogram lock_path_metrics::*which) {
    header({name, "histogram", help});
    const std::string base = prefix + name;
    for (const auto& p : m.paths) {
      const auto& h = p.*which;
      auto l = labels(p);
      for (std::size_t i = 0; i < latency_histogram::bounds.size(); ++i)
        out += base + "_bucket{" + l + ",le=\"" + number(seconds(latency_histogram::bounds[i])) + "\"} " +
               std::to_string(h.cumulative(i)) + "\n";
      out += base + "_bucket{" + l + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
      out += base + "_sum{" + l + "} " + number(seconds(h.sum)) + "\n";
      out += base + "_count{" + l + "} " + std::to_string(h.count) + "\n";
    }
  };
  histogram("_lock_wait_seconds", "Time from an acquire's start to its grant, in seconds.",
            &lock_path_metrics::wait);
  histogram("_lock_hold_seconds", "Time from a grant to its release or loss, in seconds.",
            &lock_path_metrics::hold);
  return out;
}

namespace detail {

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
      ++m.releases;
      m.hold.record(ev.duration);
      break;
    case lock_event_type::lost:
      ++m.losses;
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

void hold_probe::end(lock_event_type t) noexcept {
  if (!active_) return;
  active_ = false;
  auto held = std::chrono::steady_clock::now() - granted_at_;
  const std::string_view path = e_ && path_.empty() ? std::string_view(e_->m.path) : std::string_view(path_);
  notify(*s_, e_, {t, path, kind_, std::chrono::duration_cast<std::chrono::nanoseconds>(held), {}});
}

acquire_probe acquire_probe::start(session_impl& s, const std::string& path, lock_kind kind,
                                   lock_metering metering) noexcept {
  acquire_probe p;
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

void acquire_probe::emit(lock_event_type t, std::chrono::nanoseconds d, error_code ec) noexcept {
  notify(*s_, e_, {t, *path_, kind_, d, ec});
}

hold_probe acquire_probe::grant(bool local_handoff) noexcept {
  hold_probe h;
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

hold_probe acquire_probe::granted() noexcept { return grant(false); }

hold_probe acquire_probe::granted_locally(std::uint32_t generation) noexcept {
  waited_ = false;  // the node's acquire counted its own wait
  return grant(generation > 0);
}

void acquire_probe::failed(error_code ec) noexcept {
  if (!active_) return;
  active_ = false;
  if (metering_ != lock_metering::full) return;
  auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_at_);
  auto type = ec == errc::lock_timeout                  ? lock_event_type::timed_out
              : ec == asio::error::operation_aborted    ? lock_event_type::cancelled
              : ec == errc::lock_busy                   ? lock_event_type::busy
                                                        : lock_event_type::failed;
  emit(type, waited, ec);
}

lock_metrics_snapshot session_ops::lock_metrics(const session_impl& s) { return s.lock_metrics().snapshot(); }

}  // namespace detail
}  // namespace zklock
