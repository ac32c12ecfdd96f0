// A test helper for `zklock locks`: one session takes the mutex FIRST, then, after a line on
// its standard input, waits for SECOND (a lock order two of them can deadlock on).
//   hold_then_wait HOSTS FIRST SECOND
// Prints "holding FIRST" once it holds FIRST, "holding SECOND" if it ever gets SECOND; runs
// until SIGTERM or SIGINT.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <cstdio>
#include <unistd.h>
#include <string>

namespace asio = boost::asio;

asio::awaitable<void> run(std::string hosts, std::string first, std::string second) {
  auto ex = co_await asio::this_coro::executor;
  zklock::session_options options;
  options.connect = hosts;
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

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: hold_then_wait HOSTS FIRST SECOND\n");
    return 2;
  }
  asio::io_context ioc;
  asio::signal_set stop(ioc, SIGTERM, SIGINT);
  stop.async_wait([&](auto, int) { ioc.stop(); });
  asio::co_spawn(ioc, run(argv[1], argv[2], argv[3]), [&](std::exception_ptr e) {
    if (e) {
      std::fprintf(stderr, "hold_then_wait: failed\n");
      ioc.stop();
    }
  });
  ioc.run();
}
