// The code examples of the public headers' comments, compiled. Each header with a backticked
// example in its comments has a region here named after it (`// [zklock/mutex.hpp]`) that holds
// every such example verbatim (check_snippets.py, ctest -R snippets, checks it). Compiled, not
// run, by the zklock_snippets target of the test build.
#include <zklock/error.hpp>
#include <zklock/lock_guard.hpp>
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;

namespace header_examples {

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

// [zklock/lock_guard.hpp]
// lock_guard::guarded: a transaction that applies only while the lock is ours.
asio::awaitable<void> guarded_write(zklock::session& s, const zklock::lock_guard& guard, std::vector<zklock::multi_op> ops) {
  co_await s.async_multi(guard.guarded(std::move(ops)), asio::use_awaitable);
}
// [zklock/lock_guard.hpp]

}  // namespace header_examples
