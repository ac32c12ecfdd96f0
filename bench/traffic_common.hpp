// What the server-traffic kinds of zklock-bench share (--kind busy-process, bench/busy_process.cpp;
// --kind distinct-keys, bench/distinct_keys.cpp): the result line, CPU time, the clock every
// process of a run logs in (CLOCK_MONOTONIC: steady_clock here, System.nanoTime in Java,
// time.monotonic in Python), percentiles. Dispatched from zklock_bench.cpp's main.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace zklock_bench {

/// zklock-bench's kinds of bench/busy_process.cpp and bench/distinct_keys.cpp: the exit status
/// when argv's --kind is one of them, -1 otherwise (main goes on with its own kinds).
int run_traffic_kind(int argc, char** argv);
int run_busy_process_kind(int argc, char** argv);
int run_distinct_keys_kind(int argc, char** argv);

inline std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline double cpu_seconds_self() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

inline double pct(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  auto idx = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::min(v.size() - 1, idx == 0 ? 0 : idx - 1)];
}

/// One `impl=... key=value` line on stdout (what bench_common.parse reads), and the same as JSON.
struct kv_line {
  std::vector<std::pair<std::string, std::string>> kv;
  void add(const std::string& k, double v, int prec = 1) {
    if (std::isnan(v) || std::isinf(v)) return add(k, std::string("nan"));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    kv.emplace_back(k, buf);
  }
  void add(const std::string& k, long long v) { kv.emplace_back(k, std::to_string(v)); }
  void add(const std::string& k, const std::string& v) { kv.emplace_back(k, v); }
  void emit(const std::string& json_file) const {
    std::string line, json = "{";
    for (std::size_t i = 0; i < kv.size(); ++i) {
      auto& [k, v] = kv[i];
      line += (i ? " " : "") + k + "=" + v;
      bool numeric = !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
      json += (i ? ", " : "") + ("\"" + k + "\": ") + (v == "nan" ? "null" : numeric ? v : "\"" + v + "\"");
    }
    std::cout << line << std::endl;
    if (!json_file.empty()) std::ofstream(json_file) << json << "}\n";
  }
};

}  // namespace zklock_bench
