// Lock metrics without a server: the histogram's buckets, the registry's bound, the Prometheus
// text exposition format (families, buckets, escaping).
#include "engine/lock_metrics.hpp"

#include <zklock/metrics.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace zklock;
using namespace std::chrono_literals;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The value of the one sample line `series` (name{labels}) in `text`; fails when absent.
std::string value_of(const std::string& text, const std::string& series) {
  for (const auto& l : lines_of(text))
    if (l.size() > series.size() && l.compare(0, series.size(), series) == 0 && l[series.size()] == ' ')
      return l.substr(series.size() + 1);
  FAIL("no sample " << series << " in:\n" << text);
  return {};
}

// A histogram that recorded each of `durations`, in order.
latency_histogram histogram_of(std::initializer_list<std::chrono::nanoseconds> durations) {
  latency_histogram h;
  for (auto d : durations) h.record(d);
  return h;
}
}  // namespace

TEST_CASE("latency histogram: bounds are inclusive and log-scale and +Inf catches the rest", "[unit][metrics]") {
  latency_histogram h;
  h.record(0ns);                  // first bucket (<= 10 us)
  h.record(10us);                 // still the first: le is inclusive
  h.record(10us + 1ns);           // second (<= 25 us)
  h.record(-5ms);                 // negative counts as 0
  h.record(1s);                   // the 1 s bucket
  h.record(std::chrono::hours(1));  // above 1000 s: +Inf
  CHECK(h.count == 6);
  CHECK(h.buckets[0] == 3);
  CHECK(h.buckets[1] == 1);
  CHECK(h.buckets[15] == 1);  // bounds[15] == 1 s
  CHECK(latency_histogram::bounds[15] == 1s);
  CHECK(h.buckets.back() == 1);
  CHECK(h.cumulative(0) == 3);
  CHECK(h.cumulative(14) == 4);
  CHECK(h.cumulative(15) == 5);
  CHECK(h.cumulative(latency_histogram::bounds.size()) == 6);
  CHECK(h.sum == 10us + 10us + 1ns + 1s + std::chrono::hours(1));
  // 1, 2.5, 5 per decade
  for (std::size_t i = 0; i + 3 < latency_histogram::bounds.size(); ++i)
    CHECK(latency_histogram::bounds[i + 3] == 10 * latency_histogram::bounds[i]);
}

TEST_CASE("metrics registry: per path and kind and bounded by max_paths with the rest in (other)", "[unit][metrics]") {
  detail::lock_metrics_registry r;
  auto* a = r.find("/a", lock_kind::exclusive, 2);
  auto* a_read = r.find("/a", lock_kind::read, 2);
  auto* b = r.find("/b", lock_kind::exclusive, 2);  // beyond 2 distinct pairs
  auto* c = r.find("/c", lock_kind::exclusive, 2);
  CHECK(a != a_read);
  CHECK(b == c);
  CHECK(r.find("/a", lock_kind::exclusive, 2) == a);  // known pairs stay counted one by one
  CHECK(r.find("/x", lock_kind::exclusive, 0) == nullptr);

  r.count(a, {lock_event_type::acquire_started, "/a", lock_kind::exclusive, 0ns, {}});
  r.count(a, {lock_event_type::granted, "/a", lock_kind::exclusive, 3ms, {}});
  r.count(a, {lock_event_type::handoff_remote, "/a", lock_kind::exclusive, 0ns, {}});
  r.count(a, {lock_event_type::acquire_started, "/a", lock_kind::exclusive, 0ns, {}});
  r.count(a, {lock_event_type::acquire_started, "/a", lock_kind::exclusive, 0ns, {}});
  r.count(a, {lock_event_type::timed_out, "/a", lock_kind::exclusive, 1s, errc::lock_timeout});
  r.count(b, {lock_event_type::acquire_started, "/b", lock_kind::exclusive, 0ns, {}});
  r.count(c, {lock_event_type::acquire_started, "/c", lock_kind::exclusive, 0ns, {}});
  r.count(nullptr, {lock_event_type::acquire_started, "/d", lock_kind::exclusive, 0ns, {}});  // ignored

  auto snap = r.snapshot();
  REQUIRE(snap.paths.size() == 3);
  // sorted by path, then kind: "(other)" sorts before "/"
  CHECK(snap.paths[0].path == "(other)");
  CHECK(snap.paths[0].acquires_started == 2);
  CHECK(snap.paths[1].path == "/a");
  CHECK(snap.paths[1].kind == lock_kind::exclusive);
  CHECK(snap.paths[1].acquires_started == 3);
  CHECK(snap.paths[1].acquires_granted == 1);
  CHECK(snap.paths[1].acquires_timed_out == 1);
  CHECK(snap.paths[1].handoffs_remote == 1);
  CHECK(snap.paths[1].waiting() == 1);
  CHECK(snap.paths[1].held() == 1);
  CHECK(snap.paths[1].wait.count == 1);
  CHECK(snap.paths[1].wait.sum == 3ms);
  CHECK(snap.paths[2].kind == lock_kind::read);
}

TEST_CASE("prometheus: escaping of label values", "[unit][metrics]") {
  CHECK(prometheus_escape("/locks/a") == "/locks/a");
  CHECK(prometheus_escape("a\"b") == "a\\\"b");
  CHECK(prometheus_escape("a\\b") == "a\\\\b");
  CHECK(prometheus_escape("a\nb") == "a\\nb");
  CHECK(prometheus_escape("\\\"\n") == "\\\\\\\"\\n");
}

TEST_CASE("prometheus: every family has HELP and TYPE also with no paths", "[unit][metrics]") {
  auto text = to_prometheus({});
  const std::map<std::string, std::string> families{
      {"zklock_lock_acquires_started_total", "counter"}, {"zklock_lock_acquires_total", "counter"},
      {"zklock_lock_releases_total", "counter"},         {"zklock_lock_losses_total", "counter"},
      {"zklock_lock_handoffs_total", "counter"},         {"zklock_lock_waiting", "gauge"},
      {"zklock_lock_held", "gauge"},                     {"zklock_lock_wait_seconds", "histogram"},
      {"zklock_lock_hold_seconds", "histogram"}};
  auto lines = lines_of(text);
  CHECK(lines.size() == 2 * families.size());
  for (const auto& [name, type] : families) {
    CHECK(text.find("# HELP " + name + " ") != std::string::npos);
    CHECK(text.find("# TYPE " + name + " " + type + "\n") != std::string::npos);
  }
  CHECK(to_prometheus({}, "app").find("# TYPE app_lock_held gauge\n") != std::string::npos);
}

TEST_CASE("metrics cardinality: 68 series per (path, kind), and the default max_paths keeps a session to 1,360",
          "[unit][metrics]") {
  // the figures the README and lock_metrics_options::max_paths state
  lock_metrics_snapshot s;
  lock_path_metrics p;
  p.path = "/locks/a";
  s.paths.push_back(p);
  std::size_t series = 0;
  for (const auto& l : lines_of(to_prometheus(s)))
    if (!l.empty() && l[0] != '#') ++series;
  CHECK(series == 68);
  CHECK(lock_metrics_options{}.max_paths == 20);
  CHECK(lock_metrics_options{}.max_paths * series == 1360);
  // with every kind spilled into its "(other)" entry as well
  constexpr std::size_t kinds = 5;  // exclusive, read, write, lease, candidate
  CHECK(std::string(to_string(static_cast<lock_kind>(kinds - 1))) == "candidate");
  CHECK((lock_metrics_options{}.max_paths + kinds) * series == 1700);
}

TEST_CASE("prometheus: samples and labels and histogram buckets of a snapshot", "[unit][metrics]") {
  lock_metrics_snapshot s;
  lock_path_metrics p{.path = "/locks/\"odd\"\\path", .kind = lock_kind::write, .acquires_started = 7,
                      .acquires_granted = 4, .acquires_timed_out = 1, .acquires_cancelled = 1, .acquires_failed = 0,
                      .releases = 2, .losses = 1, .handoffs_remote = 3, .handoffs_local = 0,
                      .wait = histogram_of({20us, 2ms, 2ms, 3s}), .hold = histogram_of({1500ms})};
  s.paths.push_back(p);
  auto text = to_prometheus(s);
  INFO(text);
  const std::string l = R"(path="/locks/\"odd\"\\path",kind="write")";
  CHECK(value_of(text, "zklock_lock_acquires_started_total{" + l + "}") == "7");
  CHECK(value_of(text, "zklock_lock_acquires_total{" + l + ",outcome=\"granted\"}") == "4");
  CHECK(value_of(text, "zklock_lock_acquires_total{" + l + ",outcome=\"timeout\"}") == "1");
  CHECK(value_of(text, "zklock_lock_acquires_total{" + l + ",outcome=\"cancelled\"}") == "1");
  CHECK(value_of(text, "zklock_lock_acquires_total{" + l + ",outcome=\"busy\"}") == "0");
  CHECK(value_of(text, "zklock_lock_acquires_total{" + l + ",outcome=\"error\"}") == "0");
  CHECK(value_of(text, "zklock_lock_releases_total{" + l + "}") == "2");
  CHECK(value_of(text, "zklock_lock_losses_total{" + l + "}") == "1");
  CHECK(value_of(text, "zklock_lock_handoffs_total{" + l + ",via=\"remote\"}") == "3");
  CHECK(value_of(text, "zklock_lock_handoffs_total{" + l + ",via=\"local\"}") == "0");
  CHECK(value_of(text, "zklock_lock_waiting{" + l + "}") == "1");
  CHECK(value_of(text, "zklock_lock_held{" + l + "}") == "1");
  // cumulative buckets, le in seconds
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"1e-05\"}") == "0");
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"2.5e-05\"}") == "1");
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"0.0025\"}") == "3");
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"2.5\"}") == "3");
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"5\"}") == "4");
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"1000\"}") == "4");
  CHECK(value_of(text, "zklock_lock_wait_seconds_bucket{" + l + ",le=\"+Inf\"}") == "4");
  CHECK(value_of(text, "zklock_lock_wait_seconds_count{" + l + "}") == "4");
  CHECK(std::stod(value_of(text, "zklock_lock_wait_seconds_sum{" + l + "}")) == Approx(3.00402));
  CHECK(value_of(text, "zklock_lock_hold_seconds_sum{" + l + "}") == "1.5");
  CHECK(value_of(text, "zklock_lock_hold_seconds_count{" + l + "}") == "1");

  // Every line is a comment or a well-formed sample: name{labels} value (the text format's grammar
  // for our label values: anything but an unescaped quote, backslash or newline)
  const std::regex sample(R"re([a-zA-Z_:][a-zA-Z0-9_:]*\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)+\} [-+0-9.eInf]+)re");
  int samples = 0;
  for (const auto& line : lines_of(text)) {
    if (line.rfind("# ", 0) == 0) continue;
    INFO(line);
    CHECK(std::regex_match(line, sample));
    ++samples;
  }
  // 1 + 5 + 1 + 1 + 2 + 1 + 1 counters and gauges, 2 histograms of 26 buckets + sum + count
  CHECK(samples == 12 + 2 * (26 + 2));
  // buckets never decrease
  std::uint64_t last = 0;
  for (const auto& line : lines_of(text))
    if (line.rfind("zklock_lock_wait_seconds_bucket", 0) == 0) {
      auto v = std::stoull(line.substr(line.rfind(' ') + 1));
      CHECK(v >= last);
      last = v;
    }
}

// The whole rendering of a populated snapshot, byte for byte: the order of the families (each
// HELP, TYPE, then one block of samples per path in the snapshot's order), which counter feeds
// which sample, the buckets' le values, the sums. Every counter differs from every other, so a
// sample fed by the wrong member fails.
TEST_CASE("prometheus: the full text of a snapshot with two paths", "[unit][metrics]") {
  lock_metrics_snapshot s;
  lock_path_metrics a{.path = "/locks/a", .kind = lock_kind::exclusive, .acquires_started = 40, .acquires_granted = 21,
                      .acquires_timed_out = 2, .acquires_cancelled = 1, .acquires_busy = 3, .acquires_failed = 9,
                      .releases = 5, .losses = 6, .handoffs_remote = 7, .handoffs_local = 8,
                      .wait = histogram_of({20us, 2ms, 3s}), .hold = histogram_of({1500ms, 40ms})};
  lock_path_metrics b{.path = "/locks/b\"q", .kind = lock_kind::read, .acquires_started = 13, .acquires_granted = 12,
                      .releases = 11, .handoffs_remote = 14,
                      .wait = histogram_of({700us}), .hold = histogram_of({std::chrono::hours(1)})};
  s.paths = {a, b};
  const std::string text = to_prometheus(s, "app");
  // what to_prometheus wrote at 5602438, before its families became a table
  const std::string expected = R"exp(# HELP app_lock_acquires_started_total Lock acquires started.
# TYPE app_lock_acquires_started_total counter
app_lock_acquires_started_total{path="/locks/a",kind="exclusive"} 40
app_lock_acquires_started_total{path="/locks/b\"q",kind="read"} 13
# HELP app_lock_acquires_total Lock acquires finished, by outcome: granted, timeout, cancelled, busy (a try-acquire refused), error.
# TYPE app_lock_acquires_total counter
app_lock_acquires_total{path="/locks/a",kind="exclusive",outcome="granted"} 21
app_lock_acquires_total{path="/locks/a",kind="exclusive",outcome="timeout"} 2
app_lock_acquires_total{path="/locks/a",kind="exclusive",outcome="cancelled"} 1
app_lock_acquires_total{path="/locks/a",kind="exclusive",outcome="busy"} 3
app_lock_acquires_total{path="/locks/a",kind="exclusive",outcome="error"} 9
app_lock_acquires_total{path="/locks/b\"q",kind="read",outcome="granted"} 12
app_lock_acquires_total{path="/locks/b\"q",kind="read",outcome="timeout"} 0
app_lock_acquires_total{path="/locks/b\"q",kind="read",outcome="cancelled"} 0
app_lock_acquires_total{path="/locks/b\"q",kind="read",outcome="busy"} 0
app_lock_acquires_total{path="/locks/b\"q",kind="read",outcome="error"} 0
# HELP app_lock_releases_total Held locks released by their holder.
# TYPE app_lock_releases_total counter
app_lock_releases_total{path="/locks/a",kind="exclusive"} 5
app_lock_releases_total{path="/locks/b\"q",kind="read"} 11
# HELP app_lock_losses_total Held locks reported lost (session expired or closed, validity deadline passed, node deleted).
# TYPE app_lock_losses_total counter
app_lock_losses_total{path="/locks/a",kind="exclusive"} 6
app_lock_losses_total{path="/locks/b\"q",kind="read"} 0
# HELP app_lock_handoffs_total Grants after waiting for another holder: via ZooKeeper (remote) or inside a local queue (local).
# TYPE app_lock_handoffs_total counter
app_lock_handoffs_total{path="/locks/a",kind="exclusive",via="remote"} 7
app_lock_handoffs_total{path="/locks/a",kind="exclusive",via="local"} 8
app_lock_handoffs_total{path="/locks/b\"q",kind="read",via="remote"} 14
app_lock_handoffs_total{path="/locks/b\"q",kind="read",via="local"} 0
# HELP app_lock_waiting Lock acquires under way.
# TYPE app_lock_waiting gauge
app_lock_waiting{path="/locks/a",kind="exclusive"} 4
app_lock_waiting{path="/locks/b\"q",kind="read"} 1
# HELP app_lock_held Locks held now.
# TYPE app_lock_held gauge
app_lock_held{path="/locks/a",kind="exclusive"} 10
app_lock_held{path="/locks/b\"q",kind="read"} 1
# HELP app_lock_wait_seconds Time from an acquire's start to its grant, in seconds.
# TYPE app_lock_wait_seconds histogram
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="1e-05"} 0
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="2.5e-05"} 1
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="5e-05"} 1
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="1e-04"} 1
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.00025"} 1
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="5e-04"} 1
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.001"} 1
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.0025"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.005"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.01"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.025"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.05"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.1"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.25"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="0.5"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="1"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="2.5"} 2
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="5"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="10"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="25"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="50"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="100"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="250"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="500"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="1000"} 3
app_lock_wait_seconds_bucket{path="/locks/a",kind="exclusive",le="+Inf"} 3
app_lock_wait_seconds_sum{path="/locks/a",kind="exclusive"} 3.00202
app_lock_wait_seconds_count{path="/locks/a",kind="exclusive"} 3
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="1e-05"} 0
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="2.5e-05"} 0
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="5e-05"} 0
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="1e-04"} 0
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.00025"} 0
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="5e-04"} 0
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.001"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.0025"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.005"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.01"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.025"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.05"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.1"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.25"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="0.5"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="1"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="2.5"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="5"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="10"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="25"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="50"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="100"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="250"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="500"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="1000"} 1
app_lock_wait_seconds_bucket{path="/locks/b\"q",kind="read",le="+Inf"} 1
app_lock_wait_seconds_sum{path="/locks/b\"q",kind="read"} 7e-04
app_lock_wait_seconds_count{path="/locks/b\"q",kind="read"} 1
# HELP app_lock_hold_seconds Time from a grant to its release or loss, in seconds.
# TYPE app_lock_hold_seconds histogram
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="1e-05"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="2.5e-05"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="5e-05"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="1e-04"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.00025"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="5e-04"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.001"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.0025"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.005"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.01"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.025"} 0
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.05"} 1
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.1"} 1
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.25"} 1
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="0.5"} 1
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="1"} 1
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="2.5"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="5"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="10"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="25"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="50"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="100"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="250"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="500"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="1000"} 2
app_lock_hold_seconds_bucket{path="/locks/a",kind="exclusive",le="+Inf"} 2
app_lock_hold_seconds_sum{path="/locks/a",kind="exclusive"} 1.54
app_lock_hold_seconds_count{path="/locks/a",kind="exclusive"} 2
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="1e-05"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="2.5e-05"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="5e-05"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="1e-04"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.00025"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="5e-04"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.001"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.0025"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.005"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.01"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.025"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.05"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.1"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.25"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="0.5"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="1"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="2.5"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="5"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="10"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="25"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="50"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="100"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="250"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="500"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="1000"} 0
app_lock_hold_seconds_bucket{path="/locks/b\"q",kind="read",le="+Inf"} 1
app_lock_hold_seconds_sum{path="/locks/b\"q",kind="read"} 3600
app_lock_hold_seconds_count{path="/locks/b\"q",kind="read"} 1
)exp";
  CHECK(text == expected);
  // where they differ first, readably
  const auto got = lines_of(text), want = lines_of(expected);
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (got[i] != want[i]) {
      INFO("line " << i + 1);
      CHECK(got[i] == want[i]);
      break;
    }
  CHECK(got.size() == want.size());
}
