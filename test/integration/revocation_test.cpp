// Revocation by Curator's protocol: a holder learns of a request ("__REVOKE__"
// written into its node) through lock_guard::async_wait_revoked; async_request_revoke and
// async_revoke_holders write it. Cooperative: the guard keeps the lock until the holder
// releases it. Every guard kind: mutex, both sides of a shared lock, a semaphore lease, an
// election's leadership.
#include "common.hpp"

#include <zklock/election.hpp>
#include <zklock/revoke.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <algorithm>
#include <memory>
#include <optional>

using namespace zklock;
using namespace asio::experimental::awaitable_operators;

namespace {

// Starts g.async_wait_revoked; the result lands in *out.
template <class Guard>
std::shared_ptr<std::optional<error_code>> start_wait(Guard& g, asio::cancellation_slot slot = {}) {
  auto out = std::make_shared<std::optional<error_code>>();
  g.async_wait_revoked(asio::bind_cancellation_slot(slot, [out](error_code ec) { *out = ec; }));
  return out;
}

asio::awaitable<bool> wait_for(const std::shared_ptr<std::optional<error_code>>& r,
                               std::chrono::milliseconds limit = 3000ms) {
  for (auto waited = 0ms; !*r && waited < limit; waited += 5ms) co_await sleep_for(5ms);
  co_return r->has_value();
}

// Waits for `wait` (one that does not complete fails the test): its holder was asked, with no
// error.
asio::awaitable<void> check_asked(std::shared_ptr<std::optional<error_code>> wait) {
  REQUIRE(co_await wait_for(wait));
  CHECK_FALSE(wait->value());
}

// A holder's session `a` and `other` (b), which asks, writes and deletes: both straight to the
// server.
struct holder_and_other : two_sessions_fixture {
  session& other = b;
};

}  // namespace

TEST_CASE_METHOD(holder_and_other,
                 "revocation: a holder's async_wait_revoked completes after async_request_revoke, and it still holds",
                 "[integration][revocation]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/rev"), mo(other, "/locks/rev");
    auto g = co_await ma.async_acquire(asio::use_awaitable);
    auto r = start_wait(g);
    co_await sleep_for(200ms);
    CHECK_FALSE(*r);  // nobody asked
    co_await async_request_revoke(other, g.node_path(), asio::use_awaitable);
    co_await check_asked(r);
    // cooperative: still ours until we release
    CHECK(g.owns_lock());
    CHECK(g.status() == lock_status::held);
    auto [busy, none] = co_await mo.async_try_acquire(tuple_awaitable);
    CHECK(busy == errc::lock_busy);
    co_await g.async_release(asio::use_awaitable);
    auto g2 = co_await mo.async_try_acquire(asio::use_awaitable);
    CHECK(g2.owns_lock());
    co_await g2.async_release(asio::use_awaitable);
    // a request to a node that is gone says so (Curator's Revoker ignores it)
    auto [gone] = co_await async_request_revoke(other, g.node_path(), tuple_awaitable);
    CHECK(gone == zk_errc::no_node);
  }());
}

TEST_CASE_METHOD(holder_and_other, "revocation: a request written before the wait is seen, and reported once",
                 "[integration][revocation]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/rev-before");
    auto g = co_await ma.async_acquire(asio::use_awaitable);
    co_await other.async_set_data(g.node_path(), "__REVOKE__", -1, asio::use_awaitable);
    co_await sleep_for(100ms);
    auto r = start_wait(g);
    co_await check_asked(r);
    // the holder keeps the lock and waits again: not the same request twice
    auto again = start_wait(g);
    co_await sleep_for(300ms);
    CHECK_FALSE(*again);
    // a new request is seen
    co_await async_request_revoke(other, g.node_path(), asio::use_awaitable);
    co_await check_asked(again);
    CHECK(g.owns_lock());
    co_await g.async_release(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(holder_and_other,
                 "revocation: other writes to the holder's node do not complete the wait", "[integration][revocation]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/rev-other");
    auto g = co_await ma.async_acquire(asio::use_awaitable);
    auto r = start_wait(g);
    for (std::string data : {"x", "", "__revoke__", "__REVOKE__\n"}) {
      CAPTURE(data);
      co_await other.async_set_data(g.node_path(), data, -1, asio::use_awaitable);
      co_await sleep_for(150ms);
      CHECK_FALSE(*r);
      CHECK(g.owns_lock());
    }
    // the watch was re-armed after each write: a request now is still seen
    co_await async_request_revoke(other, g.node_path(), asio::use_awaitable);
    co_await check_asked(r);
    co_await g.async_release(asio::use_awaitable);
  }());
}

TEST_CASE("revocation: cancellation completes with operation_aborted, leaves no watch, and the guard still works",
          "[integration][revocation]") {
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
    CAPTURE(static_cast<int>(type));
    holder_and_other f;
    auto& a = f.a;
    auto& other = f.other;
    run_test(f.ioc, [&]() -> asio::awaitable<void> {
      mutex ma(a, "/locks/rev-cancel");
      auto g = co_await ma.async_acquire(asio::use_awaitable);
      // The hold's own watch on its node (set from the create on) is not counted by
      // server_watches, and a revocation wait's data watch is on that same node: the server
      // holds one watch for both, so what is checked here is that nothing else is watched.
      co_await until_no_watches(f.srv, 1s);
      CHECK(server_watches(f.srv) == 0);
      for (int round = 0; round < 3; ++round) {
        asio::cancellation_signal sig;
        auto r = start_wait(g, sig.slot());
        co_await sleep_for(100ms);
        CHECK(server_watches(f.srv) == 0);  // its data watch is on our node (the hold's own)
        sig.emit(type);
        REQUIRE(co_await wait_for(r));
        CHECK(r->value() == asio::error::operation_aborted);
        co_await until_no_watches(f.srv, 1s);
        CHECK(server_watches(f.srv) == 0);  // removed: no growth per wait
        CHECK(g.owns_lock());
      }
      // two waiters, one cancelled: the other still hears the request
      asio::cancellation_signal sig;
      auto cancelled = start_wait(g, sig.slot());
      auto kept = start_wait(g);
      co_await sleep_for(100ms);
      sig.emit(type);
      REQUIRE(co_await wait_for(cancelled));
      CHECK(cancelled->value() == asio::error::operation_aborted);
      co_await sleep_for(100ms);
      CHECK(server_watches(f.srv) == 0);  // on our node (the hold's own)
      co_await async_request_revoke(other, g.node_path(), asio::use_awaitable);
      co_await check_asked(kept);
      // the guard still works
      CHECK(g.owns_lock());
      co_await g.async_release(asio::use_awaitable);
      co_await until_no_watches(f.srv, 1s);
      CHECK(server_watches(f.srv) == 0);
    }());
  }
}

TEST_CASE_METHOD(holder_and_other,
                 "revocation: released first completes with already_released, lost first with lock_lost",
                 "[integration][revocation]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/rev-end");
    {
      auto g = co_await ma.async_acquire(asio::use_awaitable);
      auto r = start_wait(g);
      co_await sleep_for(100ms);
      co_await g.async_release(asio::use_awaitable);
      REQUIRE(co_await wait_for(r));
      CHECK(r->value() == errc::already_released);
      auto after = start_wait(g);  // on a released guard
      REQUIRE(co_await wait_for(after));
      CHECK(after->value() == errc::already_released);
    }
    {
      // lost: someone else deletes our node (the data watch sees it go)
      auto g = co_await ma.async_acquire(asio::use_awaitable);
      auto r = start_wait(g);
      co_await sleep_for(100ms);
      co_await other.async_delete(g.node_path(), -1, asio::use_awaitable);
      REQUIRE(co_await wait_for(r));
      CHECK(r->value() == errc::lock_lost);
      CHECK(r->value() == condition::lock_lost);
      CHECK_FALSE(g.owns_lock());
      auto after = start_wait(g);
      REQUIRE(co_await wait_for(after));
      CHECK(after->value() == errc::lock_lost);
    }
    lock_guard empty;
    auto e = start_wait(empty);
    REQUIRE(co_await wait_for(e));
    CHECK(e->value() == errc::already_released);
  }());
}

TEST_CASE_METHOD(proxied_fixture, "revocation: a lost session completes the wait with lock_lost",
                 "[integration][revocation][fault]") {
  auto& a = connect_proxied();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/rev-expire");
    auto g = co_await ma.async_acquire(asio::use_awaitable);
    auto r = start_wait(g);
    co_await sleep_for(100ms);
    co_await expire_session(a, proxy, srv.connect_string());
    REQUIRE(co_await wait_for(r, 20000ms));
    CHECK(r->value() == errc::lock_lost);
  }());
}

TEST_CASE_METHOD(two_sessions_fixture,
                 "revocation: both sides of a shared lock, a semaphore lease and an election's leadership",
                 "[integration][revocation][shared][election]") {
  auto& other = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    {
      shared_mutex sa(a, "/locks/rev-rw"), sb(b, "/locks/rev-rw");
      auto r1 = co_await sa.async_acquire_shared(asio::use_awaitable);
      auto r2 = co_await sb.async_acquire_shared(asio::use_awaitable);
      auto w1 = start_wait(r1), w2 = start_wait(r2);
      co_await sleep_for(100ms);
      // both readers hold: async_revoke_holders asks both
      auto nodes = co_await async_revoke_holders(other, "/locks/rev-rw", asio::use_awaitable);
      CHECK(nodes.size() == 2);
      CHECK(std::count(nodes.begin(), nodes.end(), r1.node_path()) == 1);
      CHECK(std::count(nodes.begin(), nodes.end(), r2.node_path()) == 1);
      co_await check_asked(w1);
      co_await check_asked(w2);
      co_await r1.async_release(asio::use_awaitable);
      co_await r2.async_release(asio::use_awaitable);
      // the write side; a reader queued behind it is not a holder and is not asked
      auto w = co_await sa.async_acquire(asio::use_awaitable);
      lock_guard queued_reader;
      sb.async_acquire_shared([&](error_code, lock_guard g) { queued_reader = std::move(g); });
      co_await sleep_for(200ms);
      auto ww = start_wait(w);
      co_await sleep_for(100ms);
      nodes = co_await async_revoke_holders(other, "/locks/rev-rw", asio::use_awaitable);
      REQUIRE(nodes.size() == 1);
      CHECK(nodes[0] == w.node_path());
      co_await check_asked(ww);
      CHECK(w.kind() == lock_kind::write);
      co_await w.async_release(asio::use_awaitable);
      for (int i = 0; i < 300 && !queued_reader.owns_lock(); ++i) co_await sleep_for(10ms);
      CHECK(queued_reader.owns_lock());
      co_await queued_reader.async_release(asio::use_awaitable);
    }
    {
      semaphore sem(a, "/locks/rev-sem", 2);
      auto l1 = co_await sem.async_acquire(asio::use_awaitable);
      auto l2 = co_await sem.async_acquire(asio::use_awaitable);
      auto w1 = start_wait(l1), w2 = start_wait(l2);
      co_await sleep_for(100ms);
      auto nodes = co_await async_revoke_holders(other, sem.leases_path(), 2, asio::use_awaitable);
      CHECK(nodes.size() == 2);
      co_await check_asked(w1);
      co_await check_asked(w2);
      co_await l1.async_release(asio::use_awaitable);
      co_await l2.async_release(asio::use_awaitable);
    }
    {
      election ea(a, "/elections/rev", "alpha");
      auto l = co_await ea.async_campaign(asio::use_awaitable);
      REQUIRE(l.is_leader());
      auto r = std::make_shared<std::optional<error_code>>();
      l.async_wait_revoked([r](error_code ec) { *r = ec; });
      co_await sleep_for(100ms);
      auto nodes = co_await async_revoke_holders(other, "/elections/rev", asio::use_awaitable);
      REQUIRE(nodes.size() == 1);
      CHECK(nodes[0] == l.node_path());
      co_await check_asked(r);
      CHECK(l.is_leader());
      co_await l.async_resign(asio::use_awaitable);
      auto resigned = std::make_shared<std::optional<error_code>>();
      l.async_wait_revoked([resigned](error_code ec) { *resigned = ec; });
      REQUIRE(co_await wait_for(resigned));
      CHECK(resigned->value() == errc::already_released);
    }
    // nobody holds: nothing written
    auto none = co_await async_revoke_holders(other, "/locks/rev-rw", asio::use_awaitable);
    CHECK(none.empty());
    auto missing = co_await async_revoke_holders(other, "/locks/never-created", asio::use_awaitable);
    CHECK(missing.empty());
  }());
}

// A revocation request asks; it does not say who holds. An election's leader keeps its identity
// through one, whether written by zklock (async_revoke_holders) or as Curator's Revoker writes it
// (one setData of exactly "__REVOKE__", any version): async_leader right after the request, an
// observer that knew the leader, the candidates' data, and the request still reaches the leader,
// also when it starts waiting only after its identity was written back.
TEST_CASE_METHOD(holder_and_other,
                 "revocation: an election's leader keeps its identity through a request (zklock's and a raw Curator-style write)",
                 "[integration][revocation][election]") {
  const std::string path = "/elections/rev-identity";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election ea(a, path, "alpha"), watcher(other, path, "observer");
    auto l = co_await ea.async_campaign(asio::use_awaitable);
    auto known = co_await watcher.async_leader(asio::use_awaitable);
    REQUIRE(known);
    REQUIRE(known->identity == "alpha");
    std::vector<std::optional<leader_info>> changes;
    asio::cancellation_signal stop;
    bool observing = true;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
      auto seen = known;
      for (;;) {
        auto [ec, now] = co_await watcher.async_observe(seen, asio::bind_cancellation_slot(stop.slot(), tuple_awaitable));
        if (ec) break;
        changes.push_back(now);
        seen = now;
      }
      observing = false;
    }, asio::detached);
    for (bool raw : {false, true}) {
      CAPTURE(raw);
      if (raw) {
        co_await other.async_set_data(l.node_path(), "__REVOKE__", -1, asio::use_awaitable);
      } else {
        auto nodes = co_await async_revoke_holders(other, path, asio::use_awaitable);
        REQUIRE(nodes.size() == 1);
        CHECK(nodes[0] == l.node_path());
      }
      // at once, while the leader may not have written its identity back yet
      auto now = co_await watcher.async_leader(asio::use_awaitable);
      REQUIRE(now);
      CHECK(now->identity == "alpha");
      CHECK(now->node == l.node_path());
      // the leader writes it back into its node
      std::string data;
      for (int i = 0; i < 300; ++i) {
        data = (co_await other.async_get_data(l.node_path(), asio::use_awaitable)).data;
        if (data == "alpha") break;
        co_await sleep_for(10ms);
      }
      CHECK(data == "alpha");
      auto cs = co_await watcher.async_candidates(asio::use_awaitable);
      REQUIRE(cs.size() == 1);
      CHECK(cs[0].data == "alpha");
      // the request still reaches the leader, which waits only now
      auto r = start_wait(l);
      co_await check_asked(r);
      CHECK(l.is_leader());
      // and only once
      asio::cancellation_signal cancel_again;
      auto again = start_wait(l, cancel_again.slot());
      CHECK_FALSE(co_await wait_for(again, 300ms));
      cancel_again.emit(asio::cancellation_type::terminal);
      REQUIRE(co_await wait_for(again));
      CHECK(again->value() == asio::error::operation_aborted);
      CHECK(changes.empty());  // the observer saw no change of leader
    }
    co_await l.async_resign(asio::use_awaitable);
    co_await until([&] { return changes.size() == 1; });
    CHECK_FALSE(changes[0]);  // nobody leads
    stop.emit(asio::cancellation_type::terminal);
    co_await until([&] { return !observing; });
  }());
}

// A leader that never writes its identity back (Curator's LeaderLatch, kazoo): async_leader
// reports the data its node has once the session timeout has passed.
TEST_CASE_METHOD(holder_and_other,
                 "revocation: a leader that does not write its identity back is reported as it is after the session timeout",
                 "[integration][revocation][election]") {
  const std::string path = "/rev-foreign-election";  // a top-level path: created here, no parent needed
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await other.async_create(path, "", create_mode::persistent, asio::use_awaitable);
    auto foreign = co_await other.async_create(path + "/_c_0f0f0f0f-0f0f-0f0f-0f0f-0f0f0f0f0f0f-latch-", "__REVOKE__",
                                               create_mode::ephemeral_sequential, asio::use_awaitable);
    election watcher(a, path, "observer");
    auto started = std::chrono::steady_clock::now();
    auto now = co_await watcher.async_leader(asio::use_awaitable);
    REQUIRE(now);
    CHECK(now->identity == "__REVOKE__");
    CHECK(now->node == foreign.path);
    CHECK(std::chrono::steady_clock::now() - started >= a.negotiated_timeout());
    co_await other.async_delete(foreign.path, -1, asio::use_awaitable);
    co_await other.async_delete(path, -1, asio::use_awaitable);
  }(), 60s);
}

TEST_CASE_METHOD(holder_and_other, "revocation: latency from the request to the holder's handler (p50 of 20)",
                 "[integration][revocation][measure]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/rev-latency");
    std::vector<double> us;
    for (int i = 0; i < 20; ++i) {
      auto g = co_await ma.async_acquire(asio::use_awaitable);
      auto r = start_wait(g);
      co_await sleep_for(50ms);  // armed
      auto t0 = std::chrono::steady_clock::now();
      std::optional<std::chrono::steady_clock::time_point> t1;
      async_request_revoke(other, g.node_path(), [](error_code) {});
      while (!*r) {
        co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
      }
      t1 = std::chrono::steady_clock::now();
      CHECK_FALSE(r->value());
      us.push_back(std::chrono::duration<double, std::micro>(*t1 - t0).count());
      co_await g.async_release(asio::use_awaitable);
    }
    std::sort(us.begin(), us.end());
    WARN("request -> async_wait_revoked handler: p50 " << us[us.size() / 2] / 1000.0 << " ms, min "
                                                        << us.front() / 1000.0 << " ms, max " << us.back() / 1000.0
                                                        << " ms (20 tries, one local server)");
    CHECK(us[us.size() / 2] < 1e6);
  }());
}
