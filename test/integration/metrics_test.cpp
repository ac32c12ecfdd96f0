// Lock metrics against a real server: what session::lock_metrics() and the on_event hook say
// after an acquire that waited, a timeout, a cancellation, a busy try-acquire, a local handoff
// and a loss through a cut connection.
#include "common.hpp"

#include <zklock/metrics.hpp>

#include <algorithm>

using namespace zklock;
using zklock::test::zk_server;

namespace {
const lock_path_metrics& find(const lock_metrics_snapshot& s, const std::string& path) {
  auto it = std::find_if(s.paths.begin(), s.paths.end(), [&](const auto& p) { return p.path == path; });
  if (it == s.paths.end()) FAIL("no metrics for " << path);
  return *it;
}
}  // namespace

TEST_CASE_METHOD(proxied_fixture, "lock metrics count per path: a waited grant / timeout / cancellation / busy try / local handoff / loss",
          "[integration][metrics]") {
  std::vector<std::pair<lock_event_type, std::string>> events;
  auto opts = options_for(srv.connect_via(proxy.connect_string()), 2000ms);
  opts.lock_metrics.on_event = [&](const lock_event& e) { events.emplace_back(e.type, std::string(e.path)); };
  session s(ioc.get_executor(), opts);
  auto& other = connect();
  const std::string x = "/locks/metrics/x", local = "/locks/metrics/local", doomed = "/locks/metrics/lost";

  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    mutex held_by_other(other, x), m(s, x);

    // 1. an acquire that waits 300 ms for the other session: a remote handoff
    auto og = co_await held_by_other.async_acquire(asio::use_awaitable);
    completion<lock_guard> waiter;
    m.async_acquire(waiter.handler());
    co_await sleep_for(300ms);
    CHECK(s.lock_metrics().paths.size() == 1);
    CHECK(find(s.lock_metrics(), x).waiting() == 1);
    co_await og.async_release(asio::use_awaitable);
    while (!waiter.done) co_await sleep_for(5ms);
    CHECK(!waiter.ec);
    CHECK(find(s.lock_metrics(), x).held() == 1);
    co_await sleep_for(100ms);
    co_await waiter.result.async_release(asio::use_awaitable);

    // 2. a timeout, a cancellation and a busy try-acquire while the other session holds
    og = co_await held_by_other.async_acquire(asio::use_awaitable);
    auto [tec, tg] = co_await m.async_acquire_for(200ms, tuple_awaitable);
    CHECK(tec == errc::lock_timeout);
    auto cec = co_await cancel_after([&](auto handler) { m.async_acquire(std::move(handler)); }, 100ms);
    CHECK(cec == asio::error::operation_aborted);
    auto [bec, bg] = co_await m.async_try_acquire(tuple_awaitable);
    CHECK(bec == errc::lock_busy);
    co_await og.async_release(asio::use_awaitable);

    // 3. a local queue: the second acquire gets the lock from the first without ZooKeeper
    mutex_options lo;
    lo.local_queue = true;
    mutex lq(s, local, lo);
    auto first = co_await lq.async_acquire(asio::use_awaitable);
    completion<lock_guard> second;
    lq.async_acquire(second.handler());
    co_await sleep_for(50ms);
    co_await first.async_release(asio::use_awaitable);
    while (!second.done) co_await sleep_for(5ms);
    CHECK(!second.ec);
    co_await second.result.async_release(asio::use_awaitable);

    // 4. a loss: cut off from the server, the hold is lost after its validity deadline
    mutex d(s, doomed);
    auto lost_guard = co_await d.async_acquire(asio::use_awaitable);
    proxy.set_accepting(false);
    proxy.drop_all();
    auto [lec] = co_await lost_guard.async_wait_lost(tuple_awaitable);
    CHECK(lec == errc::lock_lost);
    auto [rec] = co_await lost_guard.async_release(tuple_awaitable);
    CHECK(rec == errc::lock_lost);
    auto snap = s.lock_metrics();

    // the plain mutex: started 4 (the waiter, the timeout, the cancelled one, the try)
    const auto& px = find(snap, x);
    CHECK(px.kind == lock_kind::exclusive);
    CHECK(px.acquires_started == 4);
    CHECK(px.acquires_granted == 1);
    CHECK(px.acquires_timed_out == 1);
    CHECK(px.acquires_cancelled == 1);
    CHECK(px.acquires_busy == 1);
    CHECK(px.acquires_failed == 0);
    CHECK(px.handoffs_remote == 1);
    CHECK(px.handoffs_local == 0);
    CHECK(px.releases == 1);
    CHECK(px.losses == 0);
    CHECK(px.waiting() == 0);
    CHECK(px.held() == 0);
    CHECK(px.wait.count == 1);
    CHECK(px.wait.sum >= 300ms);
    CHECK(px.wait.sum < 5s);
    CHECK(px.hold.count == 1);
    CHECK(px.hold.sum >= 100ms);
    // the local queue: two grants, one handed on locally, no remote handoff (nobody else waited)
    const auto& pl = find(snap, local);
    CHECK(pl.acquires_started == 2);
    CHECK(pl.acquires_granted == 2);
    CHECK(pl.handoffs_local == 1);
    CHECK(pl.handoffs_remote == 0);
    CHECK(pl.releases == 2);
    CHECK(pl.wait.count == 2);
    CHECK(pl.hold.count == 2);
    // the loss: counted once, not as a release too; its hold time is recorded
    const auto& pd = find(snap, doomed);
    CHECK(pd.acquires_granted == 1);
    CHECK(pd.losses == 1);
    CHECK(pd.releases == 0);
    CHECK(pd.held() == 0);
    CHECK(pd.hold.count == 1);
    CHECK(pd.hold.sum >= 1s);  // a 2 s session timeout less the margin, without replies
    CHECK(snap.paths.size() == 3);

    // the other session counted its own
    const auto& ox = find(other.lock_metrics(), x);
    CHECK(ox.acquires_granted == 2);
    CHECK(ox.releases == 2);
    CHECK(ox.handoffs_remote == 0);

    // rendered: the loss line as a Prometheus scraper reads it
    auto text = to_prometheus(snap);
    INFO(text);
    CHECK(text.find("zklock_lock_losses_total{path=\"/locks/metrics/lost\",kind=\"exclusive\"} 1\n") != std::string::npos);
    CHECK(text.find("zklock_lock_acquires_total{path=\"/locks/metrics/x\",kind=\"exclusive\",outcome=\"timeout\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("zklock_lock_handoffs_total{path=\"/locks/metrics/local\",kind=\"exclusive\",via=\"local\"} 1\n") !=
          std::string::npos);

    // the hook saw the same events, in order, for the plain mutex
    std::vector<lock_event_type> on_x;
    for (const auto& [t, p] : events)
      if (p == x) on_x.push_back(t);
    using T = lock_event_type;
    CHECK(on_x == std::vector<T>{T::acquire_started, T::granted, T::handoff_remote, T::released, T::acquire_started,
                                 T::timed_out, T::acquire_started, T::cancelled, T::acquire_started, T::busy});
    CHECK(std::count(events.begin(), events.end(), std::pair<T, std::string>{T::lost, doomed}) == 1);

    // clean up: the node goes with the session's expiry (or, if it reconnects in time, the lost
    // guard's release still deletes it)
    co_await sleep_for(1500ms);
    proxy.set_accepting(true);
    co_await until_children(other, doomed, 0, 20s);  // the lost lock's node goes
  }(), 120s);
}

TEST_CASE_METHOD(server_fixture, "lock metrics: max_paths bounds the entries and the rest are counted as (other)", "[integration][metrics]") {
  auto opts = options_for(srv.connect_string());
  opts.lock_metrics.max_paths = 2;
  auto& s = connect(opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 5; ++i) {
      mutex m(s, "/locks/metrics-cap/" + std::to_string(i));
      auto g = co_await m.async_acquire(asio::use_awaitable);
      co_await g.async_release(asio::use_awaitable);
    }
    auto snap = s.lock_metrics();
    REQUIRE(snap.paths.size() == 3);
    CHECK(find(snap, "/locks/metrics-cap/0").acquires_granted == 1);
    CHECK(find(snap, "/locks/metrics-cap/1").acquires_granted == 1);
    CHECK(find(snap, "(other)").acquires_granted == 3);
    CHECK(find(snap, "(other)").releases == 3);
  }());
}

TEST_CASE_METHOD(proxied_fixture, "lock metrics: a timed acquire that ran out while not connected is outcome error, not timeout",
          "[integration][metrics]") {
  std::vector<lock_event> events;
  auto opts = options_for(srv.connect_via(proxy.connect_string()), 10000ms);
  opts.lock_metrics.on_event = [&](const lock_event& e) {
    if (e.type == lock_event_type::failed || e.type == lock_event_type::timed_out) events.push_back(e);
  };
  session s(ioc.get_executor(), opts);
  auto& other = connect();
  const std::string x = "/locks/metrics/outage";

  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    mutex held_by_other(other, x), m(s, x);
    auto og = co_await held_by_other.async_acquire(asio::use_awaitable);
    bool done = false;
    error_code aec;
    m.async_acquire_for(1500ms, [&](error_code ec, lock_guard) {
      aec = ec;
      done = true;
    });
    co_await sleep_for(300ms);
    // the connection goes (the session lives on the server) before the time runs out
    proxy.set_accepting(false);
    proxy.drop_all();
    while (!done) co_await sleep_for(5ms);
    CHECK(aec == errc::connection_unavailable);

    const auto& px = find(s.lock_metrics(), x);
    CHECK(px.acquires_started == 1);
    CHECK(px.acquires_timed_out == 0);
    CHECK(px.acquires_failed == 1);
    CHECK(px.waiting() == 0);
    auto text = to_prometheus(s.lock_metrics());
    INFO(text);
    CHECK(text.find("zklock_lock_acquires_total{path=\"/locks/metrics/outage\",kind=\"exclusive\",outcome=\"error\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("zklock_lock_acquires_total{path=\"/locks/metrics/outage\",kind=\"exclusive\",outcome=\"timeout\"} 0\n") !=
          std::string::npos);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == lock_event_type::failed);
    CHECK(events[0].ec == errc::connection_unavailable);

    // back: the abandoned acquire's node is deleted after the reconnect; the queue empties
    proxy.set_accepting(true);
    co_await og.async_release(asio::use_awaitable);
    co_await until_children(other, x, 0, 20s);  // the abandoned acquire's node goes
  }(), 60s);
}
