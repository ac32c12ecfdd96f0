// Threads: operations started on any thread, the session on a strand of a 4-thread io_context,
// guards received and destroyed off the session's executor. Built with ThreadSanitizer (with
// the library's sources instrumented) and run by every ctest: a data race fails the test.
#include "../integration/cancel_races.hpp"
#include "../integration/common.hpp"

#include <zklock/multi_lock.hpp>
#include <zklock/path.hpp>
#include <zklock/semaphore.hpp>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace zklock;
using zklock::test::zk_server;

namespace {
using pool = zklock::test::thread_pool;

// A server, and a session on a strand of a 4-thread io_context, connected from main; the
// session is destroyed first, on main, while the io_context runs.
struct strand_session {
  zk_server srv;
  pool p{4};
  asio::strand<asio::io_context::executor_type> strand = asio::make_strand(p.ioc);
  session s{strand, options_for(srv.connect_string())};
  strand_session() { s.async_connect(asio::use_future).get(); }
};
}  // namespace

TEST_CASE_METHOD(strand_session,
                 "operations started from another thread: 4 threads, the session on a strand, use_future from main",
                 "[threads][promise]") {
  {
    // (connected from main: the session's own operations)
    CHECK(s.async_exists("/", asio::use_future).get().has_value());
    mutex m(s, "/locks/threads");

    // use_future from main: acquire, read the queue, release, destroy the guard here
    for (int i = 0; i < 10; ++i) {
      lock_guard g = m.async_acquire(asio::use_future).get();
      CHECK(g.node_path().starts_with("/locks/threads/"));
      CHECK(m.async_contenders(asio::use_future).get().size() == 1);
      g.async_release(asio::use_future).get();
    }  // each released guard is destroyed here, on main, while the loop runs

    // coroutines on the io_context's threads (not on the session's strand), contending
    std::atomic<int> inside{0}, most{0}, finished{0};
    for (int k = 0; k < 6; ++k) {
      asio::co_spawn(p.ioc, [&]() -> asio::awaitable<void> {
        for (int j = 0; j < 8; ++j) {
          auto g = co_await m.async_acquire(asio::use_awaitable);
          int now = ++inside;
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {}
          co_await sleep_for(1ms);
          --inside;
          co_await g.async_release(asio::use_awaitable);
        }
        ++finished;
      }, asio::detached);
    }
    // and guards dropped unreleased on main: their releases go through the strand
    semaphore sem(s, "/sem/threads", 2);
    for (int i = 0; i < 5; ++i) {
      auto lease = sem.async_acquire(asio::use_future).get();
      CHECK(lease.owns_lock());
    }
    multi_lock ml(s, std::vector<std::string>{"/locks/threads-a", "/locks/threads-b"});
    for (int i = 0; i < 3; ++i) ml.async_acquire(asio::use_future).get().async_release(asio::use_future).get();

    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (finished < 6 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    CHECK(finished == 6);
    CHECK(most == 1);
    s.async_close(asio::use_future).get();
  }
}

TEST_CASE_METHOD(strand_session,
                 "a local-queue mutex's released guard destroyed on another thread holds the queue's last reference",
                 "[threads][local]") {
  {
    // Meanwhile the session's executor subscribes to and unsubscribes from the session (each
    // plain acquire and hold does), as a busy program's would.
    std::atomic<bool> stop{false};
    std::atomic<bool> finished{false};
    mutex busy(s, "/locks/threads-busy");
    asio::co_spawn(strand, [&]() -> asio::awaitable<void> {
      while (!stop) {
        auto g = co_await busy.async_acquire(asio::use_awaitable);
        co_await g.async_release(asio::use_awaitable);
      }
      finished = true;
    }, asio::detached);
    mutex_options o;
    o.local_queue = true;
    for (int i = 0; i < 60; ++i) {
      {
        lock_guard g;
        {
          mutex m(s, "/locks/threads-local", o);
          g = m.async_acquire(asio::use_future).get();
          g.async_release(asio::use_future).get();
        }
        std::this_thread::sleep_for(20ms);  // the queue's node released: the guard keeps the queue alone
      }  // the released guard, destroyed here on main, takes the queue with it
      std::this_thread::sleep_for(20ms);  // the session's executor works meanwhile, main posts nothing
    }
    stop = true;
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!finished && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    CHECK(finished);
    s.async_close(asio::use_future).get();
  }
}

TEST_CASE("the session destroyed on main right after its last operation, its strand still running the work its objects posted",
          "[threads][destroy]") {
  // threaded_workers' ending: main's last future is ready while the strand still runs what
  // completed it, and the objects main drops post their own goodbyes there (a guard's and an
  // acquire's listeners unsubscribe through the strand); the session's destructor on main
  // must leave the engine's state to the strand as well.
  zk_server srv;
  pool p{4};
  // One strand for them all (sessions on strands of their own: the test below).
  auto strand = asio::make_strand(p.ioc);
  for (int i = 0; i < 20; ++i) {
    session s{strand, options_for(srv.connect_string())};
    s.async_connect(asio::use_future).get();
    {
      mutex m(s, "/locks/threads-destroy");
      lock_guard g = m.async_acquire(asio::use_future).get();
      g.async_release(asio::use_future).get();
    }  // guard and mutex gone: their unsubscribes are on their way through the strand
    if (i % 2 == 1) s.async_close(asio::use_future).get();  // closed first, or not
  }  // the session destroyed here, on main, the strand still busy with the above
}

TEST_CASE("sessions on strands of their own, one 4-thread io_context: connects, operations, closes and destructions at once, the C client logging",
          "[threads][sessions]") {
  // The single-threaded C client keeps process-wide state that its calls on any handle use: the
  // buffers it formats its log lines in (a connect, a close), the one it names a server in
  // (zoo_get_current_server's answer), its request counter. Each session calls it on its own
  // strand, so on any of the threads, at the same time as the others.
  zk_server srv;
  pool p{4};
  constexpr int sessions = 4, rounds = 6;
  std::atomic<long> log_lines{0};
  std::atomic<int> finished{0}, failures{0};
  for (int i = 0; i < sessions; ++i) {
    auto strand = asio::make_strand(p.ioc);
    asio::co_spawn(strand, [&, i, strand]() -> asio::awaitable<void> {
      auto o = options_for(srv.connect_string());
      o.log_threshold = log_level::info;  // the C client's connect and close lines reach the sink
      o.log = [&](log_level, std::string_view line) { log_lines += !line.empty(); };
      const std::string path = "/threads-sessions-" + std::to_string(i);
      for (int r = 0; r < rounds; ++r) {
        session s{strand, o};
        auto [ec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable));
        if (ec) {
          ++failures;
          continue;
        }
        // A path per round: a destroyed session's close (and its node's delete) ends on the
        // loop after the destructor returned.
        const std::string node = path + "-" + std::to_string(r);
        auto [cec, created] = co_await s.async_create(node, "x", create_mode::ephemeral, asio::as_tuple(asio::use_awaitable));
        for (int k = 0; k < 5; ++k) {
          co_await s.async_exists(node, asio::as_tuple(asio::use_awaitable));
          co_await s.async_get_children("/", asio::as_tuple(asio::use_awaitable));
          co_await s.async_set_data(node, std::to_string(k), -1, asio::as_tuple(asio::use_awaitable));
        }
        if (cec) ++failures;
        if (r % 2 == 1) co_await s.async_close(asio::as_tuple(asio::use_awaitable));  // closed first, or not
      }  // each session destroyed here, on its strand: its close runs at once
      ++finished;
    }, asio::detached);
  }
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (finished < sessions && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK(finished == sessions);
  CHECK(failures == 0);
  CHECK(log_lines > 0);  // the C client did log
}

TEST_CASE_METHOD(strand_session,
                 "cancelled on pool threads: op || timer, tsan",
                 "[threads][cancel]") {
  // The parallel group cancels the loser on the thread that ran the winner's completion, any of
  // the four: the cancellation reaches the engine through the strand only. Each coroutine on a
  // strand of its own (not the session's): on the io_context itself Asio's parallel group races
  // with itself (run_cancel_races), which ThreadSanitizer reports in Asio's code.
  session holder{asio::make_strand(p.ioc), options_for(srv.connect_string())};
  holder.async_connect(asio::use_future).get();
  {
    auto held = zklock::test::hold_locks(holder, "/tsan-cancel");
    zklock::test::cancel_race_counts counts;
    zklock::test::run_cancel_races(p.ioc, s, held, "/tsan-cancel", 4, 20, counts, 240s, /*on_strands=*/true);
    CHECK(counts.finished == 4);
    if (!counts.errors.empty()) WARN("first: " << counts.errors.front());
    CHECK(counts.unexpected == 0);
    CHECK(counts.timer_won > 0);
  }
  holder.async_close(asio::use_future).get();
  s.async_close(asio::use_future).get();
}

// Not run by default: its own ctest (test/CMakeLists.txt) passes only when ThreadSanitizer reports
// this race: a write here against a plain read in the library's own code (validate_path's loop
// over the characters, which stops at the control character before any libc call): the
// sanitizer is on in this program and in the library's sources it links (a read that is not
// instrumented is not seen; one through memchr would be, by the runtime's interceptor).
TEST_CASE("a deliberate race against the library's code", "[.][race-canary]") {
  std::string path = "/race\x01";
  // A relaxed flag: the read below comes after the write in time, with no happens-before
  // between them, and both are recent enough for the report to show both stacks.
  std::atomic<bool> written{false};
  std::thread writer([&] {
    path[1] = 'R';
    written.store(true, std::memory_order_relaxed);
  });
  while (!written.load(std::memory_order_relaxed)) std::this_thread::yield();
  CHECK(zklock::validate_path(path) == zklock::errc::path_control_character);
  writer.join();
}
