// Nothing one session does stalls another: a close against a server that stopped answering
// (SIGSTOP), async_close or a destruction, leaves the calling thread at once and completes within
// the close's bound (1 s) while a timer on the same io_context and another session's calls on another
// thread go on; a slow log sink delays its own session only. Against a healthy server, a
// session's ephemeral nodes are gone when async_close completes. Before, zookeeper_close blocked
// ~1.5 s per close, and the log sink ran, under the lock of the process every call into the C
// client takes.
#include "common.hpp"
#include "stall_probes.hpp"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <thread>

using namespace zklock;
using zklock::test::zk_server;

namespace {

using clock_type = std::chrono::steady_clock;

zklock::test::server_options stoppable_server() {
  zklock::test::server_options o;
  o.own_process = true;  // paused: never the tests' shared server
  return o;
}

session_options quiet_session_options(const std::string& connect) {
  auto o = options_for(connect, 4000ms);
  o.log_threshold = log_level::error;  // the unanswered close's warning is expected
  return o;
}

}  // namespace

TEST_CASE("a close against a SIGSTOPped server blocks nothing: a timer on its io_context and another session's calls "
          "on another thread go on, and it completes within its bound",
          "[integration][close][promise]") {
  zk_server stopped(stoppable_server());
  zk_server healthy(stoppable_server());
  zklock::test::loop_thread other;
  session bystander{other.ioc, quiet_session_options(healthy.connect_string())};
  bystander.async_connect(asio::use_future).get();
  for (bool destroy : {false, true}) {
    DYNAMIC_SECTION((destroy ? "destroyed" : "async_close")) {
      asio::io_context ioc;
      std::optional<session> s;
      s.emplace(ioc, quiet_session_options(stopped.connect_string()));
      bool connected = false;
      s->async_connect([&](error_code ec) { connected = !ec; });
      REQUIRE(run_until(ioc, [&] { return connected; }, 20s));
      bool created = false;
      s->async_create("/close-stall", "", create_mode::ephemeral, [&](error_code ec, create_result) { created = !ec; });
      REQUIRE(run_until(ioc, [&] { return created; }, 10s));
      stopped.pause();
      zklock::test::ticker tick(ioc);
      zklock::test::caller_thread caller(bystander);
      std::this_thread::sleep_for(20ms);
      auto t0 = clock_type::now();
      bool closed = false;
      asio::post(ioc, [&] {
        if (destroy) {
          s.reset();
          closed = true;
        } else {
          s->async_close([&](error_code) { closed = true; });
        }
      });
      REQUIRE(run_until(ioc, [&] { return closed; }, 10s, 1ms));
      auto close_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
      // The destroyed session's close goes on in the background: let it end (bound 1 s).
      ioc.run_for(1200ms);
      tick.stop();
      ioc.run_for(50ms);
      std::cout << "close against a SIGSTOPped server (" << (destroy ? "destroyed" : "async_close") << "): completed in "
                << close_ms << " ms; a 10 ms timer on its io_context fired at most " << tick.latest_us / 1000.0
                << " ms late; another session's call on another thread took at most " << caller.longest_us / 1000.0
                << " ms" << std::endl;
      CHECK(close_ms < 3000);  // bound: 1 s
      CHECK(tick.latest_us < 500'000);
      CHECK(caller.longest_us < 500'000);
      stopped.resume();
    }
  }
  bystander.async_close(asio::use_future).get();
}

TEST_CASE("four closes at once against a SIGSTOPped server: a healthy session on another thread keeps its lock",
          "[integration][close][promise]") {
  zk_server stopped(stoppable_server());
  zk_server healthy(stoppable_server());
  zklock::test::loop_thread other;
  // The healthy holder: a short session timeout, so that a stall of its loop would lose it.
  session holder{other.ioc, options_for(healthy.connect_string(), 2000ms)};
  holder.async_connect(asio::use_future).get();
  mutex m(holder, "/close-stall-lock");
  lock_guard g = m.async_acquire(asio::use_future).get();
  std::atomic<int> holder_changes{0};
  // Every state change of the holder (a suspension would be one).
  std::function<void(session_state)> follow = [&](session_state known) {
    holder.async_wait_state(known, [&](error_code ec, session_state now) {
      if (ec || now == session_state::closed) return;
      ++holder_changes;
      follow(now);
    });
  };
  asio::post(other.ioc, [&] { follow(session_state::connected); });

  asio::io_context ioc;
  std::vector<session> closing;
  for (int i = 0; i < 4; ++i) closing.emplace_back(ioc, quiet_session_options(stopped.connect_string()));
  int connected = 0;
  for (auto& s : closing) s.async_connect([&](error_code ec) { connected += !ec; });
  REQUIRE(run_until(ioc, [&] { return connected == 4; }, 20s));
  stopped.pause();
  zklock::test::caller_thread caller(holder);
  zklock::test::ticker tick(ioc);
  std::this_thread::sleep_for(20ms);
  auto t0 = clock_type::now();
  int closed = 0;
  asio::post(ioc, [&] {
    for (auto& s : closing) s.async_close([&](error_code) { ++closed; });
  });
  REQUIRE(run_until(ioc, [&] { return closed == 4; }, 10s, 1ms));
  auto close_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
  tick.stop();
  ioc.run_for(50ms);
  std::this_thread::sleep_for(2500ms);  // longer than the holder's session timeout
  std::cout << "four closes at once against a SIGSTOPped server: all completed in " << close_ms
            << " ms; a 10 ms timer on their io_context fired at most " << tick.latest_us / 1000.0
            << " ms late; a healthy session's call on another thread took at most " << caller.longest_us / 1000.0
            << " ms" << std::endl;
  CHECK(close_ms < 3000);
  CHECK(tick.latest_us < 500'000);
  CHECK(caller.longest_us < 500'000);
  auto status = asio::post(other.ioc, asio::use_future([&] { return g.owns_lock(); })).get();
  CHECK(status);
  CHECK(holder_changes == 0);  // never suspended
  CHECK(holder.state() == session_state::connected);
  stopped.resume();
  g.async_release(asio::use_future).get();
  holder.async_close(asio::use_future).get();
}

TEST_CASE("with a healthy server, a session's ephemeral nodes are gone when async_close completes",
          "[integration][close][promise]") {
  zk_server srv;
  asio::io_context ioc;
  session watcher{ioc, options_for(srv.connect_string())};
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await watcher.async_connect(asio::use_awaitable);
    for (int i = 0; i < 5; ++i) {
      session s{ioc, options_for(srv.connect_string())};
      co_await s.async_connect(asio::use_awaitable);
      const std::string node = "/close-healthy-" + std::to_string(i);
      co_await s.async_create(node, "", create_mode::ephemeral, asio::use_awaitable);
      mutex m(s, "/close-healthy-lock");
      auto g = co_await m.async_acquire(asio::use_awaitable);
      co_await s.async_close(asio::use_awaitable);
      // Read at once, by another session: the server ended the session before the close completed.
      CHECK_FALSE((co_await watcher.async_exists(node, asio::use_awaitable)).has_value());
      auto children = co_await watcher.async_get_children("/close-healthy-lock", asio::use_awaitable);
      CHECK(children.children.empty());
    }
    co_await watcher.async_close(asio::use_awaitable);
  }());
}

TEST_CASE("a slow log sink of one session stalls no other session's calls", "[integration][log][promise]") {
  // The sink runs outside the lock of the process the calls into the C client take: the C
  // client's lines made under it are handed over once it is released.
  zk_server srv;
  zklock::test::loop_thread slow_loop, other_loop;
  session bystander{other_loop.ioc, options_for(srv.connect_string())};
  bystander.async_connect(asio::use_future).get();
  std::atomic<int> lines{0}, slept{0};
  auto o = options_for(srv.connect_string());
  o.log_threshold = log_level::debug;
  o.summarize_client_log = false;
  o.log = [&](log_level, std::string_view) {
    ++lines;
    if (slept < 6) {
      ++slept;
      std::this_thread::sleep_for(300ms);
    }
  };
  zklock::test::caller_thread caller(bystander);
  for (int i = 0; i < 2 && slept < 6; ++i) {
    session s{slow_loop.ioc, o};
    s.async_connect(asio::use_future).get();
    s.async_close(asio::use_future).get();
  }
  std::this_thread::sleep_for(50ms);
  std::cout << "a log sink sleeping 300 ms (" << slept << " times, " << lines
            << " lines): another session's call on another thread took at most " << caller.longest_us / 1000.0 << " ms"
            << std::endl;
  CHECK(slept > 0);
  CHECK(caller.longest_us < 150'000);
  bystander.async_close(asio::use_future).get();
}
