// Probes of a stall, for the tests that show one session blocks nothing: an io_context run by a
// thread of its own, a thread that calls into the C client every millisecond (each call takes
// the lock of the process), and a periodic timer that records how late it fired.
#pragma once

#include <zklock/session.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace zklock::test {

// An io_context run by a thread of its own.
struct loop_thread {
  boost::asio::io_context ioc;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work = boost::asio::make_work_guard(ioc);
  std::thread t{[this] { ioc.run(); }};
  ~loop_thread() {
    work.reset();
    ioc.stop();
    t.join();
  }
};

// Calls into the C client on a thread of its own (`s.session_id()` takes the lock of the
// process), every millisecond; the longest a call took.
struct caller_thread {
  std::atomic<bool> stop{false};
  std::atomic<long> longest_us{0};
  std::thread t;
  explicit caller_thread(zklock::session& s)
      : t([this, &s] {
          while (!stop) {
            auto t0 = std::chrono::steady_clock::now();
            (void)s.session_id();
            long us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
            longest_us = std::max<long>(longest_us, us);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  ~caller_thread() {
    stop = true;
    t.join();
  }
};

// A 10 ms periodic timer on `ioc`: the longest it fired late.
struct ticker {
  boost::asio::steady_timer timer;
  std::chrono::steady_clock::time_point due;
  long latest_us = 0;
  bool stopped = false;
  explicit ticker(boost::asio::io_context& ioc) : timer(ioc) { arm(); }
  void arm() {
    due = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
    timer.expires_at(due);
    timer.async_wait([this](boost::system::error_code ec) {
      if (ec || stopped) return;
      latest_us = std::max<long>(latest_us, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - due).count());
      arm();
    });
  }
  void stop() {
    stopped = true;
    timer.cancel();
  }
};

}  // namespace zklock::test
