// Interop contender: zklock::mutex, same protocol as CuratorContender and kazoo_contender.py.
//   zklock_contender CONNECT PATH CYCLES LOGFILE WHO
#include "exclusion_log.hpp"

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <iostream>

namespace asio = boost::asio;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: zklock_contender CONNECT PATH CYCLES LOGFILE WHO\n";
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
    zklock::mutex m{s, path};
    for (int i = 0; i < cycles; ++i) {
      auto g = co_await m.async_acquire(asio::use_awaitable);
      log.enter(who);
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
      co_await t.async_wait(asio::use_awaitable);
      log.leave(who);
      co_await g.async_release(asio::use_awaitable);
    }
    co_await s.async_close(asio::use_awaitable);
    status = 0;
  }, [](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { std::cerr << "zklock_contender: " << x.what() << "\n"; }
  });
  ioc.run();
  return status;
}
