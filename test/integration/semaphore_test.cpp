// semaphore against a real server: never more than max_leases holders, leases of a dead session
// come back, no orphaned lease after a connection loss, cancellation and timeouts leave nothing.
#include "common.hpp"
#include "tcp_proxy.hpp"
#include "zk_server.hpp"

#include <zklock/semaphore.hpp>

#include <random>

using namespace zklock;
using zklock::test::zk_server;

TEST_CASE_METHOD(server_fixture, "semaphore: 5 sessions x 20 leases of 2: never more than 2 holders, and 2 at once",
          "[integration][semaphore]") {
  auto f = connect_sessions(5);
  int inside = 0, max_inside = 0, granted = 0;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await all_at_once(5, [&](int i) -> asio::awaitable<void> {
      semaphore sem(*f[i], "/sem/a", 2);
      for (int k = 0; k < 20; ++k) {
        auto g = co_await sem.async_acquire(asio::use_awaitable);
        CHECK(g.kind() == lock_kind::lease);
        ++inside, ++granted;
        max_inside = std::max(max_inside, inside);
        // session 0's first lease is held until the second lease is out too (bounded: the
        // check below fails if it never is), so that both are held at once however slow the
        // machine; the other holds are a few ms
        for (int w = 0; i == 0 && k == 0 && inside < 2 && w < 1000; ++w) co_await sleep_for(10ms);
        co_await sleep_for(std::chrono::milliseconds(3 + (k * 7 + i) % 5));
        --inside;
        co_await g.async_release(asio::use_awaitable);
      }
    });
    auto leases = co_await f[0]->async_get_children("/sem/a/leases", asio::use_awaitable);
    CHECK(leases.children.empty());
    auto locks = co_await f[0]->async_get_children("/sem/a/locks", asio::use_awaitable);
    CHECK(locks.children.empty());
  }(), 240s);
  CHECK(granted == 100);
  CHECK(max_inside == 2);
}

TEST_CASE_METHOD(proxied_fixture, "semaphore: try on a full semaphore reads only, timeouts and cancellation leave nothing, "
          "a dead session's lease comes back",
          "[integration][semaphore][cancel][fault]") {
  auto f = connect_sessions(2);
  auto& behind = connect_proxied(4000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    semaphore a(*f[0], "/sem/b", 1), b(*f[1], "/sem/b", 1), c(behind, "/sem/b", 1);
    semaphore none(*f[0], "/sem/none", 0);
    auto [e0, g0] = co_await none.async_acquire(tuple_awaitable);
    CHECK(e0 == errc::invalid_max_leases);
    auto held = co_await c.async_acquire(asio::use_awaitable);
    auto sent = f[1]->stats().requests_sent;
    auto [e1, g1] = co_await b.async_try_acquire(tuple_awaitable);
    CHECK(e1 == errc::lock_busy);
    CHECK(f[1]->stats().requests_sent - sent == 1);  // one read, no write
    auto [e2, g2] = co_await b.async_acquire_for(100ms, tuple_awaitable);
    CHECK(e2 == errc::lock_timeout);
    auto cancelled_at = std::chrono::steady_clock::now();
    auto e3 = co_await cancel_after([&](auto handler) { b.async_acquire(std::move(handler)); }, 100ms);
    CHECK(e3 == asio::error::operation_aborted);
    // A connected cancellation waits for its cleanup 500 ms at most, then completes with the
    // cleanup going on (basic_mutex::async_acquire): sooner, the nodes are gone already;
    // later (a loaded machine's server), they go soon after.
    auto took = std::chrono::steady_clock::now() - cancelled_at;
    bool waited_out = took >= 100ms + 450ms;
    INFO("the cancelled acquire took "
         << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    // within its bound, it completed once its cleanup was answered: the lease node's delete and
    // the internal mutex's, whose node it held while it waited for a lease
    auto after = f[1]->stats();
    if (!waited_out) CHECK(after.outstanding_requests + after.queued_requests == 0);
    auto children = [&](std::string dir) -> asio::awaitable<std::vector<std::string>> {
      co_return (co_await f[0]->async_get_children(std::move(dir), asio::use_awaitable)).children;
    };
    auto left = co_await children("/sem/b/locks");
    if (waited_out) {
      WARN("the cancellation completed after its 500 ms bound: its cleanup goes on");
      for (auto deadline = std::chrono::steady_clock::now() + 5s; !left.empty() && std::chrono::steady_clock::now() < deadline;) {
        co_await sleep_for(10ms);
        left = co_await children("/sem/b/locks");
      }
    }
    CHECK((co_await children("/sem/b/leases")).size() == 1);  // the holder's only
    INFO("left in /sem/b/locks: " << (left.empty() ? std::string("nothing") : left.front()));
    CHECK(left.empty());
    co_await until_no_watches(srv, 2s);
    CHECK(server_watches(srv) == 0);
    // the holder's session dies (expired behind its proxy): its lease comes back to a waiter
    auto t0 = std::chrono::steady_clock::now();
    proxy.blackhole(true);
    auto g = co_await a.async_acquire_for(30s, asio::use_awaitable);
    CHECK(g.owns_lock());
    WARN("lease back after " << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
                             << " ms (session timeout 4 s)");
    co_await g.async_release(asio::use_awaitable);
    proxy.blackhole(false);
  }(), 120s);
}

TEST_CASE_METHOD(proxied_fixture, "semaphore: connections cut during acquires leave no orphaned lease",
          "[integration][semaphore][fault]") {
  auto& s = connect_proxied(8000ms);
  auto& watcher = connect();
  int done = 0, ok = 0;
  std::vector<lock_guard> guards;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    semaphore sem(s, "/sem/c", 3);
    for (int round = 0; round < 20; ++round) {
      sem.async_acquire_for(5s, [&](error_code ec, lock_guard g) {
        ++done;
        if (!ec) ++ok, guards.push_back(std::move(g));
      });
      if (round % 4 == 1) proxy.drop_all();  // requests in flight are cut
      co_await sleep_for(std::chrono::milliseconds(round % 3));
      if (guards.size() == 3) {
        for (auto& g : guards) g = lock_guard{};  // released in the background
        guards.clear();
      }
    }
    for (int i = 0; i < 600 && done < 20; ++i) co_await sleep_for(20ms);
    CHECK(done == 20);
    guards.clear();
    for (int i = 0; i < 300 && !is_connected(s.state()); ++i) co_await sleep_for(20ms);
    // every lease node belongs to a guard we hold: none now
    std::size_t left = 99;
    for (int i = 0; i < 300 && left != 0; ++i) {
      left = (co_await watcher.async_get_children("/sem/c/leases", asio::use_awaitable)).children.size();
      if (left) co_await sleep_for(20ms);
    }
    CHECK(left == 0);
    auto locks = co_await watcher.async_get_children("/sem/c/locks", asio::use_awaitable);
    CHECK(locks.children.empty());
  }(), 120s);
  CHECK(ok > 0);
}

namespace {
// The children watches the server holds (the lease dir's): "mntr"'s zk_watch_count counts
// every watch, "wchs" the data watches only.
int children_watches(const zk_server& srv) {
  std::smatch all, data;
  auto mntr = srv.four_letter("mntr"), wchs = srv.four_letter("wchs");
  if (!std::regex_search(mntr, all, std::regex("zk_watch_count\\s+(\\d+)")) ||
      !std::regex_search(wchs, data, std::regex("Total watches:(\\d+)")))
    return -1;
  return std::stoi(all[1]) - std::stoi(data[1]);
}
}  // namespace

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "semaphore: the requests of an acquisition, alone and handed over (the internal mutex "
          "watches no node of its own)", "[integration][semaphore]") {
  // A long session timeout: no keepalive while the test looks, so every request counted is the
  // recipe's.
  auto sessions = connect_sessions(3, 20000ms);
  auto& a = *sessions[0];
  auto& b = *sessions[1];
  auto& c = *sessions[2];
  run_test(ioc, [&]() -> asio::awaitable<void> {
    semaphore sa(a, "/sem/count", 1), sb(b, "/sem/count", 1), sc(c, "/sem/count", 1);
    co_await (co_await sa.async_acquire(asio::use_awaitable)).async_release(asio::use_awaitable);  // the dirs exist
    // Alone: the internal mutex's create and listing, the lease's create, listing and own-node
    // watch, then the two deletes (the internal one as the lease is granted).
    auto sent = a.stats().requests_sent;
    auto g = co_await sa.async_acquire(asio::use_awaitable);
    co_await g.async_release(asio::use_awaitable);
    CHECK(a.stats().requests_sent - sent == 7);

    // Handed over: a holds the lease; b waits on the leases dir, holding the internal mutex; c
    // waits on the internal mutex behind b.
    auto ga = co_await sa.async_acquire(asio::use_awaitable);
    auto internal_left = [&]() -> asio::awaitable<std::size_t> {
      co_return (co_await a.async_get_children("/sem/count/locks", asio::use_awaitable)).children.size();
    };
    for (int i = 0; i < 500 && co_await internal_left() != 0; ++i) co_await sleep_for(10ms);  // a's, released
    const int w0 = server_watches(srv);
    REQUIRE(children_watches(srv) == 0);
    auto sent_b = b.stats().requests_sent, sent_c = c.stats().requests_sent;
    lock_guard gb, gc;
    bool b_done = false, c_done = false;
    sb.async_acquire([&](error_code ec, lock_guard g) {
      CHECK_FALSE(ec);
      gb = std::move(g);
      b_done = true;
    });
    for (int i = 0; i < 500 && children_watches(srv) != 1; ++i) co_await sleep_for(10ms);  // b's, on the leases
    REQUIRE(children_watches(srv) == 1);
    sc.async_acquire([&](error_code ec, lock_guard g) {
      CHECK_FALSE(ec);
      gc = std::move(g);
      c_done = true;
    });
    // b's on the leases dir and c's on b's node (on a server of the test's own, server_watches
    // counts child watches too)
    for (int i = 0; i < 500 && server_watches(srv) != w0 + 2; ++i) co_await sleep_for(10ms);
    REQUIRE(server_watches(srv) == w0 + 2);
    co_await ga.async_release(asio::use_awaitable);
    for (int i = 0; i < 500 && !b_done; ++i) co_await sleep_for(10ms);
    REQUIRE(b_done);
    // c takes the internal mutex from b's release and waits on the leases dir, b's lease held
    for (int i = 0; i < 500; ++i) {
      auto locks = co_await a.async_get_children("/sem/count/locks", asio::use_awaitable);
      auto leases = co_await a.async_get_children("/sem/count/leases", asio::use_awaitable);
      if (locks.children.size() == 1 && leases.children.size() == 2 && children_watches(srv) == 1) break;
      co_await sleep_for(10ms);
    }
    REQUIRE(children_watches(srv) == 1);
    co_await gb.async_release(asio::use_awaitable);
    for (int i = 0; i < 500 && !c_done; ++i) co_await sleep_for(10ms);
    REQUIRE(c_done);
    co_await gc.async_release(asio::use_awaitable);
    for (int i = 0; i < 500 && co_await internal_left() != 0; ++i) co_await sleep_for(10ms);
    // b: the internal create and listing; the lease's create, listing, own-node watch and dir
    // watch; the dir watch again at a's release, then its removal (granted by that listing);
    // the two deletes.
    CHECK(b.stats().requests_sent - sent_b == 10);
    // c: the same, and the watch on b's internal node (its one blocker), whose deletion is c's
    // grant of the internal mutex, with no listing.
    CHECK(c.stats().requests_sent - sent_c == 11);
  }(), 60s);
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "semaphore: a waiter third on the internal mutex watches both internal nodes ahead of "
          "it, and is granted the internal mutex by the nearer one's deletion", "[integration][semaphore]") {
  // The internal mutex's handoff is on the path to the next lease (a waiter that gets it usually
  // finds a lease free): it watches K = 2 blockers as a mutex does, so a waiter behind two is
  // granted by the last one's deletion, its listing done one handoff earlier.
  auto sessions = connect_sessions(4, 20000ms);
  auto& first = *sessions[0];
  run_test(ioc, [&]() -> asio::awaitable<void> {
    std::vector<semaphore> sems;
    for (auto& s : sessions) sems.emplace_back(*s, "/sem/k2", 1);
    std::vector<lock_guard> held(sessions.size());
    int granted = 0;
    auto queue = [&](std::size_t i) {
      sems[i].async_acquire([&, i](error_code ec, lock_guard g) {
        CHECK_FALSE(ec);
        held[i] = std::move(g);
        ++granted;
      });
    };
    held[0] = co_await sems[0].async_acquire(asio::use_awaitable);
    ++granted;
    co_await until_children(first, "/sem/k2/locks", 0);  // the first's internal node, released
    // the second holds the internal mutex and waits on the leases dir; the third waits behind it
    const int w0 = server_watches(srv);
    queue(1);
    for (int i = 0; i < 500 && children_watches(srv) != 1; ++i) co_await sleep_for(10ms);
    REQUIRE(children_watches(srv) == 1);  // on the leases dir
    queue(2);
    for (int i = 0; i < 500 && server_watches(srv) != w0 + 2; ++i) co_await sleep_for(10ms);
    REQUIRE(server_watches(srv) == w0 + 2);  // and on the second's internal node
    // the fourth: the nearer blocker (the third's node) by its data, the other by a child watch
    queue(3);
    for (int i = 0; i < 500 && (server_watches(srv) != w0 + 4 || children_watches(srv) != 2); ++i)
      co_await sleep_for(10ms);
    CHECK(server_watches(srv) == w0 + 4);
    CHECK(children_watches(srv) == 2);
    // the lease handed on in turn, to each waiter in its order
    for (int k = 0; k < 4; ++k) {
      REQUIRE(granted == k + 1);
      CHECK(held[k].owns_lock());
      co_await held[k].async_release(asio::use_awaitable);
      for (int i = 0; i < 500 && k < 3 && granted < k + 2; ++i) co_await sleep_for(10ms);
    }
    co_await until_children(first, "/sem/k2/leases", 0);
    co_await until_children(first, "/sem/k2/locks", 0);
    for (int i = 0; i < 500 && children_watches(srv) != 0; ++i) co_await sleep_for(10ms);
    CHECK(children_watches(srv) == 0);
  }(), 60s);
}

TEST_CASE_METHOD(own_server_fixture<proxied_fixture>, "semaphore: a lease granted with the leases dir's watch removal on its way, the removal "
          "lost with the connection after the grant: sent again after the reconnect",
          "[integration][semaphore][fault]") {
  auto& holder = connect();
  auto& waiter = connect_proxied(8000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    semaphore sh(holder, "/sem/removal", 1), sw(waiter, "/sem/removal", 1);
    auto held = co_await sh.async_acquire(asio::use_awaitable);
    completion<lock_guard> got;
    sw.async_acquire(got.handler());
    for (int i = 0; i < 500 && children_watches(srv) != 1; ++i) co_await sleep_for(10ms);
    REQUIRE(children_watches(srv) == 1);  // the waiter's, on the leases dir
    // The holder's release frees the lease; the waiter's watched listing grants it, and the
    // removal of its watch, sent with the grant, cuts the connection: its reply is lost. No
    // reconnect until the grant is seen: it did not wait for that reply.
    proxy.set_accepting(false);
    proxy.cut_at_request(18);  // removeWatches
    co_await held.async_release(asio::use_awaitable);
    co_await until([&] { return got.done; }, 10s);
    REQUIRE(got.ok());
    CHECK(got.result.owns_lock());
    CHECK(proxy.cuts() == 1);
    proxy.set_accepting(true);
    // reconnected, not connected: the grant may come before the session has seen the cut
    co_await await_state(waiter, session_state::reconnected, 10s);
    // (The server dropped the connection's watches with it.) The C client sets the watch again
    // on the reconnect; the removal, sent again, takes it away.
    for (int i = 0; i < 500 && children_watches(srv) != 0; ++i) co_await sleep_for(10ms);
    CHECK(children_watches(srv) == 0);
    CHECK(got.result.owns_lock());
    co_await got.result.async_release(asio::use_awaitable);
    co_await until_children(holder, "/sem/removal/leases", 0);
    co_await until_children(holder, "/sem/removal/locks", 0);
  }(), 60s);
}
