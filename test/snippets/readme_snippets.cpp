// The C++ code blocks of the Markdown documentation (README.md, docs/, examples/, apps/),
// compiled. Each block is a region of this file between two `// [name]` lines, character for
// character once the region's common indentation is removed: check_snippets.py (ctest -R
// snippets) fails when a ```cpp block has no such region, or a region no block. A fragment's
// surroundings (includes, the variables it uses, the coroutine around it) stay outside the
// markers. Compiled, not run, by the zklock_snippets target of the test build.
#include <zklock/election.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace asio = boost::asio;

namespace readme {

// README.md, the concepts (a guard's status, its validity deadline): a whole program,
// readme_guards_program.cpp, run by the snippet tests.
void read_report(const std::string& name);
asio::awaitable<void> write_report(std::int64_t fencing_token);

// README.md, the shared lock.
asio::awaitable<void> shared_lock(zklock::session& session) {
  // [readme-shared-lock]
  zklock::shared_mutex reports{session, "/locks/reports"};
  auto reader = co_await reports.async_acquire_shared(asio::use_awaitable);  // with other readers
  read_report("daily");
  co_await reader.async_release(asio::use_awaitable);
  auto writer = co_await reports.async_acquire(asio::use_awaitable);         // alone
  co_await write_report(writer.fencing_token());
  co_await writer.async_downgrade(asio::use_awaitable);  // now a reader: waiting readers come in
  // [readme-shared-lock]
}

// README.md, the semaphore.
asio::awaitable<void> encode_video();
asio::awaitable<void> semaphore(zklock::session& session) {
  // [readme-semaphore]
  zklock::semaphore encoders{session, "/locks/encoders", 2};  // at most 2 holders at once
  auto lease = co_await encoders.async_acquire(asio::use_awaitable);
  co_await encode_video();
  co_await lease.async_release(asio::use_awaitable);
  // [readme-semaphore]
}

// README.md, leader election.
asio::awaitable<void> run_scheduler(asio::cancellation_slot stop_when_lost);
asio::awaitable<void> election(zklock::session& session) {
  // [readme-election]
  zklock::election scheduler{session, "/elections/scheduler", "web-1"};
  auto leadership = co_await scheduler.async_campaign(asio::use_awaitable);  // once we lead
  co_await run_scheduler(leadership.lost_slot());  // cancelled if leadership is lost
  co_await leadership.async_resign(asio::use_awaitable);
  // [readme-election]
}

// README.md, several locks as one.
asio::awaitable<void> multi(zklock::session& session) {
  // [readme-multi-lock]
  std::vector<std::string> accounts{"/locks/accounts/a", "/locks/accounts/b"};
  zklock::multi_lock both{session, accounts};
  auto guards = co_await both.async_acquire(asio::use_awaitable);  // all or nothing, in path order
  // ... move money between a and b ...
  co_await guards.async_release(asio::use_awaitable);
  // [readme-multi-lock]
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
#include <vector>
#include <string_view>

namespace readme {

void page_someone(std::string_view lock_path);

// README.md, Metrics.
std::string metrics(asio::io_context& ioc) {
  // [readme-metrics]
  zklock::session_options options;
  options.connect = "zk1:2181,zk2:2181,zk3:2181/app";
  options.lock_metrics.max_paths = 50;   // (path, kind) pairs counted one by one; the rest as "(other)"
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
