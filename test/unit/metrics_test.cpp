// Lock metrics without a server: the histogram's buckets, the registry's bound, the Prometheus
// text exposition format (families, buckets, escaping).
#include "lock/metrics.hpp"

#include <zklock/metrics.hpp>

#include <catch2/catch.hpp>

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

TEST_CASE("prometheus: samples and labels and histogram buckets of a snapshot", "[unit][metrics]") {
  lock_metrics_snapshot s;
  lock_path_metrics p;
  p.path = "/locks/\"odd\"\\path";
  p.kind = lock_kind::write;
  p.acquires_started = 7;
  p.acquires_granted = 4;
  p.acquires_timed_out = 1;
  p.acquires_cancelled = 1;
  p.acquires_failed = 0;
  p.releases = 2;
  p.losses = 1;
  p.handoffs_remote = 3;
  p.handoffs_local = 0;
  p.wait.record(20us);
  p.wait.record(2ms);
  p.wait.record(2ms);
  p.wait.record(3s);
  p.hold.record(1500ms);
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
