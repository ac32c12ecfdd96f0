// Helpers for integration tests: run a coroutine on an io_context with a deadline, the fixture
// (a server, an io_context, connected sessions, a proxy), waits with a bound.
#pragma once

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>
#include <zklock/types.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <catch2/catch.hpp>

#include "tcp_proxy.hpp"
#include "zk_server.hpp"

#include <chrono>
#include <dirent.h>
#include <exception>
#include <list>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

inline constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// Runs `ioc` (on this thread) until `done()` or `limit`, `step` at a time (an io_context whose
/// work ran out is restarted). Returns done().
template <class Pred>
bool run_until(asio::io_context& ioc, Pred done, std::chrono::steady_clock::duration limit,
               std::chrono::steady_clock::duration step = 10ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    ioc.run_for(step);
    if (ioc.stopped()) ioc.restart();
  }
  return done();
}

/// Runs `aw` to completion on `ioc` (on this thread); fails the test after `limit`.
template <class Awaitable>
void run_test(asio::io_context& ioc, Awaitable aw, std::chrono::seconds limit = 60s) {
  std::exception_ptr failure;
  bool done = false;
  asio::co_spawn(ioc, std::move(aw), [&](std::exception_ptr e) {
    failure = e;
    done = true;
  });
  if (!run_until(ioc, [&] { return done; }, limit, 100ms))
    FAIL("test coroutine did not finish within " << limit.count() << " s");
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

/// The set-up most integration tests share: a server, the test's io_context, and sessions on
/// it that connect() makes and connects (before the test's coroutine runs; an error fails the
/// test) and that live as long as the fixture. For TEST_CASE_METHOD, or a local in a loop.
class server_fixture {
 public:
  server_fixture() = default;
  explicit server_fixture(zklock::test::server_options o) : srv(std::move(o)) {}
  server_fixture(const server_fixture&) = delete;
  server_fixture& operator=(const server_fixture&) = delete;

  zklock::test::zk_server srv;
  asio::io_context ioc;

  /// A session on `ioc` with `opts`, connected.
  zklock::session& connect(zklock::session_options opts) {
    auto& s = sessions_.emplace_back(ioc.get_executor(), std::move(opts));
    auto connected = std::make_shared<std::optional<zklock::error_code>>();  // outlives a failed REQUIRE
    s.async_connect([connected](zklock::error_code ec) { *connected = ec; });
    REQUIRE(run_until(ioc, [&] { return connected->has_value(); }, 60s));
    INFO("connect to " << s.options().connect);
    REQUIRE_FALSE(**connected);
    return s;
  }
  /// A session straight to the server, connected.
  zklock::session& connect(std::chrono::milliseconds session_timeout = 4000ms) {
    return connect(options_for(srv.connect_string(), session_timeout));
  }
  /// `n` sessions straight to the server, connected one after another.
  std::vector<zklock::session*> connect_sessions(int n, std::chrono::milliseconds session_timeout = 4000ms) {
    std::vector<zklock::session*> out;
    for (int i = 0; i < n; ++i) out.push_back(&connect(session_timeout));
    return out;
  }

 protected:
  std::list<zklock::session> sessions_;
};

/// server_fixture with two sessions straight to the server, connected: `a` and `b`.
class two_sessions_fixture : public server_fixture {
 public:
  using server_fixture::server_fixture;
  zklock::session& a = connect();
  zklock::session& b = connect();
};

/// server_fixture with a tcp_proxy in front of the server, for the tests that cut a client off:
/// connect_proxied() connects through it, connect() still straight to the server.
class proxied_fixture : public server_fixture {
 public:
  using server_fixture::server_fixture;
  ~proxied_fixture() { sessions_.clear(); }  // before the proxy, as a test's own locals went

  zklock::test::tcp_proxy proxy{ioc.get_executor(), srv.port()};

  zklock::session& connect_proxied(std::chrono::milliseconds session_timeout = 4000ms) {
    return connect(options_for(srv.connect_via(proxy.connect_string()), session_timeout));
  }
};

/// Options for a server of the test's own, never the one the tests of a ctest run share: for a
/// test that stops, kills, pauses or restarts it, or counts what the whole server holds.
inline zklock::test::server_options own_server() {
  zklock::test::server_options o;
  o.own_process = true;
  return o;
}

/// A fixture with a server of the test's own (own_server()).
template <class Fixture>
class own_server_fixture : public Fixture {
 public:
  own_server_fixture() : Fixture(own_server()) {}
};

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

/// Number of children of `path` (0 when it does not exist).
inline asio::awaitable<std::size_t> children_of(zklock::session& s, const std::string& path) {
  auto [ec, r] = co_await s.async_get_children(path, tuple_awaitable);
  co_return ec ? 0 : r.children.size();
}

/// Runs `body(i)` for each i in [0, n) as n coroutines at once on this coroutine's executor,
/// and returns when every one has.
template <class Body>
asio::awaitable<void> all_at_once(int n, Body body) {
  int finished = 0;
  auto ex = co_await asio::this_coro::executor;
  for (int i = 0; i < n; ++i) {
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      co_await body(i);
      ++finished;
    }, asio::detached);
  }
  while (finished < n) co_await sleep_for(20ms);
}

/// Polls every `step` until `p()`; fails the test after `limit`.
template <class Pred>
asio::awaitable<void> until(Pred p, std::chrono::steady_clock::duration limit = 20s,
                            std::chrono::steady_clock::duration step = 2ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!p()) {
    if (std::chrono::steady_clock::now() > deadline) FAIL("condition not met in time");
    co_await sleep_for(step);
  }
}

/// Starts an operation by `start(handler)`, awaits `pause()` (time for it to get under way),
/// emits `type` on the operation's cancellation slot and waits for its handler: its error_code.
template <class Start, class Pause>
asio::awaitable<zklock::error_code> start_then_cancel(Start start, Pause pause, asio::cancellation_type type) {
  asio::cancellation_signal sig;
  zklock::error_code got;
  bool done = false;
  start(asio::bind_cancellation_slot(sig.slot(), [&](zklock::error_code ec, auto&&...) {
    got = ec;
    done = true;
  }));
  co_await pause();
  sig.emit(type);
  while (!done) co_await sleep_for(1ms);
  co_return got;
}

/// start_then_cancel after the io_context ran `polls` handlers (posts).
template <class Start>
asio::awaitable<zklock::error_code> cancel_after_polls(
    Start start, int polls, asio::cancellation_type type = asio::cancellation_type::terminal) {
  return start_then_cancel(
      std::move(start),
      [polls]() -> asio::awaitable<void> {
        for (int i = 0; i < polls; ++i) co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
      },
      type);
}

/// start_then_cancel after `delay`.
template <class Start>
asio::awaitable<zklock::error_code> cancel_after(Start start, std::chrono::steady_clock::duration delay,
                                                 asio::cancellation_type type = asio::cancellation_type::terminal) {
  return start_then_cancel(std::move(start), [delay] { return sleep_for(delay); }, type);
}

/// What an operation started in the background handed its handler() (an error_code and a
/// `Result`), and when: `done` once it ran. It must outlive the operation.
template <class Result>
struct completion {
  bool done = false;
  std::chrono::steady_clock::time_point at{};
  zklock::error_code ec;
  Result result{};

  /// Done without an error.
  bool ok() const { return done && !ec; }

  auto handler() {
    return [this](zklock::error_code e, Result r) {
      ec = e;
      result = std::move(r);
      at = std::chrono::steady_clock::now();
      done = true;
    };
  }
};

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

/// The watches the server holds, besides each contender's watch on its own node (kept from its
/// create on, waiting and holding: a holder's is there as long as it holds).
/// - On a server of the test's own: data and child watches (4lw "mntr": zk_watch_count; a
///   waiter watches the blockers behind its nearest one by a child watch).
/// - On the shared server: the data watches under the test's chroot ("wchc": the paths each
///   session watches). ZooKeeper's 4lw list data watches only ("wchs", "wchc", "wchp"), so a
///   child watch left behind is seen by the tests on a server of their own only.
inline int server_watches(const zklock::test::zk_server& srv) {
  const std::string root = srv.chroot();
  auto mine = [&](const std::string& path) { return root.empty() || path == root || path.rfind(root + "/", 0) == 0; };
  auto by_session = srv.four_letter("wchc");
  UNSCOPED_INFO(by_session);
  // "0x<session>" lines, each followed by "\t<path>" lines: in wchc the paths it watches, in
  // dump the ephemeral nodes it owns
  auto parse = [&](const std::string& text) {
    std::set<std::pair<std::string, std::string>> pairs;
    std::string session;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("0x", 0) == 0) session = line.substr(0, line.find_first_of(":\r "));
      else if (!line.empty() && line[0] == '\t' && !session.empty() && mine(line.substr(1)))
        pairs.emplace(session, line.substr(1));
    }
    return pairs;
  };
  auto watched = parse(by_session);
  int total = static_cast<int>(watched.size());
  if (root.empty()) {
    std::smatch m;
    auto out = srv.four_letter("mntr");
    if (!std::regex_search(out, m, std::regex("zk_watch_count\\s+(\\d+)"))) return -1;
    total = std::stoi(m[1]);
  }
  auto owned = parse(srv.four_letter("dump"));
  for (const auto& w : watched)
    if (owned.count(w)) --total;
  return total;
}

/// Waits until server_watches(srv) is 0, for `limit` at most (a watch's removal reaches the
/// server after its operation completed); the test checks the count after.
inline asio::awaitable<void> until_no_watches(const zklock::test::zk_server& srv,
                                              std::chrono::steady_clock::duration limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (server_watches(srv) != 0 && std::chrono::steady_clock::now() < deadline) co_await sleep_for(20ms);
}

/// Polls `list()` (a lock's async_contenders) every 20 ms until it returns `n` contenders, 2 s at
/// most; returns the last listing (the test checks its size).
template <class Lister>
asio::awaitable<std::vector<zklock::contender>> contenders_until(Lister list, std::size_t n) {
  auto q = co_await list();
  for (int i = 0; i < 100 && q.size() != n; ++i) {
    co_await sleep_for(20ms);
    q = co_await list();
  }
  co_return q;
}

/// Waits (bounded: 2 s) until `flag` is set.
inline asio::awaitable<void> until(const bool& flag) {
  for (int i = 0; i < 200 && !flag; ++i) co_await sleep_for(10ms);
}

/// Polls every `step` until `path` has `n` children (fails the test after `limit`).
inline asio::awaitable<void> until_children(zklock::session& s, const std::string& path, std::size_t n,
                                            std::chrono::steady_clock::duration limit = 15s,
                                            std::chrono::steady_clock::duration step = 50ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::size_t seen = 0;
  while ((seen = co_await children_of(s, path)) != n) {
    if (std::chrono::steady_clock::now() > deadline) FAIL(path << " has " << seen << " children, waited for " << n);
    co_await sleep_for(step);
  }
}
