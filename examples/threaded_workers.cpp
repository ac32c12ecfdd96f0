// One zklock session in a multi-threaded program: an io_context run by 4 threads, the session
// on a strand of it, worker coroutines on the io_context itself (any of the 4 threads), and
// main() calling in with asio::use_future. The README's "Threads" section gives the rules: every
// operation may be started from any thread (it is dispatched to the session's strand); handlers
// run on their own executor; a lock object is not used by two threads at the same moment.
//
//   threaded_workers [HOSTS] [PATH]      (default 127.0.0.1:2181 /zklock-examples/threaded)
#include <zklock/metrics.hpp>
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <cstring>
#include <future>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace asio = boost::asio;

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::cout << "usage: threaded_workers [HOSTS] [PATH]\n";
    return 0;
  }
  zklock::session_options options;
  options.connect = argc > 1 ? argv[1] : "127.0.0.1:2181";
  const std::string path = argc > 2 ? argv[2] : "/zklock-examples/threaded";
  constexpr int threads = 4, workers = 8, rounds = 5;

  asio::io_context ioc;
  auto work = asio::make_work_guard(ioc);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });

  int rc = 0;
  {
    zklock::session session{asio::make_strand(ioc), options};  // the session's executor: a strand
    try {
      session.async_connect(asio::use_future).get();  // main blocks; the pool does the work
    } catch (const std::exception& e) {
      std::cerr << "threaded_workers: connect to " << options.connect << ": " << e.what() << "\n";
      rc = 1;
    }
    if (rc == 0) {
      // One mutex object per coroutine: an object is not for two threads at once.
      std::atomic<int> inside{0}, most_inside{0};
      long counter = 0;  // guarded by the ZooKeeper lock alone
      std::mutex ids_mutex;
      std::set<std::thread::id> ran_on;
      std::vector<std::future<void>> done;
      for (int w = 0; w < workers; ++w) {
        done.push_back(asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
          zklock::mutex lock{session, path};
          for (int r = 0; r < rounds; ++r) {
            auto guard = co_await lock.async_acquire(asio::use_awaitable);  // resumes on any pool thread
            int now = ++inside;
            for (int seen = most_inside; now > seen && !most_inside.compare_exchange_weak(seen, now);) {}
            {
              std::lock_guard<std::mutex> lk(ids_mutex);
              ran_on.insert(std::this_thread::get_id());
            }
            ++counter;
            --inside;
            co_await guard.async_release(asio::use_awaitable);
          }
        }, asio::use_future));
      }
      for (auto& f : done) f.get();  // rethrows a worker's exception
      std::cout << workers << " coroutines x " << rounds << " acquisitions on " << threads
                << " threads: counter=" << counter << ", at most " << most_inside << " inside, ran on "
                << ran_on.size() << " thread(s)\n";

      // main itself: acquire, look at the queue, release, all through futures
      zklock::mutex lock{session, path};
      zklock::lock_guard guard = lock.async_acquire(asio::use_future).get();
      auto queue = lock.async_contenders(asio::use_future).get();
      std::cout << "main: holds " << guard.node_path() << " (fencing token " << guard.fencing_token()
                << ", queue of " << queue.size() << ")\n";
      guard.async_release(asio::use_future).get();

      // lock_metrics() may be read from any thread
      for (const auto& p : session.lock_metrics().paths)
        std::cout << "metrics: " << p.path << ": " << p.acquires_granted << " grants, " << p.handoffs_remote
                  << " after a wait, " << p.releases << " releases\n";
      session.async_close(asio::use_future).get();
      if (counter != workers * rounds || most_inside != 1) rc = 1;
    }
  }  // the session is destroyed on main: fine, it closes through its strand
  work.reset();
  for (auto& t : pool) t.join();
  return rc;
}
