// zklock::mutex against real servers; the exclusion log is the oracle.
#include "common.hpp"
#include "exclusion_log.hpp"
#include "tcp_proxy.hpp"
#include "zk_server.hpp"


#include <cstdio>
#include <filesystem>
#include <regex>

using namespace zklock;
using zklock::test::exclusion_log;
using zklock::test::zk_server;

namespace {

std::string temp_log(const char* name) {
  auto p = std::filesystem::temp_directory_path() / (std::string("zklock-excl-") + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove(p);
  return p.string();
}

// the sequence number: the node name's last 10 digits
std::int64_t seq_of(const std::string& node) { return std::stoll(node.substr(node.size() - 10)); }

}  // namespace

TEST_CASE_METHOD(server_fixture, "8 sessions x 100 acquisitions: no overlap, FIFO grants, increasing fencing tokens",
                 "[integration][mutex]") {
  auto sessions = connect_sessions(8);
  auto log_path = temp_log("fifo");
  exclusion_log log(log_path);
  std::vector<std::int64_t> granted_seq, tokens;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await all_at_once(8, [&](int i) -> asio::awaitable<void> {
      mutex m(*sessions[i], "/locks/fifo");
      for (int k = 0; k < 100; ++k) {
        auto g = co_await m.async_acquire(asio::use_awaitable);
        log.enter("s" + std::to_string(i));
        granted_seq.push_back(seq_of(g.node_path()));
        tokens.push_back(g.fencing_token());
        co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);  // let others run
        log.leave("s" + std::to_string(i));
        co_await g.async_release(asio::use_awaitable);
      }
    });
    auto children = co_await sessions[0]->async_get_children("/locks/fifo", asio::use_awaitable);
    CHECK(children.children.empty());
  }(), 240s);
  auto r = exclusion_log::check(log_path);
  std::filesystem::remove(log_path);
  CHECK(r.entries == 800);
  CHECK(r.violations == 0);
  REQUIRE(granted_seq.size() == 800);
  CHECK(std::is_sorted(granted_seq.begin(), granted_seq.end()));        // FIFO by queue position
  CHECK(std::adjacent_find(tokens.begin(), tokens.end(), std::greater_equal<>()) == tokens.end());  // strictly increasing
}

TEST_CASE_METHOD(server_fixture,
                 "try-acquire: lock_busy when held, no node left, succeeds when free", "[integration][mutex]") {
  auto sessions = connect_sessions(2);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex a(*sessions[0], "/locks/try"), b(*sessions[1], "/locks/try");
    auto g = co_await a.async_try_acquire(asio::use_awaitable);
    CHECK(g.owns_lock());
    auto sent_before = sessions[1]->stats().requests_sent;
    auto [ec, g2] = co_await b.async_try_acquire(tuple_awaitable);
    CHECK(ec == errc::lock_busy);
    CHECK_FALSE(g2.owns_lock());
    CHECK(sessions[1]->stats().requests_sent - sent_before == 1);  // one listing: no create, no delete
    auto ch = co_await sessions[0]->async_get_children("/locks/try", asio::use_awaitable);
    CHECK(ch.children.size() == 1);
    CHECK(ch.stat.cversion == 1);  // the dir's children changed once: only the holder's create
    co_await g.async_release(asio::use_awaitable);
    auto g3 = co_await b.async_try_acquire(asio::use_awaitable);
    CHECK(g3.owns_lock());
  }());
}

TEST_CASE_METHOD(server_fixture,
                 "timeout and cancellation at every step leave the lock dir as it was",
                 "[integration][mutex][cancel]") {
  auto sessions = connect_sessions(2);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex holder_m(*sessions[0], "/locks/cancel/x");
    auto held = co_await holder_m.async_acquire(asio::use_awaitable);
    mutex m(*sessions[1], "/locks/cancel/x");

    auto [ec, g] = co_await m.async_acquire_for(300ms, tuple_awaitable);
    CHECK(ec == errc::lock_timeout);
    CHECK_FALSE(g.owns_lock());
    CHECK(server_watches(srv) == 0);

    // cancel after 0..40 polls of the io_context: hits the create in flight, the listing, the
    // watch being set and the wait
    for (int polls = 0; polls <= 40; polls += 2) {
      CAPTURE(polls);
      auto got = co_await cancel_after_polls([&](auto handler) { m.async_acquire(std::move(handler)); }, polls);
      CHECK(got == asio::error::operation_aborted);
      auto ch = co_await sessions[0]->async_get_children("/locks/cancel/x", asio::use_awaitable);
      CHECK(ch.children.size() == 1);  // only the holder's node
      CHECK(server_watches(srv) == 0);   // and no watch of ours
    }
    CHECK(server_watches(srv) == 0);
    co_await held.async_release(asio::use_awaitable);
    auto ch = co_await sessions[0]->async_get_children("/locks/cancel/x", asio::use_awaitable);
    CHECK(ch.children.empty());
  }(), 120s);
}

// A server of its own: the blockers behind the nearest are child watches, which
// server_watches counts there only.
TEST_CASE_METHOD(own_server_fixture<server_fixture>, "a release grants exactly one waiter, and tells at most K of them", "[integration][mutex]") {
  auto sessions = connect_sessions(9);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex head(*sessions[0], "/locks/herd");
    auto g = co_await head.async_acquire(asio::use_awaitable);
    std::vector<std::unique_ptr<mutex>> ms;
    std::vector<lock_guard> guards(9);
    int granted = 0;
    for (int i = 1; i < 9; ++i) {
      ms.push_back(std::make_unique<mutex>(*sessions[i], "/locks/herd"));
      ms.back()->async_acquire([&, i](error_code ec, lock_guard lg) {
        CHECK_FALSE(ec);
        guards[i] = std::move(lg);
        ++granted;
      });
    }
    co_await sleep_for(500ms);  // all queued and watching
    // a release grants its successor only; its deletion event reaches the waiters that watch
    // it (each watches the blockers ahead of it, up to K: at most K of them) and its own
    // watch on its node
    auto events = [&] {
      std::uint64_t n = 0;
      for (auto& s : sessions) n += s->stats().watch_events;
      return n;
    };
    const int k = mutex_options{}.watched_blockers;
    int blocker_watches = 0;
    for (int i = 1; i <= 8; ++i) blocker_watches += std::min(i, k);
    CHECK(server_watches(srv) == blocker_watches);  // (besides each one's on its own node)
    auto before = events();
    co_await g.async_release(asio::use_awaitable);
    for (int expected = 1; expected <= 8; ++expected) {
      while (granted < expected) co_await sleep_for(1ms);
      co_await sleep_for(50ms);  // would any other waiter be granted?
      CHECK(granted == expected);
      CHECK(events() - before <= static_cast<std::uint64_t>(k + 1));
      before = events();
      // release the one holder (found first: the next grant may land while we release)
      lock_guard* holder = nullptr;
      for (auto& lg : guards)
        if (lg.owns_lock()) holder = &lg;
      REQUIRE(holder);
      co_await holder->async_release(asio::use_awaitable);
    }
  }(), 120s);
}

TEST_CASE_METHOD(server_fixture, "1,000 pending acquires on one thread", "[integration][mutex][scale]") {
  int threads_before = thread_count();
  auto sessions = connect_sessions(10);
  int granted = 0;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    std::vector<std::unique_ptr<mutex>> ms;
    for (auto& s : sessions) ms.push_back(std::make_unique<mutex>(*s, "/locks/many"));
    for (int i = 0; i < 1000; ++i) {
      ms[i % 10]->async_acquire([&](error_code ec, lock_guard g) {
        CHECK_FALSE(ec);
        ++granted;
        // released when g goes out of scope: the background release hands over
      });
    }
    co_await sleep_for(200ms);
    CHECK(thread_count() == threads_before);
    while (granted < 1000) co_await sleep_for(20ms);
    co_await sleep_for(200ms);
    auto ch = co_await sessions[0]->async_get_children("/locks/many", asio::use_awaitable);
    CHECK(ch.children.empty());
  }(), 180s);
  CHECK(granted == 1000);
  CHECK(thread_count() == threads_before);
}

TEST_CASE_METHOD(proxied_fixture,
                 "the guard reports lock lost when its session expires", "[integration][mutex][fault]") {
  auto& s = connect_proxied(4000ms);
  auto& other = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/lost");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    CHECK(g.status() == lock_status::held);
    mutex m2(other, "/locks/lost");
    completion<lock_guard> other_acquire;
    m2.async_acquire(other_acquire.handler());

    co_await expire_session(s, proxy, srv.connect_string());

    auto [lost] = co_await g.async_wait_lost(tuple_awaitable);
    CHECK(lost == errc::lock_lost);
    CHECK(g.status() == lock_status::lost);
    CHECK_FALSE(g.owns_lock());
    while (!other_acquire.done) co_await sleep_for(10ms);
    CHECK_FALSE(other_acquire.ec);
    CHECK(other_acquire.result.owns_lock());
    CHECK(other_acquire.result.fencing_token() > g.fencing_token());
    auto [rel] = co_await g.async_release(tuple_awaitable);
    CHECK(rel == errc::lock_lost);
  }());
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>,
                 "a suspended connection makes the guard report maybe_lost, then held again",
                 "[integration][mutex][fault]") {
  auto& s = connect(15000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/suspend");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    srv.restart();
    co_await await_state(s, session_state::suspended);
    CHECK(g.status() == lock_status::maybe_lost);
    CHECK(g.owns_lock());
    co_await await_state(s, session_state::reconnected);
    CHECK(g.status() == lock_status::held);
    co_await g.async_release(asio::use_awaitable);
  }(), 120s);
}

TEST_CASE_METHOD(server_fixture,
                 "guard destroyed without release still releases, double release is an error", "[integration][mutex]") {
  auto sessions = connect_sessions(2);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex a(*sessions[0], "/locks/raii"), b(*sessions[1], "/locks/raii");
    {
      auto g = co_await a.async_acquire(asio::use_awaitable);
      CHECK(g.node_path().starts_with("/locks/raii/_c_"));
    }  // dropped: released in the background
    auto g2 = co_await b.async_acquire_for(10s, asio::use_awaitable);
    CHECK(g2.owns_lock());
    co_await g2.async_release(asio::use_awaitable);
    auto [ec] = co_await g2.async_release(tuple_awaitable);
    CHECK(ec == errc::already_released);
    lock_guard empty;
    auto [ec2] = co_await empty.async_release(tuple_awaitable);
    CHECK(ec2 == errc::already_released);
  }());
}

TEST_CASE_METHOD(server_fixture,
                 "lost_slot is the hold's: it follows a moved guard, a release never emits it, its handler goes "
                 "uncalled with the hold",
                 "[integration][mutex]") {
  auto sessions = connect_sessions(2);
  // A handler bound to a guard's lost_slot(): how often it was called, and whether it still exists.
  struct probe {
    int calls = 0;
    std::weak_ptr<int> handler;
    void bind(const lock_guard& g) {
      auto alive = std::make_shared<int>(0);
      handler = alive;
      g.lost_slot().assign([this, alive](asio::cancellation_type) { ++calls; });
    }
  };
  auto until_gone = [](const probe& p) -> asio::awaitable<void> {
    for (int i = 0; i < 300 && !p.handler.expired(); ++i) co_await sleep_for(50ms);
  };
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(*sessions[0], "/locks/lost-slot");
    probe moved, released, dropped;
    {
      auto g1 = co_await m.async_acquire(asio::use_awaitable);
      moved.bind(g1);
      lock_guard g2 = std::move(g1);
      co_await sessions[1]->async_delete(g2.node_path(), -1, asio::use_awaitable);  // someone else ends our hold
      auto [lost] = co_await g2.async_wait_lost(tuple_awaitable);
      CHECK(lost == errc::lock_lost);
      CHECK(moved.calls == 1);  // the slot bound through g1, emitted for g2
      auto [ec] = co_await g2.async_release(tuple_awaitable);
      CHECK(ec == errc::lock_lost);
    }
    {
      auto g = co_await m.async_acquire(asio::use_awaitable);
      released.bind(g);
      co_await g.async_release(asio::use_awaitable);
    }
    co_await until_gone(released);
    CHECK(released.handler.expired());  // destroyed with the hold
    CHECK(released.calls == 0);         // never called by the release
    {
      auto g = co_await m.async_acquire(asio::use_awaitable);
      dropped.bind(g);
    }  // destroyed without release: released in the background
    co_await until_children(*sessions[1], "/locks/lost-slot", 0);
    co_await until_gone(dropped);
    CHECK(dropped.handler.expired());
    CHECK(dropped.calls == 0);
  }());
}

TEST_CASE_METHOD(server_fixture, "reentrant acquire by the same owner", "[integration][mutex]") {
  auto sessions = connect_sessions(2);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(*sessions[0], "/locks/reentrant"), other(*sessions[1], "/locks/reentrant");
    owner_id job{42};
    auto g1 = co_await m.async_acquire(job, asio::use_awaitable);
    auto g2 = co_await m.async_acquire(job, asio::use_awaitable);
    CHECK(g2.node_path() == g1.node_path());
    CHECK(g1.hold_count() == 2);
    // a different owner on the same mutex object queues like anyone else
    auto [ec, g3] = co_await m.async_acquire_for(200ms, tuple_awaitable);
    CHECK(ec == errc::lock_timeout);
    co_await g2.async_release(asio::use_awaitable);
    auto [ec2, g4] = co_await other.async_try_acquire(tuple_awaitable);
    CHECK(ec2 == errc::lock_busy);  // still held by the first hold
    co_await g1.async_release(asio::use_awaitable);
    auto g5 = co_await other.async_try_acquire(asio::use_awaitable);
    CHECK(g5.owns_lock());
  }());
}

TEST_CASE_METHOD(server_fixture, "bad lock paths fail at once", "[integration][mutex]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex bad(s, "locks/x");
    auto [ec, g] = co_await bad.async_acquire(tuple_awaitable);
    CHECK(ec == errc::path_not_absolute);
    mutex bad2(s, "/locks//x");
    auto [ec2, g2] = co_await bad2.async_try_acquire(tuple_awaitable);
    CHECK(ec2 == errc::path_empty_segment);
    // Too long for a server's request limit: refused at once, nothing sent (the server would
    // drop the connection and the create would be retried forever). Just under the limit, the
    // server takes it, release transaction included.
    auto before = s.stats().requests_sent;
    mutex huge(s, "/locks/" + std::string(max_path_length, 'x'));
    auto [ec3, g3] = co_await huge.async_acquire(tuple_awaitable);
    CHECK(ec3 == errc::path_too_long);
    CHECK(s.stats().requests_sent == before);
    auto [ec4, st4] = co_await s.async_create("/" + std::string(max_path_length, 'x'), "", create_mode::persistent, tuple_awaitable);
    CHECK(ec4 == errc::path_too_long);
    mutex big(s, "/locks/" + std::string(max_path_length - 100, 'y'));
    mutex big2(s, "/locks/" + std::string(max_path_length - 100, 'y'));
    auto g4 = co_await big.async_acquire(asio::use_awaitable);
    auto [ec5, g5] = co_await big2.async_acquire_for(300ms, tuple_awaitable);  // queues: a marked release follows
    CHECK(ec5 == errc::lock_timeout);
    completion<lock_guard> waiter;
    big2.async_acquire(waiter.handler());
    co_await sleep_for(200ms);
    co_await g4.async_release(asio::use_awaitable);  // multi(setData, delete): the path twice
    for (int i = 0; i < 100 && !waiter.result.owns_lock(); ++i) co_await sleep_for(20ms);
    CHECK(waiter.result.owns_lock());
    co_await waiter.result.async_release(asio::use_awaitable);
  }(), 120s);
}

TEST_CASE_METHOD(proxied_fixture, "protected create: a create whose reply is lost is found again, not duplicated",
                 "[integration][mutex][fault]") {
  auto& s = connect_proxied(6000ms);
  auto& observer = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await observer.async_create("/locks", "", create_mode::persistent, asio::use_awaitable);
    co_await observer.async_create("/locks/protected", "", create_mode::persistent, asio::use_awaitable);
    mutex m(s, "/locks/protected");
    proxy.swallow_replies(true);
    completion<lock_guard> acquired;
    m.async_acquire(acquired.handler());
    // the create reaches the server; its reply does not reach us
    for (int i = 0; i < 100; ++i) {
      auto ch = co_await observer.async_get_children("/locks/protected", asio::use_awaitable);
      if (!ch.children.empty()) break;
      co_await sleep_for(10ms);
    }
    auto before = co_await observer.async_get_children("/locks/protected", asio::use_awaitable);
    REQUIRE(before.children.size() == 1);
    CHECK_FALSE(acquired.done);
    proxy.drop_all();  // connection lost with the create's outcome unknown
    proxy.swallow_replies(false);
    while (!acquired.done) co_await sleep_for(10ms);
    CHECK_FALSE(acquired.ec);
    auto& guard = acquired.result;
    REQUIRE(guard.owns_lock());
    auto after = co_await observer.async_get_children("/locks/protected", asio::use_awaitable);
    REQUIRE(after.children.size() == 1);  // one node, not two
    CHECK(guard.node_path() == "/locks/protected/" + after.children[0]);
    CHECK(guard.fencing_token() > 0);
    co_await guard.async_release(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(proxied_fixture,
                 "cut off from every server: lost after a session timeout, cancel and release do not wait",
                 "[integration][mutex][fault]") {
  auto& s = connect_proxied(2000ms);
  auto& other = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex held_m(other, "/locks/partition/a");
    auto other_guard = co_await held_m.async_acquire(asio::use_awaitable);  // so our second acquire waits

    mutex m(s, "/locks/partition/b"), waiter_m(s, "/locks/partition/a");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    asio::cancellation_signal sig;
    bool waiter_done = false;
    error_code waiter_ec;
    waiter_m.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lock_guard) {
      waiter_ec = ec;
      waiter_done = true;
    }));
    co_await sleep_for(300ms);  // queued and watching

    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(s, session_state::suspended);
    CHECK(g.status() == lock_status::maybe_lost);

    // cancelling an acquire does not wait for the network
    auto t0 = std::chrono::steady_clock::now();
    sig.emit(asio::cancellation_type::terminal);
    while (!waiter_done) co_await sleep_for(5ms);
    CHECK(waiter_ec == asio::error::operation_aborted);
    CHECK(std::chrono::steady_clock::now() - t0 < 1s);

    // a whole session timeout without a server: the lock counts as lost
    auto [lost] = co_await g.async_wait_lost(tuple_awaitable);
    CHECK(lost == errc::lock_lost);
    CHECK(g.status() == lock_status::lost);
    auto [rel] = co_await g.async_release(tuple_awaitable);
    CHECK(rel == errc::lock_lost);

    // the server expired the session meanwhile: our leftovers went with it
    co_await sleep_for(1s);
    proxy.set_accepting(true);
    co_await await_state(s, session_state::expired);
    auto a = co_await other.async_get_children("/locks/partition/a", asio::use_awaitable);
    CHECK(a.children.size() == 1);  // only the other holder: the cancelled waiter's node is gone
    auto [bec, b] = co_await other.async_get_children("/locks/partition/b", tuple_awaitable);
    CHECK(b.children.empty());      // the lost lock's node too (or its container dir)
    co_await other_guard.async_release(asio::use_awaitable);
  }(), 120s);
}

TEST_CASE_METHOD(server_fixture,
                 "check_op: a transaction guarded by the lock applies while held, never once the node is gone",
                 "[integration][mutex]") {
  auto sessions = connect_sessions(2);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto& s = *sessions[0];
    co_await s.async_create("/guarded", "0", create_mode::persistent, asio::use_awaitable);
    mutex m(s, "/locks/guarded");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    CHECK(g.check_op().type == multi_op::kind::check);
    CHECK(g.check_op().path == g.node_path());
    // (the ops are built before the co_await: GCC 12 miscompiles a braced list inside one)
    auto ops1 = g.guarded({multi_op::set_data("/guarded", "1")});
    auto r = co_await s.async_multi(std::move(ops1), asio::use_awaitable);
    CHECK(r.size() == 2);
    // the lock node deleted by someone else (an operator, a bug): the write must not apply
    co_await sessions[1]->async_delete(g.node_path(), -1, asio::use_awaitable);
    auto ops2 = g.guarded({multi_op::set_data("/guarded", "2")});
    auto [ec, res] = co_await s.async_multi(std::move(ops2), tuple_awaitable);
    CHECK(ec == zk_errc::no_node);
    REQUIRE(res.size() == 2);
    CHECK(res[0].ec == zk_errc::no_node);  // the check failed: the lock is gone
    auto d = co_await s.async_get_data("/guarded", asio::use_awaitable);
    CHECK(d.data == "1");
    co_await g.async_release(tuple_awaitable);
  }());
}

TEST_CASE_METHOD(proxied_fixture,
                 "total cancellation while disconnected completes only after the cleanup, terminal at once",
                 "[integration][mutex][cancel][fault]") {
  // Asio's total cancellation promises that nothing happened: the handler may not run while our
  // node may still be queued in the lock dir. Terminal cancellation does not wait for the network.
  auto& s = connect_proxied(8000ms);
  auto& other = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex held_m(other, "/locks/total");
    auto held = co_await held_m.async_acquire(asio::use_awaitable);  // so ours wait

    mutex m(s, "/locks/total");
    asio::cancellation_signal total_sig, terminal_sig;
    bool total_done = false, terminal_done = false;
    error_code total_ec, terminal_ec;
    m.async_acquire(asio::bind_cancellation_slot(total_sig.slot(), [&](error_code ec, lock_guard) {
      total_ec = ec;
      total_done = true;
    }));
    m.async_acquire(asio::bind_cancellation_slot(terminal_sig.slot(), [&](error_code ec, lock_guard) {
      terminal_ec = ec;
      terminal_done = true;
    }));
    co_await sleep_for(300ms);  // both queued and watching
    CHECK((co_await other.async_get_children("/locks/total", asio::use_awaitable)).children.size() == 3);

    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(s, session_state::suspended);
    total_sig.emit(asio::cancellation_type::total);
    terminal_sig.emit(asio::cancellation_type::terminal);
    co_await sleep_for(500ms);
    CHECK(terminal_done);
    CHECK(terminal_ec == asio::error::operation_aborted);
    CHECK_FALSE(total_done);  // its node is still in the dir: something happened

    proxy.set_accepting(true);
    co_await await_state(s, session_state::reconnected);
    for (int i = 0; i < 100 && !total_done; ++i) co_await sleep_for(20ms);
    REQUIRE(total_done);
    CHECK(total_ec == asio::error::operation_aborted);
    // when the handler runs, nothing of ours is left
    auto after = co_await other.async_get_children("/locks/total", asio::use_awaitable);
    CHECK(after.children.size() == 1);
    co_await held.async_release(asio::use_awaitable);
  }(), 60s);
}

namespace {
// The server's last zxid (srvr): one per write transaction, failed creates included.
long long server_zxid(const zk_server& srv) {
  auto out = srv.four_letter("srvr");
  auto at = out.find("Zxid: ");
  return at == std::string::npos ? -1 : std::stoll(out.substr(at + 6), nullptr, 16) & 0xffffffffLL;
}
}  // namespace

// Distinct keys: what an uncontended acquire costs the server. On a lock dir that exists:
// create + listing + the watch on our own node (a getData, pipelined behind them: a deletion of
// our node by anyone else is heard at once), then the release's delete (4 requests, 2 writes;
// the raw C client's floor is 3 and 2, without the own-node watch). On a lock dir that does not exist yet (a new item, or one the server reaped
// as an empty container) under parents that do: the dir alone is created, not every ancestor
// again (each create of an existing ancestor is a failed write the server logs).
TEST_CASE_METHOD(own_server_fixture<server_fixture>,
                 "requests and writes per uncontended acquire: 4 and 2, a missing lock dir created alone",
                 "[integration][mutex]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_create("/items", "", create_mode::persistent, asio::use_awaitable);
    co_await s.async_create("/items/orders", "", create_mode::persistent, asio::use_awaitable);
    mutex m(s, "/items/orders/42");
    // the lock dir is missing: the failed create and its listing, the dir, create, listing and
    // own-node watch, delete
    auto req0 = s.stats().requests_sent;
    auto zxid0 = server_zxid(srv);
    auto g = co_await m.async_acquire(asio::use_awaitable);
    co_await g.async_release(asio::use_awaitable);
    CHECK(s.stats().requests_sent - req0 == 7);
    CHECK(server_zxid(srv) - zxid0 == 4);  // failed create, dir, node, delete
    // the lock dir exists: 4 requests, 2 writes, every time
    for (int k = 0; k < 5; ++k) {
      req0 = s.stats().requests_sent;
      zxid0 = server_zxid(srv);
      auto g2 = co_await m.async_acquire(asio::use_awaitable);
      co_await g2.async_release(asio::use_awaitable);
      CHECK(s.stats().requests_sent - req0 == 4);
      CHECK(server_zxid(srv) - zxid0 == 2);
    }
    // nothing missing at all: every ancestor is created (the dir's create says which are missing)
    mutex fresh(s, "/new/a/b");
    auto g3 = co_await fresh.async_acquire(asio::use_awaitable);
    CHECK(g3.owns_lock());
    co_await g3.async_release(asio::use_awaitable);
    auto left = co_await s.async_get_children("/items/orders/42", asio::use_awaitable);
    CHECK(left.children.empty());
  }());
}

TEST_CASE_METHOD(two_sessions_fixture, "async_contenders lists the queue in order with each contender's session", "[integration][mutex]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/queue"), mb(b, "/locks/queue");
    auto empty = co_await ma.async_contenders(asio::use_awaitable);
    CHECK(empty.empty());  // no lock dir yet
    auto g = co_await ma.async_acquire(asio::use_awaitable);
    co_await b.async_create("/locks/queue/not-a-contender", "", create_mode::ephemeral, asio::use_awaitable);
    bool b_done = false;
    lock_guard gb;
    mb.async_acquire([&](error_code ec, lock_guard lg) {
      CHECK_FALSE(ec);
      gb = std::move(lg);
      b_done = true;
    });
    co_await sleep_for(300ms);
    auto q = co_await mb.async_contenders(asio::use_awaitable);
    REQUIRE(q.size() == 2);
    CHECK("/locks/queue/" + q[0].node == g.node_path());
    CHECK(q[0].stat.ephemeral_owner == a.session_id());
    CHECK(q[1].stat.ephemeral_owner == b.session_id());
    CHECK(q[0].sequence < q[1].sequence);
    CHECK(q[0].data.starts_with("zklock/3 "));  // the marker, then who holds
    CHECK(q[0].identity == q[1].identity);    // both sessions of this process: hostname:pid
    co_await g.async_release(asio::use_awaitable);
    while (!b_done) co_await sleep_for(5ms);
    co_await gb.async_release(asio::use_awaitable);
  }());
}
