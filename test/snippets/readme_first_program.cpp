// [readme-first-program]
// first.cpp: connect to ZooKeeper, take a lock, use its fencing token, release.
//   g++ first.cpp $(pkg-config --cflags --libs zklock) -o first && ./first 127.0.0.1:2181
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <iostream>
#include <string>

namespace asio = boost::asio;

asio::awaitable<void> run(std::string hosts) {
  auto executor = co_await asio::this_coro::executor;
  zklock::session_options options;
  options.connect = hosts;  // e.g. "zk1:2181,zk2:2181,zk3:2181/app"
  zklock::session session{executor, options};
  co_await session.async_connect(asio::use_awaitable);

  zklock::mutex lock{session, "/locks/orders/42"};
  auto guard = co_await lock.async_acquire(asio::use_awaitable);  // waits for its turn; no thread blocks
  std::cout << "holding " << guard.node_path() << "\n";
  std::cout << "fencing token " << guard.fencing_token() << "\n";  // send it with every write
  co_await guard.async_release(asio::use_awaitable);                // or let the guard go out of scope
  std::cout << "released\n";
  co_await session.async_close(asio::use_awaitable);
}

int main(int argc, char** argv) {
  asio::io_context ioc;
  int status = 0;
  asio::co_spawn(ioc, run(argc > 1 ? argv[1] : "127.0.0.1:2181"), [&](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const boost::system::system_error& error) {  // zklock's errors are error_codes
      std::cerr << "error: " << error.code().message() << "\n";
      status = 1;
    }
  });
  ioc.run();
  return status;
}
// [readme-first-program]
