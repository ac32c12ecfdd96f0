// The smallest zklock program: connect, take a lock, do work, release.
//   acquire_release [HOSTS] [PATH]
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstring>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<void> run(std::string hosts, std::string path) {
  auto ex = co_await asio::this_coro::executor;
  zklock::session_options options;
  options.connect = hosts;
  zklock::session session{ex, options};
  co_await session.async_connect(asio::use_awaitable);

  zklock::mutex lock{session, path};
  auto guard = co_await lock.async_acquire(asio::use_awaitable);  // resumes when our turn comes
  std::cout << "holding " << guard.node_path() << " fencing token " << guard.fencing_token() << "\n";
  // ... critical section: send guard.fencing_token() with every write to the protected resource ...
  co_await guard.async_release(asio::use_awaitable);
  std::cout << "released\n";
  co_await session.async_close(asio::use_awaitable);
}

int main(int argc, char** argv) {
  if (argc > 3 || (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0))) {
    bool help = argc <= 3;
    (help ? std::cout : std::cerr) << "usage: acquire_release [HOSTS] [PATH]\n"
                                      "  connect to HOSTS (default 127.0.0.1:2181), take the lock PATH\n"
                                      "  (default /locks/example), print the fencing token, release\n";
    return help ? 0 : 2;
  }
  std::string hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  std::string path = argc > 2 ? argv[2] : "/locks/example";
  asio::io_context ioc;
  asio::co_spawn(ioc, run(hosts, path), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const boost::system::system_error& err) {
      std::cerr << "error: " << err.code().message() << "\n";
      std::exit(1);
    }
  });
  ioc.run();
}
