// The result every zklock benchmark program prints (zklock-bench and its kinds, zklock-election-bench):
// percentiles of its samples, and one `impl=... key=value` line on stdout with the same keys as
// flat JSON. The Curator and kazoo peers print the same (bench/peers/curator/PeerSupport.java,
// bench/peers/kazoo/kazoo_peer.py).
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace zklock_bench {

/// Nearest rank (p in 0..100; 100 is the maximum); NaN when there are no samples.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  auto idx = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::min(v.size() - 1, idx == 0 ? 0 : idx - 1)];
}

/// One `impl=... key=value` line on stdout (what bench/bench_common.py's parse reads), and the
/// same keys as a flat JSON object. A figure that is not a finite number (no samples, a division
/// by a zero duration) is written "nan" (JSON null): every reader of the line (bench_common.parse,
/// scripts/bench, bench/traffic_phases.py) takes "nan" as "no figure"; "inf" would pass as a
/// number into results.json and the plots.
struct kv_line {
  std::vector<std::pair<std::string, std::string>> kv;
  void add(const std::string& k, double v, int prec = 1) {
    if (!std::isfinite(v)) return add(k, std::string("nan"));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    kv.emplace_back(k, buf);
  }
  void add(const std::string& k, long long v) { kv.emplace_back(k, std::to_string(v)); }
  void add(const std::string& k, const std::string& v) { kv.emplace_back(k, v); }
  std::string line() const {
    std::string s;
    for (std::size_t i = 0; i < kv.size(); ++i) s += (i ? " " : "") + kv[i].first + "=" + kv[i].second;
    return s;
  }
  std::string json() const {
    std::string s = "{";
    for (std::size_t i = 0; i < kv.size(); ++i) {
      auto& [k, v] = kv[i];
      bool numeric = !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
      s += (i ? ", " : "") + ("\"" + k + "\": ") + (v == "nan" ? "null" : numeric ? v : "\"" + v + "\"");
    }
    return s + "}";
  }
  /// The line on stdout, and the JSON into json_file when one is given.
  void emit(const std::string& json_file) const {
    std::cout << line() << std::endl;
    if (!json_file.empty()) std::ofstream(json_file) << json() << "\n";
  }
};

}  // namespace zklock_bench
