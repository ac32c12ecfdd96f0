// The ordinary Asio deadline, `co_await (op(use_awaitable) || timer.async_wait(use_awaitable))`,
// in the README's threads setup: an io_context run by several threads, the session on a strand,
// the coroutines spawned on the io_context itself. The parallel group emits the loser's
// cancellation on whichever thread ran the winner's completion, never the session's strand by
// design: the cancellation must reach the engine on its executor. Every cancellable operation
// kind, raced against a timer of 0-3 ms (either may win), each on fresh paths, or waiting on a
// lock `holder` keeps (the timer wins: the cancellation cleans up). Shared by the integration
// test and the ThreadSanitizer test.
#pragma once

#include "common.hpp"

#include <zklock/election.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace zklock::test {

using namespace boost::asio::experimental::awaitable_operators;

/// An io_context run by `n` threads of its own (stopped and joined when it goes).
struct thread_pool {
  asio::io_context ioc;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
  std::vector<std::thread> threads;
  explicit thread_pool(int n) {
    for (int i = 0; i < n; ++i) threads.emplace_back([this] { ioc.run(); });
  }
  ~thread_pool() {
    work.reset();
    ioc.stop();
    for (auto& t : threads) t.join();
  }
};

struct cancel_race_counts {
  std::atomic<int> finished{0};   // coroutines that ran all their rounds
  std::atomic<int> op_won{0};     // rounds the operation completed first
  std::atomic<int> timer_won{0};  // rounds the timer did (the operation cancelled)
  std::atomic<int> unexpected{0}; // both failed, or a coroutine threw
  std::mutex mutex;
  std::vector<std::string> errors;  // what they were (Catch2's macros are for the main thread)
  void note(std::string what) {
    ++unexpected;
    std::lock_guard lock(mutex);
    errors.push_back(std::move(what));
  }
};

/// Paths `holder` holds for the whole run (the waits there end by the timer).
struct held_locks {
  std::string mutex_path, semaphore_path, election_path;
  lock_guard mutex_guard, semaphore_guard;
  std::optional<leadership> leader;
};

inline held_locks hold_locks(session& holder, const std::string& prefix) {
  held_locks h;
  h.mutex_path = prefix + "-held-mutex";
  h.semaphore_path = prefix + "-held-semaphore";
  h.election_path = prefix + "-held-election";
  mutex m(holder, h.mutex_path);
  h.mutex_guard = m.async_acquire(asio::use_future).get();
  semaphore sem(holder, h.semaphore_path, 1);
  h.semaphore_guard = sem.async_acquire(asio::use_future).get();
  election e(holder, h.election_path, "holder");
  h.leader.emplace(e.async_campaign(asio::use_future).get());
  return h;
}

/// One coroutine's rounds: round r races operation kind r % kinds.
inline asio::awaitable<void> cancel_race_rounds(session& s, const held_locks& held, std::string prefix, int rounds,
                                                unsigned seed, cancel_race_counts& counts) {
  auto ex = co_await asio::this_coro::executor;
  std::minstd_rand rng(seed);
  asio::steady_timer timer(ex);
  int round = 0;
  // 0-3 ms: the wait on a held lock is cancelled at every step of its way; 0-30 ms on a fresh
  // path: the operation wins about half the time.
  auto race = [&](auto op, bool fresh_path = false) -> asio::awaitable<void> {
    timer.expires_after(std::chrono::microseconds(rng() % (fresh_path ? 30000 : 3000)));
    try {
      auto r = co_await (std::move(op) || timer.async_wait(asio::use_awaitable));
      (r.index() == 0 ? counts.op_won : counts.timer_won)++;
    } catch (const boost::system::system_error& e) {
      // Both failed: the operation's own error came first.
      counts.note("round " + std::to_string(round) + ": " + e.code().message());
    }
  };
  for (int r = 0; r < rounds; ++r) {
    round = r;
    const std::string fresh = prefix + "-" + std::to_string(r);
    switch (r % 10) {
      case 0: {  // a mutex on a fresh path: the acquire (parents created) or the timer
        mutex m(s, fresh);
        co_await race([&]() -> asio::awaitable<void> {
          auto g = co_await m.async_acquire(asio::use_awaitable);
          co_await g.async_release(asio::use_awaitable);
        }(), true);
        break;
      }
      case 1: {  // waiting behind the holder: the timer wins, the cancellation deletes our node
        mutex m(s, held.mutex_path);
        co_await race([&]() -> asio::awaitable<void> { co_await m.async_acquire(asio::use_awaitable); }());
        break;
      }
      case 2: {  // a local-queue mutex
        mutex_options o;
        o.local_queue = true;
        mutex m(s, fresh, o);
        co_await race([&]() -> asio::awaitable<void> {
          auto g = co_await m.async_acquire(asio::use_awaitable);
          co_await g.async_release(asio::use_awaitable);
        }(), true);
        break;
      }
      case 3: {  // shared_mutex, writer behind a held path's reader? fresh: either wins
        shared_mutex m(s, fresh);
        co_await race([&]() -> asio::awaitable<void> {
          auto g = co_await m.async_acquire_shared(asio::use_awaitable);
          co_await g.async_release(asio::use_awaitable);
        }(), true);
        break;
      }
      case 4: {  // semaphore full (the holder's lease)
        semaphore sem(s, held.semaphore_path, 1);
        co_await race([&]() -> asio::awaitable<void> { co_await sem.async_acquire(asio::use_awaitable); }());
        break;
      }
      case 5: {  // multi_lock: a fresh path, then the held one
        multi_lock ml(s, std::vector<std::string>{fresh, held.mutex_path});
        co_await race([&]() -> asio::awaitable<void> { co_await ml.async_acquire(asio::use_awaitable); }());
        break;
      }
      case 6: {  // campaign behind the holder's leadership, and an observer of that election
        election e(s, held.election_path, "racer");
        co_await race([&]() -> asio::awaitable<void> { co_await e.async_campaign(asio::use_awaitable); }());
        auto now = co_await e.async_leader(asio::use_awaitable);
        co_await race([&]() -> asio::awaitable<void> { co_await e.async_observe(now, asio::use_awaitable); }());
        break;
      }
      case 7: {  // session waits: a state change that does not come, a watch that does not fire
        co_await race([&]() -> asio::awaitable<void> {
          co_await s.async_wait_state(session_state::connected, asio::use_awaitable);
        }());
        // (a watch is set on the session's executor: documented)
        auto w = co_await asio::co_spawn(s.get_executor(), [&]() -> asio::awaitable<watch> {
          watch w;
          co_await s.async_exists(held.mutex_path, w, asio::use_awaitable);
          co_return w;
        }, asio::use_awaitable);
        co_await race([&]() -> asio::awaitable<void> { co_await w.async_wait(asio::use_awaitable); }());
        co_await s.async_remove_watch(w, asio::as_tuple(asio::use_awaitable));
        break;
      }
      case 8: {  // a guard's waits: lost and the deadline (neither comes), then its release
        mutex m(s, fresh);
        auto g = co_await m.async_acquire(asio::use_awaitable);
        co_await race([&]() -> asio::awaitable<void> { co_await g.async_wait_lost(asio::use_awaitable); }());
        co_await race([&]() -> asio::awaitable<void> {
          co_await g.async_wait_deadline(std::chrono::milliseconds(1), asio::use_awaitable);
        }());
        co_await g.async_release(asio::use_awaitable);
        break;
      }
      case 9: {  // requests: a create (with its parents) and a read
        co_await race([&]() -> asio::awaitable<void> {
          co_await s.async_create(fresh, "", create_mode::ephemeral, asio::as_tuple(asio::use_awaitable));
        }(), true);
        co_await race([&]() -> asio::awaitable<void> {
          co_await s.async_get_children(held.mutex_path, asio::use_awaitable);
        }(), true);
        break;
      }
    }
  }
  ++counts.finished;
}

/// Runs `coroutines` coroutines of `rounds` rounds on `ioc` (run by other threads), `s` on its
/// strand; waits for them (up to `limit`). The counts say what happened. `on_strands`: each
/// coroutine on a strand of its own (never the session's) instead of the io_context itself.
/// Asio's parallel group is not thread-safe on an executor that runs its arms at once
/// (chriskohlhoff/asio#1348: the winner's completion emits the loser's cancellation while the
/// loser, completing on another thread, clears its slot; ThreadSanitizer sees it in Asio's own
/// code, 2 of 20 runs here): on a strand its arms take turns, and the cancellation still reaches
/// the library from another thread than the session's.
inline void run_cancel_races(asio::io_context& ioc, session& s, const held_locks& held, const std::string& prefix,
                             int coroutines, int rounds, cancel_race_counts& counts,
                             std::chrono::seconds limit = 120s, bool on_strands = false) {
  for (int k = 0; k < coroutines; ++k)
    asio::co_spawn(on_strands ? asio::any_io_executor(asio::make_strand(ioc)) : asio::any_io_executor(ioc.get_executor()),
                   cancel_race_rounds(s, held, prefix + "/c" + std::to_string(k), rounds, 1234u + k, counts),
                   [&counts](std::exception_ptr e) {
                     if (!e) return;
                     try {
                       std::rethrow_exception(e);
                     } catch (const std::exception& x) {
                       counts.note(std::string("coroutine: ") + x.what());
                     }
                   });
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (counts.finished < coroutines && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
}

}  // namespace zklock::test
