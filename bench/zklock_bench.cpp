// zklock-bench: N contenders (each its own ZooKeeper session) on ONE io_context thread acquire
// and release one lock M times each. Prints one line of key=value pairs (and --json FILE).
// Same protocol as the peers in bench/peers/ (Curator, kazoo, the raw C client).
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

long rss_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::string(field).size()));
  return -1;
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

// Watch events that can wake a waiter: its predecessor deleted, or released by a zklock holder
// (data changed in the releasing transaction).
std::uint64_t wakeups(const zklock::session& s) {
  return s.stats().events(zklock::watch_event_type::deleted) + s.stats().events(zklock::watch_event_type::changed);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  auto idx = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size())) ;
  return v[std::min(v.size() - 1, idx == 0 ? 0 : idx - 1)];
}

struct report {
  std::vector<std::pair<std::string, std::string>> kv;
  void add(const std::string& k, double v, int prec = 1) {
    if (std::isnan(v)) return add(k, std::string("nan"));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    kv.emplace_back(k, buf);
  }
  void add(const std::string& k, long long v) { kv.emplace_back(k, std::to_string(v)); }
  void add(const std::string& k, const std::string& v) { kv.emplace_back(k, v); }
  std::string line() const {
    std::string s;
    for (auto& [k, v] : kv) s += (s.empty() ? "" : " ") + k + "=" + v;
    return s;
  }
  std::string json() const {
    std::string s = "{";
    for (std::size_t i = 0; i < kv.size(); ++i) {
      auto& [k, v] = kv[i];
      bool numeric = !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-') && v != "nan";
      s += (i ? ", " : "") + ("\"" + k + "\": ") + (v == "nan" ? "null" : numeric ? v : "\"" + v + "\"");
    }
    return s + "}";
  }
};

// Completion of a benchmark coroutine: an exception stops the run and is reported.
auto stop_on_exception(asio::io_context& ioc, std::string& failure) {
  return [&ioc, &failure](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); ioc.stop(); }
  };
}

int run_pending(const std::string& connect, const std::string& path, int contenders, int pending,
                const std::string& json_file);

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zklock contention benchmark"};
  std::string connect = "127.0.0.1:2181", path = "/zklock-bench/lock", json_file, cdf_file;
  int contenders = 8, cycles = 100, hold_us = 0, solo_cycles = -1;
  app.add_option("--connect", connect, "ZooKeeper hosts");
  app.add_option("--path", path, "lock path");
  app.add_option("--contenders", contenders, "sessions contending (one process, one thread)");
  app.add_option("--cycles", cycles, "acquire+release cycles per contender");
  app.add_option("--hold-us", hold_us, "time each holder keeps the lock (timer, not busy)");
  app.add_option("--solo-cycles", solo_cycles, "uncontended cycles measured first (default max(50, cycles))");
  app.add_option("--json", json_file, "also write the result as JSON");
  app.add_option("--cdf", cdf_file, "write every handoff latency (us), one per line");
  int pending = 0;
  app.add_option("--pending", pending,
                 "instead: hold the lock, queue this many acquires over the contenders' sessions, "
                 "report memory and threads per pending waiter, then drain them");
  CLI11_PARSE(app, argc, argv);
  // thousands of sessions need thousands of sockets
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (pending > 0) return run_pending(connect, path, contenders, pending, json_file);
  if (solo_cycles < 0) solo_cycles = std::max(50, cycles);

  asio::io_context ioc(1);
  int threads_peak = thread_count();
  std::vector<std::unique_ptr<zklock::session>> sessions;
  for (int i = 0; i < contenders; ++i) {
    zklock::session_options o;
    o.connect = connect;
    o.session_timeout = std::chrono::seconds(30);
    o.connect_timeout = std::chrono::seconds(60);
    sessions.push_back(std::make_unique<zklock::session>(ioc.get_executor(), o));
  }

  std::vector<double> solo_us, handoffs;
  clock_type::time_point release_started{};
  int releaser = -1;  // a handoff is from one contender to another, not a re-acquire by itself
  int inside = 0, violations = 0, finished = 0, acquisitions = 0;
  std::uint64_t requests_before = 0, events_before = 0, deleted_before = 0;
  double contended_seconds = 0, cpu_contended = 0;
  std::string failure;

  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (auto& s : sessions) s->async_connect(asio::detached);
    for (auto& s : sessions)
      while (!zklock::is_connected(s->state())) {
        auto seen = s->state();
        if (seen == zklock::session_state::disconnected && s->session_id() == 0) {
          // still connecting, or failed: give it time
        }
        asio::steady_timer t(ioc, std::chrono::milliseconds(5));
        co_await t.async_wait(asio::use_awaitable);
      }
    // solo: one contender, uncontended
    {
      zklock::mutex m(*sessions[0], path);
      for (int k = 0; k < solo_cycles; ++k) {
        auto t0 = clock_type::now();
        auto g = co_await m.async_acquire(asio::use_awaitable);
        co_await g.async_release(asio::use_awaitable);
        solo_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
      }
    }
    for (auto& s : sessions) {
      requests_before += s->stats().requests_sent;
      events_before += s->stats().watch_events;
      deleted_before += wakeups(*s);
    }
    auto t_start = clock_type::now();
    clock_type::time_point t_end{};
    double cpu_start = cpu_seconds();
    for (int i = 0; i < contenders; ++i) {
      asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
        zklock::mutex m(*sessions[i], path);
        for (int k = 0; k < cycles; ++k) {
          auto g = co_await m.async_acquire(asio::use_awaitable);
          auto now = clock_type::now();
          if (release_started != clock_type::time_point{} && releaser != i)
            handoffs.push_back(std::chrono::duration<double, std::micro>(now - release_started).count());
          release_started = {};
          if (++inside != 1) ++violations;
          ++acquisitions;
          if (hold_us > 0) {
            asio::steady_timer t(ioc, std::chrono::microseconds(hold_us));
            co_await t.async_wait(asio::use_awaitable);
          }
          --inside;
          releaser = i;
          release_started = clock_type::now();
          co_await g.async_release(asio::use_awaitable);
        }
        if (++finished == contenders) t_end = clock_type::now();
      }, stop_on_exception(ioc, failure));
    }
    while (finished < contenders) {
      threads_peak = std::max(threads_peak, thread_count());
      asio::steady_timer t(ioc, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::use_awaitable);
    }
    // from the last contender's finish, not this poll's wake-up (50 ms granularity)
    contended_seconds = std::chrono::duration<double>(t_end - t_start).count();
    cpu_contended = cpu_seconds() - cpu_start;
    for (auto& s : sessions) s->async_close(asio::detached);
  }, stop_on_exception(ioc, failure));
  ioc.run();
  if (!failure.empty()) {
    std::cerr << "zklock-bench: " << failure << "\n";
    return 2;
  }
  threads_peak = std::max(threads_peak, thread_count());
  std::uint64_t requests = 0, events = 0, deleted = 0;
  for (auto& s : sessions) {
    requests += s->stats().requests_sent;
    events += s->stats().watch_events;
    deleted += wakeups(*s);
  }
  requests -= requests_before;
  events -= events_before;
  deleted -= deleted_before;

  report r;
  r.add("impl", std::string("zklock"));
  r.add("contenders", static_cast<long long>(contenders));
  r.add("cycles", static_cast<long long>(cycles));
  r.add("acquisitions", static_cast<long long>(acquisitions));
  r.add("throughput", acquisitions / contended_seconds);
  r.add("handoff_p50_us", percentile(handoffs, 50));
  r.add("handoff_p90_us", percentile(handoffs, 90));
  r.add("handoff_p99_us", percentile(handoffs, 99));
  r.add("handoff_p999_us", percentile(handoffs, 99.9));
  r.add("handoff_max_us", percentile(handoffs, 100));
  r.add("handoffs", static_cast<long long>(handoffs.size()));
  r.add("solo_cycle_us", percentile(solo_us, 50));
  r.add("violations", static_cast<long long>(violations));
  r.add("threads", static_cast<long long>(threads_peak));
  r.add("rss_kb", static_cast<long long>(rss_kb("VmHWM:")));
  r.add("cpu_us_per_acq", cpu_contended * 1e6 / std::max(1, acquisitions));
  // requests: each acquisition is create + getChildren (+ getData watch when waiting) + the
  // releasing transaction (+ a listing when the predecessor gave up rather than released)
  r.add("requests_per_acq", static_cast<double>(requests) / std::max(1, acquisitions), 2);
  // all watch events, and those that wake a waiter (deleted, or changed by a release): one per
  // release means no herd
  r.add("watch_events_per_release", static_cast<double>(events) / std::max(1, acquisitions), 2);
  r.add("wakeups_per_release", static_cast<double>(deleted) / std::max(1, acquisitions), 2);
  std::cout << r.line() << std::endl;
  if (!json_file.empty()) std::ofstream(json_file) << r.json() << "\n";
  if (!cdf_file.empty()) {
    std::ofstream out(cdf_file);
    for (double h : handoffs) out << h << "\n";
  }
  return violations == 0 ? 0 : 1;
}

namespace {

// 10,000 waiters on one thread: each is a znode, a watch and a small state machine; no thread.
int run_pending(const std::string& connect, const std::string& path, int contenders, int pending,
                const std::string& json_file) {
  asio::io_context ioc(1);
  std::vector<std::unique_ptr<zklock::session>> sessions;
  for (int i = 0; i < contenders + 1; ++i) {
    zklock::session_options o;
    o.connect = connect;
    o.session_timeout = std::chrono::seconds(30);
    o.connect_timeout = std::chrono::seconds(60);
    sessions.push_back(std::make_unique<zklock::session>(ioc.get_executor(), o));
  }
  long rss_before = 0, rss_pending = 0;
  int threads_before = 0, threads_pending = 0, granted = 0, errors = 0;
  double drain_seconds = 0;
  clock_type::time_point drained{};
  std::string failure;
  std::vector<std::unique_ptr<zklock::mutex>> mutexes;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (auto& s : sessions) co_await s->async_connect(asio::use_awaitable);
    zklock::mutex holder_m(*sessions[0], path);
    auto held = co_await holder_m.async_acquire(asio::use_awaitable);
    for (int i = 1; i <= contenders; ++i) mutexes.push_back(std::make_unique<zklock::mutex>(*sessions[i], path));
    threads_before = thread_count();
    rss_before = rss_kb("VmRSS:");
    std::uint64_t requests_before = 0;
    for (auto& s : sessions) requests_before += s->stats().requests_sent;
    for (int k = 0; k < pending; ++k)
      mutexes[k % contenders]->async_acquire([&](zklock::error_code ec, zklock::lock_guard g) {
        if (ec) ++errors;
        if (++granted == pending) drained = clock_type::now();
        // g released on scope exit (background release hands over to the next)
      });
    // all queued once every waiter has sent its create, listing and watch
    for (;;) {
      std::uint64_t r = 0;
      for (auto& s : sessions) r += s->stats().requests_sent;
      if (r - requests_before >= static_cast<std::uint64_t>(pending) * 3) break;
      asio::steady_timer t(ioc, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::use_awaitable);
    }
    asio::steady_timer settle(ioc, std::chrono::milliseconds(500));
    co_await settle.async_wait(asio::use_awaitable);
    rss_pending = rss_kb("VmRSS:");
    threads_pending = thread_count();
    auto t0 = clock_type::now();
    co_await held.async_release(asio::use_awaitable);
    while (granted < pending) {
      asio::steady_timer t(ioc, std::chrono::milliseconds(20));
      co_await t.async_wait(asio::use_awaitable);
    }
    drain_seconds = std::chrono::duration<double>(drained - t0).count();  // not this poll's wake-up
    for (auto& s : sessions) s->async_close(asio::detached);
  }, stop_on_exception(ioc, failure));
  ioc.run();
  if (!failure.empty()) {
    std::cerr << "zklock-bench: " << failure << "\n";
    return 2;
  }
  report r;
  r.add("impl", std::string("zklock"));
  r.add("mode", std::string("pending"));
  r.add("pending", static_cast<long long>(pending));
  r.add("sessions", static_cast<long long>(contenders));
  r.add("threads_before", static_cast<long long>(threads_before));
  r.add("threads_pending", static_cast<long long>(threads_pending));
  r.add("rss_kb_before", static_cast<long long>(rss_before));
  r.add("rss_kb_pending", static_cast<long long>(rss_pending));
  r.add("bytes_per_waiter", (rss_pending - rss_before) * 1024.0 / pending, 0);
  r.add("granted", static_cast<long long>(granted));
  r.add("errors", static_cast<long long>(errors));
  r.add("drain_throughput", pending / drain_seconds);
  std::cout << r.line() << std::endl;
  if (!json_file.empty()) std::ofstream(json_file) << r.json() << "\n";
  return errors == 0 ? 0 : 1;
}

}  // namespace
