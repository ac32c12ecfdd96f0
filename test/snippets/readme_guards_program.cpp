// The README's Guards section ("Guards and their status") as a whole program, run against a
// throwaway server by run_first_program.py --completes: the block must finish on a healthy
// session (async_wait_deadline alone never completes there). The region is the README's block.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

// The resource the lock guards: takes a while, rejects older tokens (here: prints the token).
asio::awaitable<void> write_report(std::int64_t fencing_token) {
  asio::steady_timer work{co_await asio::this_coro::executor, std::chrono::milliseconds(200)};
  co_await work.async_wait(asio::use_awaitable);
  std::cout << "report written with token " << fencing_token << "\n";
}

asio::awaitable<void> guard_concepts(zklock::mutex& lock) {
  // [readme-guard-concepts]
  auto guard = co_await lock.async_acquire(asio::use_awaitable);
  if (guard.status() == zklock::lock_status::held)                 // held, maybe_lost, lost, released
    co_await write_report(guard.fencing_token());                  // the resource rejects older tokens
  auto left = guard.valid_until() - std::chrono::steady_clock::now();  // time we surely still hold it
  // async_wait_deadline completes 1 s before the deadline if ZooKeeper stops answering (or with
  // errc::lock_lost): on a healthy session, never. Race it with the work it guards:
  co_await (write_report(guard.fencing_token()) ||
            guard.async_wait_deadline(std::chrono::seconds(1), asio::use_awaitable));
  // [readme-guard-concepts]
  std::cout << "held for at least " << std::chrono::duration_cast<std::chrono::milliseconds>(left).count()
            << " ms more\n";
  co_await guard.async_release(asio::use_awaitable);
}

asio::awaitable<void> run(std::string hosts) {
  zklock::session_options options;
  options.connect = hosts;
  zklock::session session{co_await asio::this_coro::executor, options};
  co_await session.async_connect(asio::use_awaitable);
  zklock::mutex lock{session, "/locks/readme-guards"};
  co_await guard_concepts(lock);
  co_await session.async_close(asio::use_awaitable);
}

int main(int argc, char** argv) {
  asio::io_context ioc;
  auto finished = asio::co_spawn(ioc, run(argc > 1 ? argv[1] : "127.0.0.1:2181"), asio::use_future);
  ioc.run();
  finished.get();  // rethrows what the block threw: the test then fails
  std::cout << "done\n";
}
