// What the server-traffic kinds of zklock-bench share (--kind busy-process, bench/busy_process.cpp;
// --kind distinct-keys, bench/distinct_keys.cpp): CPU time and the clock every process of a run
// logs in (CLOCK_MONOTONIC: steady_clock here, System.nanoTime in Java, time.monotonic in
// Python); the result line and percentiles are result_line.hpp's, as for every bench program.
// Dispatched from zklock_bench.cpp's main.
#pragma once

#include "result_line.hpp"

#include <sys/resource.h>
#include <time.h>

#include <cstdint>

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

}  // namespace zklock_bench
