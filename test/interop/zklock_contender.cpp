// Interop contender: zklock::mutex, with --rw zklock::shared_mutex, or with --semaphore=N
// zklock::semaphore of N leases; same protocol as CuratorContender and kazoo_contender.py.
//   zklock_contender [--rw | --semaphore=N | --election] CONNECT PATH CYCLES LOGFILE WHO
// With --election, each cycle campaigns in a zklock::election of PATH as WHO (Curator
// LeaderLatch's layout), logs enter/leave around a 5 ms term, resigns, and campaigns again on
// the same object.
// With --revocable, each cycle acquires a zklock::mutex of PATH, prints "node <its node path>",
// waits for a revocation request (lock_guard::async_wait_revoked), prints "revoked <ns>" (the
// steady clock, CLOCK_MONOTONIC, at the handler) and releases (run_revocation.py).
// With --rw, cycle i takes the write side when i % 3 == 0 and the read side otherwise; a read
// is held longer (5 ms) than a write (1 ms) so that readers of different processes overlap.
// Every other write (i % 6 == 3) downgrades at once and is logged as a read: the peers see a
// downgraded writer (its node, and its downgrade mark in the lock dir) and must still treat it
// as a writer until its release.
// With --semaphore=N, each cycle takes a lease, logs enter/leave around a 30 ms hold, gives it
// back (run_interop.py checks that at most N are inside at once). The hold is long next to a
// lease's round trips, so that the leases are all taken most of the time: with a shorter one
// (5 ms), 2 zklock and 2 Curator processes on two separate semaphores of 2 never had 3 inside.
//
// The helper of `zklock locks`'s deadlock test (test/apps/locks_test.py), a mode of this program
// rather than a program of its own (one compile less in the test command's build):
//   zklock_contender --hold-then-wait CONNECT FIRST SECOND
// One session (identity "hold_then_wait FIRST SECOND") takes the mutex FIRST, prints "holding
// FIRST", then, after a line on its standard input, waits for SECOND (a lock order two of them
// can deadlock on) and prints "holding SECOND" if it ever gets it; runs until SIGTERM or SIGINT.
#include "exclusion_log.hpp"

#include <zklock/election.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace asio = boost::asio;

namespace {
asio::awaitable<void> hold_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// CYCLES times: acquire `lock` (a mutex, or a semaphore's lease), log enter, hold, log leave,
// release.
template <class Lock>
asio::awaitable<void> exclusive_cycles(Lock& lock, int cycles, zklock::test::exclusion_log& log,
                                       const std::string& who, std::chrono::milliseconds hold) {
  for (int i = 0; i < cycles; ++i) {
    auto g = co_await lock.async_acquire(asio::use_awaitable);
    log.enter(who);
    co_await hold_for(hold);
    log.leave(who);
    co_await g.async_release(asio::use_awaitable);
  }
}
asio::awaitable<void> hold_then_wait(std::string connect, std::string first, std::string second) {
  auto ex = co_await asio::this_coro::executor;
  zklock::session_options options;
  options.connect = connect;
  options.identity = "hold_then_wait " + first + " " + second;
  zklock::session session{ex, options};
  co_await session.async_connect(asio::use_awaitable);
  zklock::mutex a{session, first}, b{session, second};
  auto held = co_await a.async_acquire(asio::use_awaitable);
  std::printf("holding %s\n", first.c_str());
  std::fflush(stdout);
  asio::posix::stream_descriptor in(ex, ::dup(0));
  std::string line;
  co_await asio::async_read_until(in, asio::dynamic_buffer(line), '\n', asio::use_awaitable);
  auto also = co_await b.async_acquire(asio::use_awaitable);
  std::printf("holding %s\n", second.c_str());
  std::fflush(stdout);
  asio::steady_timer forever(ex, asio::steady_timer::time_point::max());
  co_await forever.async_wait(asio::use_awaitable);
}

int hold_then_wait_main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: zklock_contender --hold-then-wait CONNECT FIRST SECOND\n");
    return 2;
  }
  asio::io_context ioc;
  asio::signal_set stop(ioc, SIGTERM, SIGINT);
  stop.async_wait([&](auto, int) { ioc.stop(); });
  asio::co_spawn(ioc, hold_then_wait(argv[1], argv[2], argv[3]), [&](std::exception_ptr e) {
    if (e) {
      std::fprintf(stderr, "hold_then_wait: failed\n");
      ioc.stop();
    }
  });
  ioc.run();
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--hold-then-wait") return hold_then_wait_main(argc - 1, argv + 1);
  const bool rw = argc > 1 && std::string_view(argv[1]) == "--rw";
  int max_leases = 0;  // > 0: semaphore mode
  if (argc > 1 && std::string_view(argv[1]).starts_with("--semaphore="))
    max_leases = std::stoi(std::string(std::string_view(argv[1]).substr(12)));
  const bool election = argc > 1 && std::string_view(argv[1]) == "--election";
  const bool revocable = argc > 1 && std::string_view(argv[1]) == "--revocable";
  if (rw || max_leases > 0 || election || revocable) --argc, ++argv;
  if (argc != 6) {
    std::cerr << "usage: zklock_contender [--rw | --semaphore=N | --election | --revocable] CONNECT PATH CYCLES LOGFILE WHO\n"
                 "       zklock_contender --hold-then-wait CONNECT FIRST SECOND\n";
    return 2;
  }
  std::string connect = argv[1], path = argv[2], who = argv[5];
  int cycles = std::stoi(argv[3]);
  zklock::test::exclusion_log log(argv[4]);
  asio::io_context ioc;
  int status = 1;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    // (named, not a temporary in the co_await's full-expression: g++ 12 mis-destroys those)
    auto ex = co_await asio::this_coro::executor;
    zklock::session_options opts;
    opts.connect = connect;
    zklock::session s{ex, opts};
    co_await s.async_connect(asio::use_awaitable);
    if (revocable) {
      zklock::mutex m{s, path};
      for (int i = 0; i < cycles; ++i) {
        auto g = co_await m.async_acquire(asio::use_awaitable);
        log.enter(who);
        std::cout << "node " << g.node_path() << std::endl;
        co_await g.async_wait_revoked(asio::use_awaitable);
        auto now = std::chrono::steady_clock::now().time_since_epoch();
        std::cout << "revoked " << std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() << std::endl;
        log.leave(who);
        co_await g.async_release(asio::use_awaitable);
      }
    } else if (election) {
      zklock::election e{s, path, who};
      for (int i = 0; i < cycles; ++i) {
        auto l = co_await e.async_campaign(asio::use_awaitable);
        log.enter(who);
        co_await hold_for(std::chrono::milliseconds(5));
        log.leave(who);
        co_await l.async_resign(asio::use_awaitable);
      }
    } else if (max_leases > 0) {
      zklock::semaphore sem{s, path, max_leases};
      co_await exclusive_cycles(sem, cycles, log, who, std::chrono::milliseconds(30));
    } else if (rw) {
      zklock::shared_mutex m{s, path};
      for (int i = 0; i < cycles; ++i) {
        const bool downgrade = i % 6 == 3;
        const bool write = i % 3 == 0 && !downgrade;
        zklock::lock_guard g;
        if (write || downgrade)
          g = co_await m.async_acquire(asio::use_awaitable);
        else
          g = co_await m.async_acquire_shared(asio::use_awaitable);
        if (downgrade) co_await g.async_downgrade(asio::use_awaitable);
        write ? log.enter_write(who) : log.enter_read(who);
        co_await hold_for(std::chrono::milliseconds(write ? 1 : 5));
        write ? log.leave_write(who) : log.leave_read(who);
        co_await g.async_release(asio::use_awaitable);
      }
    } else {
      zklock::mutex m{s, path};
      co_await exclusive_cycles(m, cycles, log, who, std::chrono::milliseconds(1));
    }
    co_await s.async_close(asio::use_awaitable);
    status = 0;
  }, [](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { std::cerr << "zklock_contender: " << x.what() << "\n"; }
  });
  ioc.run();
  return status;
}
