// The code examples of the public headers' comments, compiled. Each header with a backticked
// example in its comments has a region here named after it (`// [zklock/mutex.hpp]`) that holds
// every such example verbatim (check_snippets.py, ctest -R snippets, checks it). Compiled, not
// run, by the zklock_snippets target of the test build.
#include <zklock/election.hpp>
#include <zklock/error.hpp>
#include <zklock/lock_guard.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <future>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;

namespace header_examples {

// [zklock/detail/pending.hpp]
// Operations may start on any thread: a mutex acquired with use_future from main while another
// thread runs the session's io_context.
zklock::lock_guard acquire_from_main(zklock::mutex& m) {
  std::future<zklock::lock_guard> guard = m.async_acquire(asio::use_future);
  return guard.get();
}
// [zklock/detail/pending.hpp]

// [zklock/error.hpp]
// A return code `rc` of the C client:
zklock::error_code from_c_client(int rc) {
  using namespace zklock;
  return make_error_code(static_cast<zk_errc>(rc));
}

bool session_ended(zklock::error_code ec) {
  if (ec == zklock::condition::session_lost) return true;
  return false;
}
// [zklock/error.hpp]

// [zklock/election.hpp]
// leadership::guarded: a transaction that applies only while we lead.
asio::awaitable<void> leader_write(zklock::session& s, const zklock::leadership& l, std::vector<zklock::multi_op> ops) {
  co_await s.async_multi(l.guarded(std::move(ops)), asio::use_awaitable);
}
// [zklock/election.hpp]

// [zklock/lock_guard.hpp]
// lock_guard::guarded: a transaction that applies only while the lock is ours.
asio::awaitable<void> guarded_write(zklock::session& s, const zklock::lock_guard& guard, std::vector<zklock::multi_op> ops) {
  co_await s.async_multi(guard.guarded(std::move(ops)), asio::use_awaitable);
}

// lock_guard::lost_slot: the critical section's work is cancelled when the lock is lost.
asio::awaitable<void> work_while_held(asio::steady_timer& work, const zklock::lock_guard& guard) {
  auto token = asio::use_awaitable;
  co_await work.async_wait(asio::bind_cancellation_slot(guard.lost_slot(), token));
}
// [zklock/lock_guard.hpp]

// [zklock/mutex.hpp]
// basic_mutex's converting constructor: a mutex whose operations need no token.
asio::awaitable<void> mutex_without_tokens(zklock::session& s) {
  zklock::mutex m{s, "/locks/a"};
  auto awaitable_mutex = asio::use_awaitable.as_default_on(std::move(m));
  zklock::lock_guard guard = co_await awaitable_mutex.async_acquire();
  co_await guard.async_release();
}

// async_acquire_for's equivalent idioms: a timer's expiry cancels the acquire, with
// `asio::experimental::make_parallel_group`...
void acquire_or_give_up(zklock::mutex& m, asio::steady_timer& timer) {
  asio::experimental::make_parallel_group(m.async_acquire(asio::deferred), timer.async_wait(asio::deferred))
      .async_wait(asio::experimental::wait_for_one(),
                  // order[0] == 0: the acquire completed first (its error_code says how); 1: the
                  // timer did, and the acquire completed with operation_aborted, its node deleted
                  [](std::array<std::size_t, 2> /*order*/, zklock::error_code /*ec*/, zklock::lock_guard /*guard*/,
                     zklock::error_code /*timer_ec*/) {});
}

// ... or `||` of awaitable_operators.
asio::awaitable<void> acquire_or_time_out(zklock::mutex& m) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer{co_await asio::this_coro::executor, std::chrono::seconds(2)};
  auto first = co_await (m.async_acquire(asio::use_awaitable) || timer.async_wait(asio::use_awaitable));
  if (first.index() == 0) {
    zklock::lock_guard guard = std::move(std::get<0>(first));
    co_await guard.async_release(asio::use_awaitable);
  }
}
// [zklock/mutex.hpp]

// [zklock/path.hpp]
bool join_path_examples() {
  return zklock::join_path("/a", "b") == "/a/b" && zklock::join_path("/", "b") == "/b";
}
// [zklock/path.hpp]

// [zklock/session.hpp]
// basic_session's rebind_executor and converting constructor: a session whose operations need
// no token, declared (asio::use_awaitable_t<>::as_default_on_t) or converted.
asio::awaitable<void> sessions_without_tokens(asio::io_context& ioc) {
  asio::use_awaitable_t<>::as_default_on_t<zklock::session> declared{ioc};
  co_await declared.async_connect();
  zklock::session s{ioc};
  auto converted = asio::use_awaitable.as_default_on(std::move(s));
  co_await converted.async_connect();
}
// [zklock/session.hpp]

}  // namespace header_examples
