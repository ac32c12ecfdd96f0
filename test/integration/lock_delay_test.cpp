// Lock-delay against a real server: a holder whose session expires (cut off by a silent proxy:
// to the server, as a stopped process) makes its successor wait lock_delay after the expiry; a
// clean release is not delayed; with the option off nothing is delayed and no beacon is written.
#include "common.hpp"

#include <zklock/election.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/semaphore.hpp>

#include <cstdio>
#include <functional>

using namespace zklock;
using clk = std::chrono::steady_clock;

namespace {
// Where the beacons of a lock dir's contenders are (acquire_fsm.hpp: lock_delay_beacon).
std::string beacons_dir(const std::string& lock_dir) { return join_path(parent_path(lock_dir), "__zklock_sessions__"); }
std::string session_hex(const session& s) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(s.session_id()));
  return id;
}

struct expiry_timing {
  clk::time_point deleted, granted;
};

// `hold` takes the lock through the proxied session and returns its node; `wait` queues the
// waiter, which calls back with its guard when granted. Once the waiter is queued the proxy goes
// silent and the server expires the holder's session. Returns when the holder's node went, as
// a third session's watch heard it (the server sends every watcher of the deletion its event at
// once), and when the waiter was granted; the waiter's guard is released.
asio::awaitable<expiry_timing> expire_holder(proxied_fixture& f, session& observer, const std::string& dir,
                                             std::function<asio::awaitable<std::string>()> hold,
                                             std::function<void(std::function<void(lock_guard)>)> wait) {
  auto node = co_await hold();
  std::optional<lock_guard> granted;
  clk::time_point granted_at{};
  wait([&](lock_guard g) {
    granted_at = clk::now();
    granted = std::move(g);
  });
  co_await until_children(observer, dir, 2);
  co_await sleep_for(300ms);  // the waiter's watch on the holder is set
  zklock::watch w;
  REQUIRE(co_await observer.async_exists(node, w, asio::use_awaitable));
  f.proxy.set_accepting(false);
  f.proxy.blackhole(true);
  co_await w.async_wait(asio::use_awaitable);
  expiry_timing t{clk::now(), {}};
  co_await until([&] { return granted.has_value(); }, 20s);
  REQUIRE(granted);
  t.granted = granted_at;
  CHECK(granted->owns_lock());
  co_await granted->async_release(asio::use_awaitable);
  co_await until_children(observer, dir, 0);
  co_return t;
}

// `deleted` is when the observer's coroutine heard the deletion; the waiter's session, on the same
// loop, may have heard the same event first (the server sends both at once, and the loop reads
// one socket, then the other, and resumes the observer through a post): its lock-delay runs from
// there. A fresh machine's run saw the grant 1,499 ms after the observer heard it, with a 1,500 ms
// delay. So the check allows that skew (50 ms): a delay not waited out grants within a few ms.
constexpr auto hearing_skew = 50ms;

void check_delayed(const expiry_timing& t, std::chrono::milliseconds delay) {
  INFO("granted " << std::chrono::duration_cast<std::chrono::milliseconds>(t.granted - t.deleted).count()
                  << " ms after the holder's node went");
  CHECK(t.granted >= t.deleted + delay - hearing_skew);
  CHECK(t.granted < t.deleted + delay + 1000ms);  // and not much later
}

// expire_holder's `hold` and `wait` for a lock with async_acquire (a mutex, a semaphore).
template <class Lock>
std::function<asio::awaitable<std::string>()> hold_with(Lock& lock, lock_guard& held) {
  return [&lock, &held]() -> asio::awaitable<std::string> {
    held = co_await lock.async_acquire(asio::use_awaitable);
    co_return held.node_path();
  };
}
template <class Lock>
std::function<void(std::function<void(lock_guard)>)> wait_with(Lock& lock) {
  return [&lock](std::function<void(lock_guard)> granted) {
    lock.async_acquire([granted](error_code ec, lock_guard g) {
      CHECK_FALSE(ec);
      granted(std::move(g));
    });
  };
}

// The same for an election: its leadership's guard.
std::function<asio::awaitable<std::string>()> hold_with(election& e, std::optional<leadership>& held) {
  return [&e, &held]() -> asio::awaitable<std::string> {
    held = co_await e.async_campaign(asio::use_awaitable);
    co_return held->node_path();
  };
}
std::function<void(std::function<void(lock_guard)>)> wait_with(election& e) {
  return [&e](std::function<void(lock_guard)> granted) {
    e.async_campaign([granted](error_code ec, leadership l) {
      CHECK_FALSE(ec);
      granted(std::move(l.guard()));
    });
  };
}

// The sessions of an expiry: the holder's behind the proxy (a session timeout of 2 s, soon
// expired once cut off), the waiter's and an observer's straight to the server.
struct expiry_fixture : proxied_fixture {
  session& holder_s = connect_proxied(2000ms);
  session& waiter_s = connect();
  session& observer = connect();
};

// A mutex holder on `holder_s` and a waiter on `waiter_s`, both with `o`.
asio::awaitable<expiry_timing> expire_mutex_holder(proxied_fixture& f, session& holder_s, session& waiter_s,
                                                   session& observer, const std::string& path, mutex_options o) {
  mutex holder(holder_s, path, o), waiter(waiter_s, path, o);
  lock_guard held;
  co_return co_await expire_holder(f, observer, path, hold_with(holder, held), wait_with(waiter));
}
}  // namespace

TEST_CASE_METHOD(expiry_fixture, "lock-delay: a holder whose session expires: the successor waits lock_delay after the expiry",
                 "[integration][lock_delay][fault][timing]") {
  const auto delay = 1500ms;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    check_delayed(co_await expire_mutex_holder(*this, holder_s, waiter_s, observer, "/lockdelay/expire",
                                               {.lock_delay = delay}),
                  delay);
  }());
}

TEST_CASE_METHOD(expiry_fixture,
                 "lock-delay with a local queue: a holder whose session expires: the successor's node waits lock_delay after the expiry",
                 "[integration][lock_delay][local][fault][timing]") {
  const auto delay = 1500ms;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    check_delayed(co_await expire_mutex_holder(*this, holder_s, waiter_s, observer, "/lockdelay/local/expire",
                                               {.local_queue = true, .lock_delay = delay}),
                  delay);
  }());
}

TEST_CASE_METHOD(expiry_fixture, "lock-delay off: the successor of an expired holder is granted at once, no beacon is written",
                 "[integration][lock_delay][fault][timing]") {
  const std::string path = "/lockdelay/off/expire";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto t = co_await expire_mutex_holder(*this, holder_s, waiter_s, observer, path, {});
    CHECK(t.granted < t.deleted + 1000ms);
    CHECK_FALSE(co_await observer.async_exists(beacons_dir(path), asio::use_awaitable));
  }());
}

TEST_CASE_METHOD(server_fixture, "lock-delay: a clean release is not delayed, and the holder's beacon is its session's",
                 "[integration][lock_delay]") {
  auto& holder_s = connect();
  auto& waiter_s = connect();
  const std::string path = "/lockdelay/release";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex_options o{.lock_delay = 10s};
    mutex holder(holder_s, path, o), waiter(waiter_s, path, o);
    for (int round = 0; round < 3; ++round) {
      auto held = co_await holder.async_acquire(asio::use_awaitable);
      completion<lock_guard> granted;
      waiter.async_acquire(granted.handler());
      co_await until_children(waiter_s, path, 2);
      co_await sleep_for(100ms);
      auto released_at = clk::now();
      co_await held.async_release(asio::use_awaitable);
      co_await until([&] { return granted.done; }, 20s);
      REQUIRE(granted.done);
      CHECK_FALSE(granted.ec);
      CHECK(granted.at < released_at + 2s);  // a delay would be 10 s
      co_await granted.result.async_release(asio::use_awaitable);
    }
    auto st = co_await waiter_s.async_exists(join_path(beacons_dir(path), session_hex(holder_s)), asio::use_awaitable);
    REQUIRE(st);
    CHECK(st->ephemeral_owner == holder_s.session_id());
    co_await until_children(waiter_s, path, 0);
  }());
}

TEST_CASE_METHOD(expiry_fixture, "lock-delay on an election: a leader that expires is followed lock_delay later",
                 "[integration][lock_delay][election][fault][timing]") {
  const std::string path = "/lockdelay/election";
  const auto delay = 1500ms;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election a(holder_s, path, "a", {.lock_delay = delay}), b(waiter_s, path, "b", {.lock_delay = delay});
    std::optional<leadership> la;
    check_delayed(co_await expire_holder(*this, observer, path, hold_with(a, la), wait_with(b)), delay);
  }());
}

TEST_CASE_METHOD(expiry_fixture, "lock-delay on a semaphore: a lease that expires is given out lock_delay later",
                 "[integration][lock_delay][semaphore][fault][timing]") {
  const std::string path = "/lockdelay/semaphore";
  const auto delay = 1500ms;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    semaphore a(holder_s, path, 1, {.lock_delay = delay}), b(waiter_s, path, 1, {.lock_delay = delay});
    lock_guard la;
    check_delayed(co_await expire_holder(*this, observer, path + "/leases", hold_with(a, la), wait_with(b)), delay);
  }());
}

TEST_CASE_METHOD(proxied_fixture,
                 "lock-delay: a waiter outside the watched window still waits out the delay of a holder whose session ended",
                 "[integration][lock_delay][fault][timing]") {
  // H holds; W1 and W2 wait right behind it (watching H); Z waits behind them, watching W1 and
  // W2 only (K = 2). H's session expires while it holds; W1 and W2 give up during their delay.
  // Z was queued behind H before it went: H's end delays Z too.
  auto& hs = connect_proxied(2000ms);
  auto ws = connect_sessions(3);
  auto& observer = connect();
  const std::string path = "/lockdelay/window";
  const auto delay = 3000ms;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex_options o{.lock_delay = delay};
    mutex h(hs, path, o), w1(*ws[0], path, o), w2(*ws[1], path, o), z(*ws[2], path, o);
    auto held = co_await h.async_acquire(asio::use_awaitable);
    asio::cancellation_signal c1, c2;
    completion<lock_guard> g1, g2, gz;
    w1.async_acquire(asio::bind_cancellation_slot(c1.slot(), g1.handler()));
    co_await until_children(observer, path, 2);
    w2.async_acquire(asio::bind_cancellation_slot(c2.slot(), g2.handler()));
    co_await until_children(observer, path, 3);
    z.async_acquire(gz.handler());
    co_await until_children(observer, path, 4);
    co_await sleep_for(300ms);  // every watch set
    zklock::watch w;
    REQUIRE(co_await observer.async_exists(held.node_path(), w, asio::use_awaitable));
    proxy.set_accepting(false);
    proxy.blackhole(true);  // H's session expires while it holds
    co_await w.async_wait(asio::use_awaitable);
    auto gone_at = clk::now();
    co_await sleep_for(300ms);  // W1 and W2 are in their delay
    CHECK_FALSE(g1.done);
    CHECK_FALSE(g2.done);
    c1.emit(asio::cancellation_type::terminal);
    c2.emit(asio::cancellation_type::terminal);
    co_await until([&] { return g1.done && g2.done; });
    co_await until([&] { return gz.done; }, 20s);
    REQUIRE(gz.ok());
    INFO("Z granted " << std::chrono::duration_cast<std::chrono::milliseconds>(gz.at - gone_at).count()
                      << " ms after H's node went");
    CHECK(gz.at >= gone_at + delay);
    CHECK(gz.at < gone_at + delay + 1500ms);
    co_await gz.result.async_release(asio::use_awaitable);
    co_await until_children(observer, path, 0);
  }());
}
