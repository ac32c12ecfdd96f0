// The C++ code blocks of the Markdown documentation (README.md, docs/, examples/, apps/),
// compiled. Each block is a region of this file between two `// [name]` lines, character for
// character once the region's common indentation is removed: check_snippets.py (ctest -R
// snippets) fails when a ```cpp block has no such region, or a region no block. A fragment's
// surroundings (includes, the variables it uses, the coroutine around it) stay outside the
// markers. Compiled, not run, by the zklock_snippets target of the test build.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdint>

namespace asio = boost::asio;

namespace readme {

struct order_record {
  int id = 0;
};
// The store the README's first program writes to: it rejects writes with a token lower than
// the highest it has seen.
void write_to_store(const order_record& order, std::int64_t fencing_token);

// README.md, the first program.
asio::awaitable<void> first_program(asio::io_context& ioc, order_record order) {
  // [readme-first-program]
  zklock::session_options options;
  options.connect = "zk1:2181,zk2:2181,zk3:2181/app";
  zklock::session session{ioc.get_executor(), options};
  co_await session.async_connect(asio::use_awaitable);

  zklock::mutex lock{session, "/locks/orders/42"};
  auto guard = co_await lock.async_acquire(asio::use_awaitable);   // no thread blocks
  write_to_store(order, guard.fencing_token());                      // the store rejects stale tokens
  co_await guard.async_release(asio::use_awaitable);                 // or let the guard go out of scope
  // [readme-first-program]
}

// README.md, the mutex's local queue.
asio::awaitable<void> local_queue(zklock::session& session) {
  // [readme-local-queue]
  zklock::mutex_options o;
  o.local_queue = true;          // acquires through this mutex object queue locally behind one node
  o.max_local_handoffs = 1;      // consecutive local grants while another process waits (1: fair)
  zklock::mutex lock{session, "/locks/orders/42", o};
  auto guard = co_await lock.async_acquire(asio::use_awaitable);
  // [readme-local-queue]
}

// README.md, the mutex's revocation.
asio::awaitable<void> revocation(zklock::mutex& lock) {
  // [readme-revocation]
  auto guard = co_await lock.async_acquire(asio::use_awaitable);
  co_await guard.async_wait_revoked(asio::use_awaitable);  // someone asked for the lock
  co_await guard.async_release(asio::use_awaitable);       // we agree (or keep it: we decide)
  // [readme-revocation]
}

}  // namespace readme

#include <zklock/metrics.hpp>

#include <string>
#include <string_view>

namespace readme {

void page_someone(std::string_view lock_path);

// README.md, Metrics.
std::string metrics(asio::io_context& ioc) {
  // [readme-metrics]
  zklock::session_options options;
  options.connect = "zk1:2181,zk2:2181,zk3:2181/app";
  options.lock_metrics.max_paths = 500;  // (path, kind) pairs counted one by one; the rest as "(other)"
  options.lock_metrics.on_event = [](const zklock::lock_event& e) {  // on the session's executor
    if (e.type == zklock::lock_event_type::lost) page_someone(e.path);
  };
  zklock::session session{ioc, options};
  // ... from any thread:
  std::string body = zklock::to_prometheus(session.lock_metrics());
  // [readme-metrics]
  return body;
}

}  // namespace readme
