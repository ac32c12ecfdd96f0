// Regression tests for bugs the fault harness (test/fault) found, each reduced to one fault.
#include "common.hpp"

using namespace zklock;
using zklock::test::zk_server;

TEST_CASE("a release that completed with release_pending still deletes the node after the reconnect, its guard gone",
          "[integration][fault]") {
  // Found by zklock-faultharness (kill-leader, pause-server-short, cut): the node stayed for the
  // life of the session and every waiter queued behind it.
  zk_server srv;
  asio::io_context ioc;
  zklock::test::tcp_proxy proxy(ioc.get_executor(), srv.port());
  session s(ioc.get_executor(), options_for(proxy.connect_string(), 8000ms));
  session other(ioc.get_executor(), options_for(srv.connect_string()));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    co_await other.async_connect(asio::use_awaitable);
    auto id = s.session_id();
    mutex m(s, "/locks/pending");
    {
      auto g = co_await m.async_acquire(asio::use_awaitable);
      proxy.set_accepting(false);
      proxy.drop_all();
      co_await await_state(s, session_state::suspended);
      auto [ec] = co_await g.async_release(tuple_awaitable);
      CHECK(ec == errc::release_pending);
    }  // the guard goes: nothing of the caller's keeps the hold
    proxy.set_accepting(true);
    co_await await_state(s, session_state::reconnected);
    REQUIRE(s.session_id() == id);  // same session: only our delete can remove the node
    mutex om(other, "/locks/pending");
    std::size_t left = 1;
    for (int i = 0; i < 100 && left; ++i) {
      auto [gec, kids] = co_await other.async_get_children("/locks/pending", tuple_awaitable);
      left = gec ? 0 : kids.children.size();
      if (left) co_await sleep_for(50ms);
    }
    CHECK(left == 0);
    auto [tec, og] = co_await om.async_try_acquire(tuple_awaitable);
    CHECK_FALSE(tec);
    if (!tec) co_await og.async_release(asio::use_awaitable);
  }(), 60s);
}
