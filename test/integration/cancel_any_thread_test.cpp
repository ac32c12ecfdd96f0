// Cancellation emitted on any thread: the `||` deadline on a 4-thread io_context, the session on
// a strand, the coroutines on the io_context (see cancel_races.hpp). Before the cancellation
// was relayed to the session's executor, this crashed (7 of 20 runs of a smaller program).
#include "cancel_races.hpp"

#include <iostream>
#include <thread>

using namespace zklock;
using zklock::test::zk_server;

namespace {

// Waits (from main) until `path` has no children but `keep`, up to 20 s: the cancelled
// operations' cleanups run in the background.
bool children_settle(session& s, const std::string& path, std::size_t keep) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    long n = asio::co_spawn(s.get_executor(), [&]() -> asio::awaitable<long> {
      auto [ec, r] = co_await s.async_get_children(path, tuple_awaitable);
      co_return ec == zk_errc::no_node ? 0 : ec ? -1 : static_cast<long>(r.children.size());
    }, asio::use_future).get();
    if (n >= 0 && static_cast<std::size_t>(n) <= keep) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
}
}  // namespace

TEST_CASE("cancelled on pool threads: op || timer, every operation kind",
          "[integration][threads][cancel][promise]") {
  zk_server srv;
  test::thread_pool pool(4);
  auto strand = asio::make_strand(pool.ioc);
  session s{strand, options_for(srv.connect_string())};
  session holder{asio::make_strand(pool.ioc), options_for(srv.connect_string())};
  s.async_connect(asio::use_future).get();
  holder.async_connect(asio::use_future).get();
  {
    auto held = test::hold_locks(holder, "/cancel-any");
    test::cancel_race_counts counts;
    constexpr int coroutines = 8, rounds = 60;
    test::run_cancel_races(pool.ioc, s, held, "/cancel-any", coroutines, rounds, counts);
    INFO("operation first " << counts.op_won << ", timer first " << counts.timer_won);
    std::cout << "op || timer on pool threads: " << coroutines * rounds << " rounds, the operation first "
              << counts.op_won << " times, the timer first " << counts.timer_won << " times" << std::endl;
    if (!counts.errors.empty()) WARN("first: " << counts.errors.front());
    CHECK(counts.finished == coroutines);
    CHECK(counts.unexpected == 0);
    CHECK(counts.timer_won > 0);  // cancellations were emitted
    CHECK(counts.op_won > 0);
    // Every cancelled wait deleted its node: the held locks have their holder's alone.
    CHECK(children_settle(s, held.mutex_path, 1));
    CHECK(children_settle(s, held.semaphore_path + "/leases", 1));
    CHECK(children_settle(s, held.semaphore_path + "/locks", 0));
    CHECK(children_settle(s, held.election_path, 1));
    // The session still works.
    mutex m(s, held.mutex_path + "-after");
    m.async_acquire(asio::use_future).get().async_release(asio::use_future).get();
  }
  s.async_close(asio::use_future).get();
  holder.async_close(asio::use_future).get();
}

// Known to fail (hidden: run it by name): with the session's server stopped (SIGSTOP: the
// connection stays up, nothing answers), `acquire || 50 ms timer` completes only when the session
// gives up on the server, 6.3 s here (session timeout 4 s), where a cancellation answers at once
// and cleans up in the background. The same with the coroutine on the session's io_context run
// by one thread. Seen first by the fault harness's threads mode (the deadline completing
// 2.2-2.6 s late under kill-leader, restart-ensemble and ensemble-gone).
TEST_CASE("op || timer while the server is stopped: the acquire answers its cancellation at once",
          "[.][known-bug][integration][threads][cancel]") {
  zk_server srv;
  test::thread_pool pool(4);
  session s{asio::make_strand(pool.ioc), options_for(srv.connect_string())};
  session holder{asio::make_strand(pool.ioc), options_for(srv.connect_string())};
  s.async_connect(asio::use_future).get();
  holder.async_connect(asio::use_future).get();
  mutex held(holder, "/cancel-stopped"), m(s, "/cancel-stopped");
  auto g = held.async_acquire(asio::use_future).get();
  srv.pause();
  std::this_thread::sleep_for(300ms);
  auto took = asio::co_spawn(asio::make_strand(pool.ioc), [&]() -> asio::awaitable<double> {
    asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
    const auto start = std::chrono::steady_clock::now();
    co_await (m.async_acquire(tuple_awaitable) || t.async_wait(tuple_awaitable));
    co_return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }, asio::use_future).get();
  srv.resume();
  std::cout << "acquire || 50 ms timer, the server stopped: completed after " << took << " ms" << std::endl;
  CHECK(took < 1000);
  g = lock_guard();
  s.async_close(asio::use_future).get();
  holder.async_close(asio::use_future).get();
}
