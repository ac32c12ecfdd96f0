// zklock-bench: N contenders (each its own ZooKeeper session) on ONE io_context thread acquire
// and release one lock M times each. Prints one line of key=value pairs (and --json FILE).
// Same protocol as the peers in bench/peers/ (Curator, kazoo, the raw C client).
// --kind shared (readers and writers on a zklock::shared_mutex) and --kind semaphore (a
// zklock::semaphore of --leases) run the same loop on the other recipes; see bench/peers/README.md.
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include "traffic_common.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <deque>
#include <dirent.h>
#include <functional>
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

// Watch events that can wake a waiter: its predecessor deleted, or released by a zklock holder
// (data changed in the releasing transaction).
std::uint64_t wakeups(const zklock::session& s) {
  return s.stats().events(zklock::watch_event_type::deleted) + s.stats().events(zklock::watch_event_type::changed);
}

using zklock_bench::cpu_seconds_self;
using zklock_bench::kv_line;
using zklock_bench::percentile;

// Completion of a benchmark coroutine: an exception stops the run and is reported.
auto stop_on_exception(asio::io_context& ioc, std::string& failure) {
  return [&ioc, &failure](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); ioc.stop(); }
  };
}

using session_list = std::vector<std::unique_ptr<zklock::session>>;

session_list make_sessions(asio::io_context& ioc, const std::string& connect, int n) {
  session_list sessions;
  for (int i = 0; i < n; ++i) {
    zklock::session_options o;
    o.connect = connect;
    o.session_timeout = std::chrono::seconds(30);
    o.connect_timeout = std::chrono::seconds(60);
    sessions.push_back(std::make_unique<zklock::session>(ioc.get_executor(), o));
  }
  return sessions;
}

asio::awaitable<void> sleep_for(clock_type::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// Connects every session (in parallel) and waits until all are connected.
asio::awaitable<void> connect_all(session_list& sessions) {
  for (auto& s : sessions) s->async_connect(asio::detached);
  for (auto& s : sessions)
    while (!zklock::is_connected(s->state())) co_await sleep_for(std::chrono::milliseconds(5));
}

double us_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

// What every contended run measures besides its recipe's own figures.
struct contended_run {
  std::vector<double> finished_s;  // per contender: seconds from the common start to its last release
  double cpu_seconds = 0;          // process CPU over the contended phase
  int threads_peak = 0;
  std::uint64_t requests = 0, watch_events = 0, wakeups = 0;  // over the contended phase
  std::string failure;
  // says why on stderr
  bool failed() const {
    if (!failure.empty()) std::cerr << "zklock-bench: " << failure << "\n";
    return !failure.empty();
  }
  // from the start to the last finish of contenders [from, to), not a poll's wake-up
  double seconds(int from, int to) const {
    return from < to ? *std::max_element(finished_s.begin() + from, finished_s.begin() + to) : NAN;
  }
};

using contender_body = std::function<asio::awaitable<void>(int, zklock::session&)>;

// n contenders, each its own session, on one io_context thread: connects them all, runs
// `prelude` on the first (not part of the contended figures), then contender(i, session i) for
// every i from one common start; closes the sessions when all have finished.
contended_run run_contended(const std::string& connect, int n, const contender_body& contender,
                            const std::function<asio::awaitable<void>(zklock::session&)>& prelude = {}) {
  asio::io_context ioc(1);
  contended_run run;
  run.finished_s.assign(n, 0);
  run.threads_peak = thread_count();
  auto sessions = make_sessions(ioc, connect, n);
  auto totals = [&] {
    std::array<std::uint64_t, 3> t{};
    for (auto& s : sessions) t = {t[0] + s->stats().requests_sent, t[1] + s->stats().watch_events, t[2] + wakeups(*s)};
    return t;
  };
  std::array<std::uint64_t, 3> before{};
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    co_await connect_all(sessions);
    if (prelude) co_await prelude(*sessions[0]);
    before = totals();
    int finished = 0;
    const auto t_start = clock_type::now();
    const double cpu_start = cpu_seconds_self();
    for (int i = 0; i < n; ++i)
      asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
        co_await contender(i, *sessions[i]);
        run.finished_s[i] = std::chrono::duration<double>(clock_type::now() - t_start).count();
        ++finished;
      }, stop_on_exception(ioc, run.failure));
    while (finished < n) {
      run.threads_peak = std::max(run.threads_peak, thread_count());
      co_await sleep_for(std::chrono::milliseconds(50));
    }
    run.cpu_seconds = cpu_seconds_self() - cpu_start;
    for (auto& s : sessions) s->async_close(asio::detached);
  }, stop_on_exception(ioc, run.failure));
  ioc.run();
  run.threads_peak = std::max(run.threads_peak, thread_count());
  auto after = totals();
  run.requests = after[0] - before[0];
  run.watch_events = after[1] - before[1];
  run.wakeups = after[2] - before[2];
  return run;
}

// threads, memory, CPU and requests per acquisition: the keys every kind reports after its own
void add_process_figures(kv_line& r, const contended_run& run, int acquisitions) {
  r.add("threads", static_cast<long long>(run.threads_peak));
  r.add("rss_kb", static_cast<long long>(rss_kb("VmHWM:")));
  r.add("cpu_us_per_acq", run.cpu_seconds * 1e6 / std::max(1, acquisitions));
  r.add("requests_per_acq", static_cast<double>(run.requests) / std::max(1, acquisitions), 2);
}

int run_pending(const std::string& connect, const std::string& path, int contenders, int pending,
                int watched_blockers, const std::string& json_file);

struct recipe_options {
  std::string connect, path, json_file;
  int cycles = 0, hold_us = 0;
  int warmup_cycles = 0;  // --kind semaphore: cycles per contender before the measured ones
};
int run_shared(const recipe_options& o, int readers, int writers);
int run_semaphore(const recipe_options& o, int contenders, int leases);

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
  std::string kind = "mutex";
  int readers = 4, writers = 1, leases = 2;
  app.add_option("--kind", kind,
                 "mutex (default), shared (zklock::shared_mutex), semaphore (zklock::semaphore); busy-process and "
                 "distinct-keys: bench/busy_process.cpp, bench/distinct_keys.cpp (zklock-bench --kind K --help)")
      ->check(CLI::IsMember({"mutex", "shared", "semaphore"}));
  app.add_option("--readers", readers, "--kind shared: sessions taking the read side");
  app.add_option("--writers", writers, "--kind shared: sessions taking the write side");
  app.add_option("--leases", leases, "--kind semaphore: max_leases (--contenders sessions acquire leases)");
  int warmup_cycles = 0;
  app.add_option("--warmup-cycles", warmup_cycles,
                 "--kind semaphore: cycles per contender run first in this process, unrecorded; every contender "
                 "finishes them before the measured cycles start together (as the peers' --warmup-cycles)");
  int lock_delay_ms = 0;
  app.add_option("--lock-delay-ms", lock_delay_ms,
                 "--kind mutex: mutex_options::lock_delay (0: off); a clean release's handoff with it on "
                 "(bench/lock_delay_bench.py compares on and off in one run)");
  int watched_blockers = zklock::mutex_options{}.watched_blockers;
  app.add_option("--watched-blockers", watched_blockers,
                 "--kind mutex: mutex_options::watched_blockers (K, default " + std::to_string(watched_blockers) +
                     "): how many contenders ahead each waiter watches");
  int pending = 0;
  app.add_option("--pending", pending,
                 "instead: hold the lock, queue this many acquires over the contenders' sessions, "
                 "report memory and threads per pending waiter, the server's watches (mntr), then drain them "
                 "(every grant released at once) and report events and requests per release");
  if (int rc = zklock_bench::run_traffic_kind(argc, argv); rc >= 0) return rc;  // busy-process, distinct-keys
  CLI11_PARSE(app, argc, argv);
  // thousands of sessions need thousands of sockets
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (pending > 0) return run_pending(connect, path, contenders, pending, watched_blockers, json_file);
  const recipe_options ro{connect, path, json_file, cycles, hold_us, warmup_cycles};
  if (kind == "shared") return run_shared(ro, readers, writers);
  if (kind == "semaphore") return run_semaphore(ro, contenders, leases);
  if (solo_cycles < 0) solo_cycles = std::max(50, cycles);

  std::vector<double> solo_us, handoffs;
  clock_type::time_point release_started{};
  int releaser = -1;  // a handoff is from one contender to another, not a re-acquire by itself
  int inside = 0, violations = 0, acquisitions = 0;
  auto solo = [&](zklock::session& s) -> asio::awaitable<void> {
    zklock::mutex m(s, path);
    for (int k = 0; k < solo_cycles; ++k) {
      auto t0 = clock_type::now();
      auto g = co_await m.async_acquire(asio::use_awaitable);
      co_await g.async_release(asio::use_awaitable);
      solo_us.push_back(us_since(t0));
    }
  };
  auto contender = [&](int i, zklock::session& s) -> asio::awaitable<void> {
    zklock::mutex m(s, path, {.watched_blockers = watched_blockers, .lock_delay = std::chrono::milliseconds(lock_delay_ms)});
    for (int k = 0; k < cycles; ++k) {
      auto g = co_await m.async_acquire(asio::use_awaitable);
      if (release_started != clock_type::time_point{} && releaser != i) handoffs.push_back(us_since(release_started));
      release_started = {};
      if (++inside != 1) ++violations;
      ++acquisitions;
      if (hold_us > 0) co_await sleep_for(std::chrono::microseconds(hold_us));
      --inside;
      releaser = i;
      release_started = clock_type::now();
      co_await g.async_release(asio::use_awaitable);
    }
  };
  auto run = run_contended(connect, contenders, contender, solo);
  if (run.failed()) return 2;
  const double contended_seconds = run.seconds(0, contenders);

  kv_line r;
  r.add("impl", std::string("zklock"));
  r.add("contenders", static_cast<long long>(contenders));
  r.add("cycles", static_cast<long long>(cycles));
  r.add("lock_delay_ms", static_cast<long long>(lock_delay_ms));
  r.add("watched_blockers", static_cast<long long>(watched_blockers));
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
  // requests: each acquisition is create + getChildren (+ getData watch when waiting) + the
  // releasing transaction (+ a listing when the predecessor gave up rather than released)
  add_process_figures(r, run, acquisitions);
  // all watch events, and those that wake a waiter (deleted, or changed by a release): one per
  // release means no herd
  r.add("watch_events_per_release", static_cast<double>(run.watch_events) / std::max(1, acquisitions), 2);
  r.add("wakeups_per_release", static_cast<double>(run.wakeups) / std::max(1, acquisitions), 2);
  r.emit(json_file);
  if (!cdf_file.empty()) {
    std::ofstream out(cdf_file);
    for (double h : handoffs) out << h << "\n";
  }
  return violations == 0 ? 0 : 1;
}

namespace {

// A four-letter word's answer from the first server of `connect` (its whitelist must allow it;
// empty if it does not answer).
std::string four_letter(const std::string& connect, const std::string& word) {
  const auto first = connect.substr(0, connect.find_first_of(",/"));
  const auto colon = first.rfind(':');
  try {
    asio::io_context io;
    asio::ip::tcp::socket sock(io);
    asio::ip::tcp::resolver resolver(io);
    asio::connect(sock, resolver.resolve(first.substr(0, colon), first.substr(colon + 1)));
    asio::write(sock, asio::buffer(word));
    std::string answer;
    boost::system::error_code ec;
    asio::read(sock, asio::dynamic_buffer(answer), ec);  // until the server closes
    return answer;
  } catch (const std::exception&) {
    return {};
  }
}

// The number after `label` in a four-letter answer ("Total watches:2998"), -1 if absent.
long long four_letter_number(const std::string& answer, const std::string& label) {
  const auto at = answer.find(label);
  return at == std::string::npos ? -1 : std::atoll(answer.c_str() + at + label.size());
}

// Pending waiters on one thread: each is a znode, its watches (its own node, up to K blockers)
// and a small state machine; no thread. With --pending 1000 --contenders 1 (or one session per
// waiter): what a release costs when 1,000 contenders queue on one lock. Every figure is a
// count, none is checked here.
int run_pending(const std::string& connect, const std::string& path, int contenders, int pending,
                int watched_blockers, const std::string& json_file) {
  asio::io_context ioc(1);
  auto sessions = make_sessions(ioc, connect, contenders + 1);
  long rss_before = 0, rss_pending = 0;
  int threads_before = 0, threads_pending = 0, granted = 0, errors = 0;
  double drain_seconds = 0;
  clock_type::time_point drained{};
  std::string failure, wchs, mntr;
  std::vector<std::unique_ptr<zklock::mutex>> mutexes;
  // session totals: requests sent, watch events, deletion events
  auto totals = [&] {
    std::array<std::uint64_t, 3> t{};
    for (auto& s : sessions)
      t = {t[0] + s->stats().requests_sent, t[1] + s->stats().watch_events,
           t[2] + s->stats().events(zklock::watch_event_type::deleted)};
    return t;
  };
  // waits until no session sent a request for `quiet` (the last release's delete answered, every
  // re-listing done)
  auto settle = [&](clock_type::duration quiet) -> asio::awaitable<void> {
    for (auto last = totals();;) {
      co_await sleep_for(quiet);
      auto now = totals();
      if (now == last) co_return;
      last = now;
    }
  };
  std::array<std::uint64_t, 3> solo_before{}, solo_after{}, queue_before{}, queued{}, drain_before{}, drain_after{};
  constexpr int solo_cycles = 20;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (auto& s : sessions) co_await s->async_connect(asio::use_awaitable);
    const zklock::mutex_options mo{.watched_blockers = watched_blockers};
    zklock::mutex holder_m(*sessions[0], path, mo);
    // what an uncontended release costs in events: our own node's watch fires on our own delete
    solo_before = totals();
    for (int k = 0; k < solo_cycles; ++k) {
      auto g = co_await holder_m.async_acquire(asio::use_awaitable);
      co_await g.async_release(asio::use_awaitable);
    }
    co_await settle(std::chrono::milliseconds(100));
    solo_after = totals();
    auto held = co_await holder_m.async_acquire(asio::use_awaitable);
    for (int i = 1; i <= contenders; ++i) mutexes.push_back(std::make_unique<zklock::mutex>(*sessions[i], path, mo));
    threads_before = thread_count();
    rss_before = rss_kb("VmRSS:");
    queue_before = totals();
    const std::uint64_t requests_before = queue_before[0];
    for (int k = 0; k < pending; ++k)
      mutexes[k % contenders]->async_acquire([&](zklock::error_code ec, zklock::lock_guard g) {
        if (ec) ++errors;
        if (++granted == pending) drained = clock_type::now();
        // g released on scope exit (background release hands over to the next)
      });
    // all queued once every waiter has sent its create, listing and watch, and nothing more is sent
    for (;;) {
      if (totals()[0] - requests_before >= static_cast<std::uint64_t>(pending) * 3) break;
      co_await sleep_for(std::chrono::milliseconds(50));
    }
    co_await settle(std::chrono::milliseconds(500));
    queued = totals();
    wchs = four_letter(connect, "wchs");
    mntr = four_letter(connect, "mntr");
    rss_pending = rss_kb("VmRSS:");
    threads_pending = thread_count();
    drain_before = totals();
    auto t0 = clock_type::now();
    co_await held.async_release(asio::use_awaitable);
    while (granted < pending) co_await sleep_for(std::chrono::milliseconds(20));
    drain_seconds = std::chrono::duration<double>(drained - t0).count();  // not this poll's wake-up
    co_await settle(std::chrono::milliseconds(200));
    drain_after = totals();
    for (auto& s : sessions) s->async_close(asio::detached);
  }, stop_on_exception(ioc, failure));
  ioc.run();
  if (!failure.empty()) {
    std::cerr << "zklock-bench: " << failure << "\n";
    return 2;
  }
  kv_line r;
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
  r.add("watched_blockers", static_cast<long long>(watched_blockers));
  // the holder's own uncontended cycles: events per release with nobody waiting
  r.add("solo_events_per_release", static_cast<double>(solo_after[1] - solo_before[1]) / solo_cycles, 2);
  r.add("queue_requests_per_waiter", static_cast<double>(queued[0] - queue_before[0]) / pending, 2);
  // the server's watches with every waiter queued, data and child watches (mntr; wchs counts the
  // data watches only, and a waiter watches the blockers behind its nearest one by a child
  // watch); -1 when the server does not answer it. The watched paths: the data watches'.
  r.add("server_watches", four_letter_number(mntr, "zk_watch_count\t"));
  r.add("server_watched_paths", four_letter_number(wchs, "watching "));
  r.add("server_watching_connections", std::atoll(wchs.c_str()));
  // the drain: the holder's release and each waiter's (every grant released at once), the events
  // the sessions received (each session hears of a watched path's deletion once, however many
  // of its waiters watch it) and the requests they sent
  const double releases = pending + 1.0;
  r.add("releases", static_cast<long long>(pending + 1));
  r.add("events_per_release", static_cast<double>(drain_after[1] - drain_before[1]) / releases, 2);
  r.add("deleted_events_per_release", static_cast<double>(drain_after[2] - drain_before[2]) / releases, 2);
  r.add("requests_per_release", static_cast<double>(drain_after[0] - drain_before[0]) / releases, 2);
  r.emit(json_file);
  return errors == 0 ? 0 : 1;
}

// Readers and writers on one zklock::shared_mutex. A read handoff: a writer starts releasing,
// and a reader that was already waiting is granted; a write handoff: the lock turns free (a
// writer, or the last reader inside, starts releasing) and a writer already waiting is granted.
int run_shared(const recipe_options& o, int readers, int writers) {
  std::vector<double> read_handoffs, write_handoffs;
  clock_type::time_point write_released{}, free_since{};
  int readers_inside = 0, max_readers_inside = 0, violations = 0, reads = 0, writes = 0;
  bool writer_inside = false;
  auto contender = [&](int i, zklock::session& s) -> asio::awaitable<void> {
    zklock::shared_mutex m(s, o.path);
    const bool reader = i < readers;
    for (int k = 0; k < o.cycles; ++k) {
      const auto waiting_since = clock_type::now();
      zklock::lock_guard g;  // no co_await inside ?: (g++ 12 bug, see the README)
      if (reader)
        g = co_await m.async_acquire_shared(asio::use_awaitable);
      else
        g = co_await m.async_acquire(asio::use_awaitable);
      if (reader) {
        if (write_released > waiting_since) read_handoffs.push_back(us_since(write_released));
        violations += writer_inside;
        max_readers_inside = std::max(max_readers_inside, ++readers_inside);
        ++reads;
      } else {
        if (free_since > waiting_since) write_handoffs.push_back(us_since(free_since));
        violations += writer_inside || readers_inside > 0;
        writer_inside = true;
        ++writes;
      }
      if (o.hold_us > 0) co_await sleep_for(std::chrono::microseconds(o.hold_us));
      if (reader) {
        if (--readers_inside == 0) free_since = clock_type::now();
      } else {
        writer_inside = false;
        write_released = free_since = clock_type::now();
      }
      co_await g.async_release(asio::use_awaitable);
    }
  };
  auto run = run_contended(o.connect, readers + writers, contender);
  if (run.failed()) return 2;
  kv_line r;
  r.add("impl", std::string("zklock"));
  r.add("kind", std::string("shared"));
  r.add("readers", static_cast<long long>(readers));
  r.add("writers", static_cast<long long>(writers));
  r.add("cycles", static_cast<long long>(o.cycles));
  r.add("read_acquisitions", static_cast<long long>(reads));
  r.add("write_acquisitions", static_cast<long long>(writes));
  r.add("throughput", (reads + writes) / run.seconds(0, readers + writers));
  r.add("read_throughput", reads / run.seconds(0, readers));
  r.add("write_throughput", writes / run.seconds(readers, readers + writers));
  r.add("read_handoff_p50_us", percentile(read_handoffs, 50));
  r.add("read_handoff_p99_us", percentile(read_handoffs, 99));
  r.add("read_handoffs", static_cast<long long>(read_handoffs.size()));
  r.add("write_handoff_p50_us", percentile(write_handoffs, 50));
  r.add("write_handoff_p99_us", percentile(write_handoffs, 99));
  r.add("write_handoffs", static_cast<long long>(write_handoffs.size()));
  r.add("max_readers_inside", static_cast<long long>(max_readers_inside));
  r.add("violations", static_cast<long long>(violations));
  add_process_figures(r, run, reads + writes);
  r.emit(o.json_file);
  return violations == 0 ? 0 : 1;
}

// `contenders` sessions on one zklock::semaphore of `leases`. A handoff: a holder starts
// releasing while every lease is taken, and the next grant goes to a contender that was
// already waiting (each such release frees one lease, which the next grant takes).
// With o.warmup_cycles, every contender runs that many cycles first, unrecorded, and waits for
// the others to finish theirs: the measured cycles (throughput, handoffs) start together, from
// the moment the last contender finished its warm-up, as in the Curator and kazoo peers (whose
// JIT and caches warm up in the same process).
int run_semaphore(const recipe_options& o, int contenders, int leases) {
  std::vector<double> handoffs;
  std::deque<clock_type::time_point> freed;  // releases from full whose lease is not yet taken again
  int inside = 0, max_inside = 0, violations = 0, acquisitions = 0, measured = 0, warmed = 0;
  clock_type::time_point measure_start{}, last_finish{};
  auto contender = [&](int, zklock::session& s) -> asio::awaitable<void> {
    zklock::semaphore sem(s, o.path, leases);
    for (int k = 0; k < o.warmup_cycles + o.cycles; ++k) {
      if (k == o.warmup_cycles && o.warmup_cycles > 0) {
        if (++warmed == contenders) {
          measure_start = clock_type::now();
          freed.clear();  // the warm-up's releases are no measured handoff
        }
        while (warmed < contenders) co_await sleep_for(std::chrono::microseconds(200));
      }
      const bool recorded = k >= o.warmup_cycles;
      const auto waiting_since = clock_type::now();
      auto g = co_await sem.async_acquire(asio::use_awaitable);
      if (!freed.empty()) {
        if (recorded && freed.front() > waiting_since) handoffs.push_back(us_since(freed.front()));
        freed.pop_front();
      }
      max_inside = std::max(max_inside, ++inside);
      violations += inside > leases;
      ++acquisitions;
      measured += recorded;
      if (o.hold_us > 0) co_await sleep_for(std::chrono::microseconds(o.hold_us));
      if (inside-- == leases) freed.push_back(clock_type::now());
      co_await g.async_release(asio::use_awaitable);
    }
    last_finish = std::max(last_finish, clock_type::now());
  };
  auto run = run_contended(o.connect, contenders, contender);
  if (run.failed()) return 2;
  kv_line r;
  r.add("impl", std::string("zklock"));
  r.add("kind", std::string("semaphore"));
  r.add("contenders", static_cast<long long>(contenders));
  r.add("leases", static_cast<long long>(leases));
  r.add("cycles", static_cast<long long>(o.cycles));
  r.add("warmup_cycles", static_cast<long long>(o.warmup_cycles));
  r.add("acquisitions", static_cast<long long>(measured));
  r.add("throughput", o.warmup_cycles > 0
                          ? measured / std::chrono::duration<double>(last_finish - measure_start).count()
                          : measured / run.seconds(0, contenders));
  r.add("handoff_p50_us", percentile(handoffs, 50));
  r.add("handoff_p99_us", percentile(handoffs, 99));
  r.add("handoffs", static_cast<long long>(handoffs.size()));
  r.add("max_inside", static_cast<long long>(max_inside));
  r.add("violations", static_cast<long long>(violations));
  add_process_figures(r, run, acquisitions);
  r.emit(o.json_file);
  return violations == 0 ? 0 : 1;
}

}  // namespace
