// zklock-bench --kind distinct-keys ("a lock per request on different items"): C
// concurrent coroutines of ONE session, each taking and releasing its own uncontended lock path
// (PATH/k<i>) --cycles times. A warm-up cycle per key first (creates the lock dirs, not timed:
// a busy server's items are locked again and again). Prints throughput, CPU per acquisition
// (getrusage of this process), the session's requests per acquisition and the cycle latency.
// The peers with the same workload: bench/peers/curator (--kind distinct-keys: one client, C
// threads), bench/peers/kazoo (the same), bench/peers/cfloor/cdistinct.c (raw C, pipelined).
#include "traffic_common.hpp"

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <memory>
#include <string_view>

namespace asio = boost::asio;

namespace zklock_bench {

int run_traffic_kind(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    std::string_view a = argv[i];
    if (a != "--kind") continue;
    std::string_view k = argv[i + 1];
    if (k == "busy-process" || k == "busy-other") return run_busy_process_kind(argc, argv);
    if (k == "distinct-keys") return run_distinct_keys_kind(argc, argv);
  }
  return -1;
}

int run_distinct_keys_kind(int argc, char** argv) {
  CLI::App app{"zklock-bench --kind distinct-keys"};
  std::string connect = "127.0.0.1:2181", path = "/zklock-bench/keys", json_file, kind;
  int concurrency = 16, cycles = 50;
  app.add_option("--kind", kind);
  app.add_option("--connect", connect, "ZooKeeper hosts");
  app.add_option("--path", path, "parent of the lock paths (PATH/k0, PATH/k1, ...)");
  app.add_option("--concurrency,--contenders", concurrency, "coroutines of the one session, a key each");
  app.add_option("--cycles", cycles, "acquire+release cycles per coroutine (after one warm-up cycle)");
  app.add_option("--json", json_file, "also write the result as JSON");
  bool fresh = false;
  app.add_flag("--fresh-dirs", fresh,
               "every cycle on a new lock path PATH/k<i>/c<k> (its dir missing, its parent there): an item not "
               "locked lately, whose empty container dir the server reaped");
  CLI11_PARSE(app, argc, argv);

  asio::io_context ioc(1);
  zklock::session_options so;
  so.connect = connect;
  so.session_timeout = std::chrono::seconds(30);
  so.connect_timeout = std::chrono::seconds(60);
  zklock::session s(ioc.get_executor(), so);
  std::string failure;
  std::vector<double> cycle_us;
  std::int64_t acquisitions = 0, requests = 0;
  double seconds = 0, cpu = 0;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    std::vector<std::unique_ptr<zklock::mutex>> locks;
    for (int i = 0; i < concurrency; ++i)
      locks.push_back(std::make_unique<zklock::mutex>(s, path + "/k" + std::to_string(i)));
    auto ex = co_await asio::this_coro::executor;
    int finished = 0, awaited = 0;
    // Waits, without waking up meanwhile, until the last coroutine is done (it cancels the
    // timer): a polling wait would take CPU from the server on the same cores, and count it.
    asio::steady_timer all_done(ex);
    auto wait_all = [&](int n) -> asio::awaitable<void> {
      awaited = n;
      all_done.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ignored;
      if (finished < n && failure.empty()) co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    };
    auto on_done = [&](std::exception_ptr e) {
      if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); }
      if (++finished >= awaited || !failure.empty()) all_done.cancel();
    };
    // warm-up: one cycle per key (the lock dirs are created here)
    for (int i = 0; i < concurrency; ++i)
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        auto g = co_await locks[i]->async_acquire(asio::use_awaitable);
        co_await g.async_release(asio::use_awaitable);
      }, on_done);
    co_await wait_all(concurrency);
    finished = 0;
    const auto requests_before = s.stats().requests_sent;
    const double cpu_before = cpu_seconds_self();
    const auto t0 = mono_ns();
    std::int64_t last_done = t0;
    for (int i = 0; i < concurrency; ++i)
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        for (int k = 0; k < cycles; ++k) {
          const auto c0 = mono_ns();
          if (fresh) locks[i] = std::make_unique<zklock::mutex>(s, path + "/k" + std::to_string(i) + "/c" + std::to_string(k));
          auto g = co_await locks[i]->async_acquire(asio::use_awaitable);
          ++acquisitions;
          co_await g.async_release(asio::use_awaitable);
          last_done = mono_ns();
          cycle_us.push_back((last_done - c0) / 1e3);
        }
      }, on_done);
    co_await wait_all(concurrency);
    // the last release's reply (this wake-up follows it at once)
    seconds = (last_done - t0) / 1e9;
    cpu = cpu_seconds_self() - cpu_before;
    requests = static_cast<std::int64_t>(s.stats().requests_sent - requests_before);
    co_await s.async_close(asio::use_awaitable);
  }, [&](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); }
  });
  ioc.run();
  if (!failure.empty()) return std::cerr << "zklock-bench: " << failure << "\n", 2;
  kv_line r;
  r.add("impl", std::string("zklock"));
  r.add("kind", std::string("distinct-keys"));
  r.add("fresh_dirs", fresh ? 1LL : 0LL);
  r.add("concurrency", static_cast<long long>(concurrency));
  r.add("cycles", static_cast<long long>(cycles));
  r.add("acquisitions", static_cast<long long>(acquisitions));
  r.add("throughput", acquisitions / seconds);
  r.add("cpu_us_per_acq", cpu * 1e6 / std::max<std::int64_t>(1, acquisitions));
  r.add("requests_per_acq", static_cast<double>(requests) / std::max<std::int64_t>(1, acquisitions), 3);
  r.add("cycle_p50_us", percentile(cycle_us, 50));
  r.add("cycle_p99_us", percentile(cycle_us, 99));
  r.add("seconds", seconds, 3);
  r.add("violations", 0LL);
  r.emit(json_file);
  return 0;
}

}  // namespace zklock_bench
