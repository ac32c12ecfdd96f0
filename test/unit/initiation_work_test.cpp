// "A pending operation keeps its handler's io_context running" (README, "Completion"): the
// handler's associated executor counts outstanding work from the initiating function on, as
// Asio's own operations do, also when the operation is started from a thread that is not the
// session's (the operation then reaches the engine through a post).
//
// The session's io_context does not run while the handlers' io_context is polled, so each
// operation is still on its way to the engine: a handler io_context with no counted work stops
// at once (poll() stops it when its outstanding work is 0).
#include <zklock/election.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/revoke.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace zklock;
namespace asio = boost::asio;

TEST_CASE("an operation started off the session's executor counts its handler's work from initiation",
          "[unit][completion]") {
  using start_fn = std::function<void(session&, asio::io_context&, int&)>;
  // Each starts one operation whose handler is bound to the handlers' io_context.
  auto any = [](asio::io_context& h, int& done) {
    return asio::bind_executor(h, [&done](auto&&...) { ++done; });
  };
  std::vector<std::pair<std::string, start_fn>> ops = {
      {"session::async_connect", [&](session& s, asio::io_context& h, int& d) { s.async_connect(any(h, d)); }},
      {"session::async_get_data", [&](session& s, asio::io_context& h, int& d) { s.async_get_data("/a", any(h, d)); }},
      {"session::async_create",
       [&](session& s, asio::io_context& h, int& d) { s.async_create("/a", "", create_mode::persistent, any(h, d)); }},
      {"session::async_close", [&](session& s, asio::io_context& h, int& d) { s.async_close(any(h, d)); }},
      {"mutex::async_acquire", [&](session& s, asio::io_context& h, int& d) { mutex(s, "/l").async_acquire(any(h, d)); }},
      {"mutex::async_contenders",
       [&](session& s, asio::io_context& h, int& d) { mutex(s, "/l").async_contenders(any(h, d)); }},
      {"shared_mutex::async_acquire_shared",
       [&](session& s, asio::io_context& h, int& d) { shared_mutex(s, "/l").async_acquire_shared(any(h, d)); }},
      {"semaphore::async_acquire",
       [&](session& s, asio::io_context& h, int& d) { semaphore(s, "/l", 2).async_acquire(any(h, d)); }},
      {"multi_lock::async_acquire",
       [&](session& s, asio::io_context& h, int& d) { multi_lock(s, std::vector<std::string>{"/l1", "/l2"}).async_acquire(any(h, d)); }},
      {"election::async_campaign",
       [&](session& s, asio::io_context& h, int& d) { election(s, "/e", "me").async_campaign(any(h, d)); }},
      {"async_request_revoke", [&](session& s, asio::io_context& h, int& d) { async_request_revoke(s, "/l/n", any(h, d)); }},
  };
  for (auto& [name, start] : ops) {
    INFO(name);
    asio::io_context ioc;      // the session's: not running until the end
    asio::io_context handlers; // the handler's
    session s(ioc, session_options{.connect = "127.0.0.1:1", .connect_timeout = std::chrono::milliseconds(200)});
    int done = 0;
    start(s, handlers, done);
    handlers.poll();
    CHECK_FALSE(handlers.stopped());  // its work is counted: it does not run out of work
    CHECK(done == 0);
    // Let the operation run and complete (not connected, a path error, or the connect's time
    // limit), then its handler.
    ioc.run_for(std::chrono::seconds(2));
    handlers.run_for(std::chrono::seconds(2));
    CHECK(done == 1);
  }
}
