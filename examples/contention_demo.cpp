// Contention demo: N sessions on one thread take turns on one lock; each turn prints who holds
// it, its fencing token and how long the handoff took. A shared counter proves exclusion.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"zklock contention demo"};
  std::string connect = "127.0.0.1:2181", path = "/zklock-demo/lock";
  int contenders = 5, rounds = 4, hold_ms = 50;
  app.add_option("--connect", connect, "ZooKeeper hosts");
  app.add_option("--path", path, "lock path");
  app.add_option("--contenders", contenders, "sessions contending");
  app.add_option("--rounds", rounds, "acquisitions per session");
  app.add_option("--hold-ms", hold_ms, "time each holder keeps the lock");
  CLI11_PARSE(app, argc, argv);

  asio::io_context ioc;  // one thread runs every session and every waiter
  std::vector<std::unique_ptr<zklock::session>> sessions;
  int inside = 0, violations = 0, done = 0;
  std::vector<double> handoffs_us;
  clock_type::time_point release_started{};
  auto t0 = clock_type::now();

  for (int i = 0; i < contenders; ++i) {
    sessions.push_back(std::make_unique<zklock::session>(ioc.get_executor(), zklock::session_options{.connect = connect}));
    asio::co_spawn(ioc, [&, i]() -> asio::awaitable<void> {
      auto& s = *sessions[i];
      co_await s.async_connect(asio::use_awaitable);
      zklock::mutex lock{s, path};
      for (int r = 0; r < rounds; ++r) {
        auto guard = co_await lock.async_acquire(asio::use_awaitable);
        auto now = clock_type::now();
        double handoff = -1;
        if (release_started != clock_type::time_point{}) {
          handoff = std::chrono::duration<double, std::micro>(now - release_started).count();
          handoffs_us.push_back(handoff);
          release_started = {};
        }
        if (++inside != 1) ++violations;
        std::printf("%8.3f s  session %d holds %s (fencing token %lld)%s\n",
                    std::chrono::duration<double>(now - t0).count(), i,
                    std::string(zklock::node_name(guard.node_path())).c_str(),
                    static_cast<long long>(guard.fencing_token()),
                    handoff >= 0 ? ("  handoff " + std::to_string(static_cast<int>(handoff)) + " us").c_str() : "");
        asio::steady_timer t(ioc, std::chrono::milliseconds(hold_ms));
        co_await t.async_wait(asio::use_awaitable);
        --inside;
        release_started = clock_type::now();
        co_await guard.async_release(asio::use_awaitable);
      }
      co_await s.async_close(asio::use_awaitable);
      ++done;
    }, [](std::exception_ptr e) {
      if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { std::cerr << "error: " << x.what() << "\n"; std::exit(1); }
    });
  }
  std::printf("%d ZooKeeper sessions on one thread take turns on the lock %s, %d times each, holding it "
              "%d ms.\nOne line per turn: time, the holder and its lock node, its fencing token (grows with every "
              "holder), and the handoff (from the release to the next holder's grant).\n",
              contenders, path.c_str(), rounds, hold_ms);
  ioc.run();
  std::sort(handoffs_us.begin(), handoffs_us.end());
  double p50 = handoffs_us.empty() ? 0 : handoffs_us[handoffs_us.size() / 2];
  std::printf("%d sessions x %d rounds on one thread: %d acquisitions, %d violations, handoff p50 %.0f us\n",
              contenders, rounds, contenders * rounds, violations, p50);
  return violations == 0 && done == contenders ? 0 : 1;
}
