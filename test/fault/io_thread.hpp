// The harness's io_context (its proxies, its journal's listener) run on a thread of its own,
// stopped and joined when the io_thread goes out of scope however the scope ends: an exception
// in a run (a member that would not start again) is then reported by the pass, where a joinable
// std::thread's destructor would end the whole harness with std::terminate.
#pragma once

#include <boost/asio/io_context.hpp>

#include <thread>

namespace zklock::fault {

class io_thread {
 public:
  explicit io_thread(boost::asio::io_context& ioc) : ioc_(ioc), thread_([&ioc] { ioc.run(); }) {}
  io_thread(const io_thread&) = delete;
  io_thread& operator=(const io_thread&) = delete;
  ~io_thread() { stop(); }

  // Stops the io_context and joins its thread (once).
  void stop() {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  boost::asio::io_context& ioc_;
  std::thread thread_;
};

}  // namespace zklock::fault
