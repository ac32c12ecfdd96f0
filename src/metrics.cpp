// Lock metrics, the public half (include/zklock/metrics.hpp): the latency histogram, the event
// names and the Prometheus rendering. The session's registry and the meters the lock runners
// carry are in src/engine/lock_metrics.cpp.
#include <zklock/metrics.hpp>

#include <algorithm>
#include <charconv>
#include <type_traits>
#include <vector>

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

// One sample line per path: its own labels after the path's (`,outcome="granted"`, or none) and
// the value it reads, a counter or a gauge of lock_path_metrics.
struct series {
  const char* labels;
  std::uint64_t (*value)(const lock_path_metrics&);
};

template <auto member>
std::uint64_t read(const lock_path_metrics& p) {
  if constexpr (std::is_member_function_pointer_v<decltype(member)>)
    return (p.*member)();
  else
    return p.*member;
}

// A family: HELP and TYPE once, then per path its series, or its histogram's buckets, sum and count.
struct family {
  const char* name;
  const char* type;
  const char* help;
  std::vector<series> samples;
  latency_histogram lock_path_metrics::*histogram = nullptr;
};

const std::vector<family>& families() {
  using m = lock_path_metrics;
  static const std::vector<family> table{
      {"_lock_acquires_started_total", "counter", "Lock acquires started.", {{"", read<&m::acquires_started>}}},
      {"_lock_acquires_total",
       "counter",
       "Lock acquires finished, by outcome: granted, timeout, cancelled, busy (a try-acquire refused), error.",
       {{",outcome=\"granted\"", read<&m::acquires_granted>},
        {",outcome=\"timeout\"", read<&m::acquires_timed_out>},
        {",outcome=\"cancelled\"", read<&m::acquires_cancelled>},
        {",outcome=\"busy\"", read<&m::acquires_busy>},
        {",outcome=\"error\"", read<&m::acquires_failed>}}},
      {"_lock_releases_total", "counter", "Held locks released by their holder.", {{"", read<&m::releases>}}},
      {"_lock_losses_total",
       "counter",
       "Held locks reported lost (session expired or closed, validity deadline passed, node deleted).",
       {{"", read<&m::losses>}}},
      {"_lock_handoffs_total",
       "counter",
       "Grants after waiting for another holder: via ZooKeeper (remote) or inside a local queue (local).",
       {{",via=\"remote\"", read<&m::handoffs_remote>}, {",via=\"local\"", read<&m::handoffs_local>}}},
      {"_lock_waiting", "gauge", "Lock acquires under way.", {{"", read<&m::waiting>}}},
      {"_lock_held", "gauge", "Locks held now.", {{"", read<&m::held>}}},
      {"_lock_wait_seconds", "histogram", "Time from an acquire's start to its grant, in seconds.", {}, &m::wait},
      {"_lock_hold_seconds", "histogram", "Time from a grant to its release or loss, in seconds.", {}, &m::hold},
  };
  return table;
}

}  // namespace

std::string to_prometheus(const lock_metrics_snapshot& m, std::string_view prefix) {
  std::string out;
  for (const auto& f : families()) {
    const std::string base = std::string(prefix) + f.name;
    out += "# HELP " + base + " " + f.help + "\n";
    out += "# TYPE " + base + " " + f.type + "\n";
    for (const auto& p : m.paths) {
      const std::string l = "path=\"" + prometheus_escape(p.path) + "\",kind=\"" + to_string(p.kind) + "\"";
      for (const auto& s : f.samples) out += base + "{" + l + s.labels + "} " + std::to_string(s.value(p)) + "\n";
      if (!f.histogram) continue;
      const auto& h = p.*f.histogram;
      for (std::size_t i = 0; i < latency_histogram::bounds.size(); ++i)
        out += base + "_bucket{" + l + ",le=\"" + number(seconds(latency_histogram::bounds[i])) + "\"} " +
               std::to_string(h.cumulative(i)) + "\n";
      out += base + "_bucket{" + l + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
      out += base + "_sum{" + l + "} " + number(seconds(h.sum)) + "\n";
      out += base + "_count{" + l + "} " + std::to_string(h.count) + "\n";
    }
  }
  return out;
}

}  // namespace zklock
