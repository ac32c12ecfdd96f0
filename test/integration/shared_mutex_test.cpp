// shared_mutex against a real server: readers share, writers exclude, FIFO (no writer
// starvation), downgrade without a writer in between, upgrade refused, try-locks that write
// nothing, cancellation that leaves nothing.
#include "common.hpp"
#include "zk_server.hpp"

#include <zklock/shared_mutex.hpp>

#include <random>

using namespace zklock;
using zklock::test::zk_server;

namespace {
// Three sessions straight to the server, connected (f), and a shared_mutex on `path` on each:
// a, b, c.
struct three_sessions_fixture : server_fixture {
  const std::string path = "/locks/shared";
  std::vector<session*> f = connect_sessions(3);
  shared_mutex a{*f[0], path}, b{*f[1], path}, c{*f[2], path};
};
}  // namespace

TEST_CASE_METHOD(server_fixture, "shared_mutex: 6 sessions x 40 random reads and writes, readers overlap, writers alone",
          "[integration][shared]") {
  auto f = connect_sessions(6);
  int readers_in = 0, writers_in = 0, violations = 0, max_readers = 0, reads = 0, writes = 0;
  const std::uint32_t seed = std::random_device{}();
  CAPTURE(seed);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await all_at_once(6, [&](int i) -> asio::awaitable<void> {
      std::mt19937 rng(seed + i);
      shared_mutex m(*f[i], "/locks/rw");
      for (int k = 0; k < 40; ++k) {
        if (rng() % 4 == 0) {
          auto g = co_await m.async_acquire(asio::use_awaitable);
          CHECK(g.kind() == lock_kind::write);
          if (readers_in || writers_in) ++violations;
          ++writers_in, ++writes;
          co_await sleep_for(std::chrono::milliseconds(rng() % 3));
          --writers_in;
          co_await g.async_release(asio::use_awaitable);
        } else {
          auto g = co_await m.async_acquire_shared(asio::use_awaitable);
          CHECK(g.kind() == lock_kind::read);
          if (writers_in) ++violations;
          ++readers_in, ++reads;
          max_readers = std::max(max_readers, readers_in);
          co_await sleep_for(std::chrono::milliseconds(2 + rng() % 5));
          --readers_in;
          co_await g.async_release(asio::use_awaitable);
        }
      }
    });
    auto children = co_await f[0]->async_get_children("/locks/rw", asio::use_awaitable);
    CHECK(children.children.empty());
  }(), 240s);
  CHECK(violations == 0);
  CHECK(reads + writes == 240);
  CHECK(max_readers > 1);  // readers really held together
}

TEST_CASE_METHOD(three_sessions_fixture, "shared_mutex: a writer waits for the readers ahead, and readers behind it wait for it (FIFO)",
          "[integration][shared]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto r1 = co_await a.async_acquire_shared(asio::use_awaitable);
    auto r1b = co_await c.async_try_acquire_shared(asio::use_awaitable);  // readers share
    CHECK(r1b.owns_lock());
    co_await r1b.async_release(asio::use_awaitable);
    completion<lock_guard> writer;
    b.async_acquire(writer.handler());
    co_await contenders_until([&] { return a.async_contenders(asio::use_awaitable); }, 2);
    CHECK_FALSE(writer.ok());
    // a reader behind the waiting writer is refused by a try (on one read: no write) and waits
    auto sent = f[2]->stats().requests_sent;
    auto [ec, r2] = co_await c.async_try_acquire_shared(tuple_awaitable);
    CHECK(ec == errc::lock_busy);
    CHECK(f[2]->stats().requests_sent - sent == 1);
    completion<lock_guard> reader2;
    c.async_acquire_shared(reader2.handler());
    auto q = co_await contenders_until([&] { return a.async_contenders(asio::use_awaitable); }, 3);
    REQUIRE(q.size() == 3);
    CHECK(q[0].kind == lock_kind::read);
    CHECK(q[1].kind == lock_kind::write);
    CHECK(q[2].kind == lock_kind::read);
    co_await sleep_for(200ms);
    CHECK_FALSE(writer.ok());
    CHECK_FALSE(reader2.ok());
    co_await r1.async_release(asio::use_awaitable);
    co_await until(writer.done);
    CHECK(writer.ok());
    co_await sleep_for(200ms);
    CHECK_FALSE(reader2.ok());  // still behind the writer
    co_await writer.result.async_release(asio::use_awaitable);
    co_await until(reader2.done);
    CHECK(reader2.ok());
    co_await reader2.result.async_release(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(three_sessions_fixture, "shared_mutex: downgrade lets the reader behind in, never the writer behind it, upgrade refused",
          "[integration][shared]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto w = co_await a.async_acquire(asio::use_awaitable);
    completion<lock_guard> reader, writer;
    b.async_acquire_shared(reader.handler());
    co_await sleep_for(100ms);  // the reader queues first
    c.async_acquire(writer.handler());
    auto q = co_await contenders_until([&] { return a.async_contenders(asio::use_awaitable); }, 3);
    CHECK_FALSE(reader.ok());
    co_await w.async_downgrade(asio::use_awaitable);
    CHECK(w.kind() == lock_kind::read);
    CHECK(w.owns_lock());
    co_await until(reader.done);
    CHECK(reader.ok());  // granted beside the downgraded holder
    co_await sleep_for(300ms);
    CHECK_FALSE(writer.ok());  // the writer queued behind never got in between
    q = co_await a.async_contenders(asio::use_awaitable);
    REQUIRE(q.size() == 3);
    CHECK(q[0].kind == lock_kind::read);  // the downgraded writer, as its mark says
    // a second downgrade, and a mutex guard's, are refused
    auto [ec1] = co_await w.async_downgrade(asio::as_tuple(asio::use_awaitable));
    CHECK(ec1 == errc::not_downgradable);
    co_await w.async_release(asio::use_awaitable);
    co_await sleep_for(200ms);
    CHECK_FALSE(writer.ok());
    co_await reader.result.async_release(asio::use_awaitable);
    co_await until(writer.done);
    CHECK(writer.ok());
    co_await writer.result.async_release(asio::use_awaitable);

    mutex plain(*f[0], "/locks/plain");
    auto pg = co_await plain.async_acquire(asio::use_awaitable);
    auto [ec2] = co_await pg.async_downgrade(asio::as_tuple(asio::use_awaitable));
    CHECK(ec2 == errc::not_downgradable);
    co_await pg.async_release(asio::use_awaitable);

    // reentrancy: a read hold refuses the write side; a write hold covers reads
    owner_id me{7};
    auto rd = co_await a.async_acquire_shared(me, asio::use_awaitable);
    auto [ec3, up] = co_await a.async_acquire(me, tuple_awaitable);
    CHECK(ec3 == errc::upgrade_refused);
    co_await rd.async_release(asio::use_awaitable);
    auto wr = co_await a.async_acquire(me, asio::use_awaitable);
    auto rd2 = co_await a.async_acquire_shared(me, asio::use_awaitable);
    CHECK(wr.hold_count() == 2);
    co_await rd2.async_release(asio::use_awaitable);
    co_await wr.async_release(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(server_fixture, "shared_mutex: cancelled and timed-out reads and writes leave no node and no watch",
          "[integration][shared][cancel]") {
  auto f = connect_sessions(2);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    shared_mutex a(*f[0], "/locks/rwc"), b(*f[1], "/locks/rwc");
    auto w = co_await a.async_acquire(asio::use_awaitable);
    auto [e1, g1] = co_await b.async_acquire_shared_for(50ms, tuple_awaitable);
    CHECK(e1 == errc::lock_timeout);
    auto [e2, g2] = co_await b.async_acquire_for(50ms, tuple_awaitable);
    CHECK(e2 == errc::lock_timeout);
    co_await w.async_downgrade(asio::use_awaitable);
    auto [e3, g3] = co_await b.async_acquire_for(50ms, tuple_awaitable);  // behind a reader now
    CHECK(e3 == errc::lock_timeout);
    auto ch = co_await f[0]->async_get_children("/locks/rwc", asio::use_awaitable);
    CHECK(ch.children.size() == 2);  // the downgraded writer's node and its downgrade mark
    co_await until_no_watches(srv, 2s);
    CHECK(server_watches(srv) == 0);
    co_await w.async_release(asio::use_awaitable);
    CHECK(co_await children_of(*f[0], "/locks/rwc") == 0);
  }());
}

TEST_CASE_METHOD(three_sessions_fixture, "shared_mutex: a downgraded writer's mark goes with its release and with its loss, no watch left",
          "[integration][shared]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    const std::string& dir = path;  // f[2] looks on
    // released: the mark is deleted ahead of the node, so nothing is left once the release completes
    auto w = co_await a.async_acquire(asio::use_awaitable);
    co_await w.async_downgrade(asio::use_awaitable);
    auto ch = co_await f[2]->async_get_children(dir, asio::use_awaitable);
    REQUIRE(ch.children.size() == 2);
    auto mark = std::string(ch.children[0].starts_with("zklock-downgraded-") ? ch.children[0] : ch.children[1]);
    auto st = co_await f[2]->async_exists(dir + "/" + mark, asio::use_awaitable);
    REQUIRE(st);
    CHECK(st->ephemeral_owner == f[0]->session_id());  // ephemeral, the writer's session's
    auto r = co_await b.async_acquire_shared(asio::use_awaitable);  // granted beside it
    co_await w.async_release(asio::use_awaitable);
    CHECK(co_await children_of(*f[2], dir) == 1);  // the reader's node only
    co_await r.async_release(asio::use_awaitable);
    CHECK(co_await children_of(*f[2], dir) == 0);
    co_await until_no_watches(srv, 2s);
    CHECK(server_watches(srv) == 0);

    // lost (an operator deletes the writer's node): the holder deletes its mark too
    auto w2 = co_await a.async_acquire(asio::use_awaitable);
    co_await w2.async_downgrade(asio::use_awaitable);
    REQUIRE(co_await children_of(*f[2], dir) == 2);
    co_await f[2]->async_delete(w2.node_path(), -1, asio::use_awaitable);
    co_await until([&] { return w2.status() == lock_status::lost; });
    co_await until_children(*f[2], dir, 0);
    auto [rec] = co_await w2.async_release(asio::as_tuple(asio::use_awaitable));
    CHECK(rec == errc::lock_lost);
    co_await until_no_watches(srv, 2s);
    CHECK(server_watches(srv) == 0);
  }());
}
