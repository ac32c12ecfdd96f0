// A guard with no hold (default-constructed, or moved from) has no executor of its own: its
// operations still complete later, never inline, on the handler's associated executor
// (post_completion through the system executor, include/zklock/detail/pending.hpp).
#include <zklock/lock_guard.hpp>
#include <zklock/multi_lock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>

using namespace zklock;
namespace asio = boost::asio;

TEST_CASE("an empty guard's operations complete with already_released, never inline, on the handler's executor",
          "[unit][guard]") {
  asio::io_context ioc;
  int done = 0;
  auto expect = [&](const char* what) {
    return asio::bind_executor(ioc, [&done, &ioc, what](error_code ec) {
      INFO(what);
      CHECK(ec == errc::already_released);
      CHECK(ioc.get_executor().running_in_this_thread());
      ++done;
    });
  };
  lock_guard empty;
  empty.async_release(expect("async_release"));
  lock_guard empty2;
  empty2.async_wait_lost(expect("async_wait_lost"));
  empty2.async_wait_deadline(std::chrono::seconds(1), expect("async_wait_deadline"));
  empty2.async_wait_revoked(expect("async_wait_revoked"));
  empty2.async_downgrade(expect("async_downgrade"));
  multi_guard none;
  none.async_release(expect("multi_guard::async_release"));
  CHECK(done == 0);  // none inline
  ioc.run_for(std::chrono::seconds(5));  // the handlers' work keeps run() going until they ran
  CHECK(done == 6);
}
