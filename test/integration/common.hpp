// Helpers for integration tests: run a coroutine on an io_context with a deadline.
#pragma once

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <catch2/catch.hpp>

#include "tcp_proxy.hpp"
#include "zk_server.hpp"

#include <chrono>
#include <dirent.h>
#include <exception>
#include <regex>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

inline constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// Runs `aw` to completion on `ioc` (on this thread); fails the test after `limit`.
template <class Awaitable>
void run_test(asio::io_context& ioc, Awaitable aw, std::chrono::seconds limit = 60s) {
  std::exception_ptr failure;
  bool done = false;
  asio::co_spawn(ioc, std::move(aw), [&](std::exception_ptr e) {
    failure = e;
    done = true;
  });
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    ioc.run_for(100ms);
    if (ioc.stopped()) ioc.restart();
  }
  if (!done) FAIL("test coroutine did not finish within " << limit.count() << " s");
  if (failure) std::rethrow_exception(failure);
}

inline zklock::session_options options_for(const std::string& connect,
                                           std::chrono::milliseconds session_timeout = 4000ms) {
  zklock::session_options o;
  o.connect = connect;
  o.session_timeout = session_timeout;
  o.connect_timeout = 10s;
  o.log_threshold = zklock::log_level::error;
  return o;
}

inline int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

inline asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

/// Expires `s` (connected through `proxy`) for certain: cut it off, attach a second handle to
/// its session directly and close that, then let `s` reconnect and learn it expired.
inline asio::awaitable<void> expire_session(zklock::session& s, zklock::test::tcp_proxy& proxy,
                                            const std::string& direct_connect) {
  auto creds = s.credentials();
  proxy.set_accepting(false);
  proxy.drop_all();
  auto opts = options_for(direct_connect, 4000ms);
  opts.resume = creds;
  zklock::session thief(co_await asio::this_coro::executor, opts);
  co_await thief.async_connect(asio::use_awaitable);
  co_await thief.async_close(asio::use_awaitable);
  proxy.set_accepting(true);
}

/// Waits until the session reaches `want` (or fails the test after `limit`).
inline asio::awaitable<void> await_state(zklock::session& s, zklock::session_state want,
                                         std::chrono::steady_clock::duration limit = 30s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto seen = s.state();
  while (seen != want) {
    if (std::chrono::steady_clock::now() > deadline) {
      FAIL("session state " << zklock::to_string(seen) << ", waited for " << zklock::to_string(want));
    }
    asio::steady_timer t(co_await asio::this_coro::executor, 100ms);
    using namespace asio::experimental::awaitable_operators;
    auto r = co_await (s.async_wait_state(seen, tuple_awaitable) || t.async_wait(tuple_awaitable));
    if (r.index() == 0) seen = std::get<1>(std::get<0>(r));
    seen = s.state();
  }
}

/// Number of watches the server holds (4lw "wchs": "... watching N paths\nTotal watches:N").
inline int server_watches(const zklock::test::zk_server& srv) {
  auto out = srv.four_letter("wchs");
  UNSCOPED_INFO(srv.four_letter("wchc"));
  std::smatch m;
  if (std::regex_search(out, m, std::regex("Total watches:(\\d+)"))) return std::stoi(m[1]);
  return -1;
}
