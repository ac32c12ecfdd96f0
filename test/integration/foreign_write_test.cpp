// Writes by other clients to lock nodes: no data write may grant a waiter while the holder
// still holds (Curator's Revoker writes "__REVOKE__" into the holder's node; an operator may
// `set` anything, "zklock/2:downgraded" included), a downgrade is proven only by its holder's
// own mark, and a try-read checks the mark that a blocking read honours.
#include "common.hpp"
#include "zk_server.hpp"

#include <zklock/shared_mutex.hpp>

using namespace zklock;
using zklock::test::zk_server;

TEST_CASE_METHOD(server_fixture, "a write to the holder's node grants nobody: the waiter waits for the release",
          "[integration][mutex][foreign]") {
  // once for each data, each on a server of its own
  auto data = GENERATE(std::string("__REVOKE__"), std::string("arbitrary operator data"));
  CAPTURE(data);
  auto& a = connect();
  auto& b = connect();
  auto& c = connect();
  auto& writer = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/foreign"), mb(b, "/locks/foreign"), mc(c, "/locks/foreign");
    auto ga = co_await ma.async_acquire(asio::use_awaitable);
    REQUIRE(ga.owns_lock());
    completion<lock_guard> b_acquire;
    mb.async_acquire(b_acquire.handler());
    // B queued behind A (its node is listed) and is watching A
    for (int i = 0; i < 100; ++i) {
      auto q = co_await ma.async_contenders(asio::use_awaitable);
      if (q.size() == 2) break;
      co_await sleep_for(10ms);
    }
    co_await sleep_for(100ms);
    REQUIRE_FALSE(b_acquire.done);

    co_await writer.async_set_data(ga.node_path(), data, -1, asio::use_awaitable);
    co_await sleep_for(500ms);
    CHECK(ga.owns_lock());
    CHECK(ga.status() == lock_status::held);
    CHECK_FALSE(b_acquire.done);  // two holders otherwise
    auto [ec, gc] = co_await mc.async_try_acquire(tuple_awaitable);
    CHECK(ec == errc::lock_busy);
    // a second write, now that B may have re-watched A: still nothing
    co_await writer.async_set_data(ga.node_path(), data, -1, asio::use_awaitable);
    co_await sleep_for(200ms);
    CHECK_FALSE(b_acquire.done);

    co_await ga.async_release(asio::use_awaitable);
    for (int i = 0; i < 300 && !b_acquire.done; ++i) co_await sleep_for(10ms);
    CHECK(b_acquire.done);
    CHECK_FALSE(b_acquire.ec);
    if (b_acquire.done) {
      CHECK(b_acquire.result.owns_lock());
      co_await b_acquire.result.async_release(asio::use_awaitable);
    }
    auto left = co_await writer.async_get_children("/locks/foreign", asio::use_awaitable);
    CHECK(left.children.empty());
  }());
}

TEST_CASE_METHOD(two_sessions_fixture, "try_acquire_shared behind a downgraded writer succeeds, as a blocking read does",
          "[integration][shared][foreign]") {
  run_test(ioc, [&]() -> asio::awaitable<void> {
    shared_mutex ma(a, "/locks/trydown"), mb(b, "/locks/trydown");
    auto w = co_await ma.async_acquire(asio::use_awaitable);
    // a writer holding: a try-read is busy, and wrote nothing
    {
      auto [ec, g] = co_await mb.async_try_acquire_shared(tuple_awaitable);
      CHECK(ec == errc::lock_busy);
    }
    co_await w.async_downgrade(asio::use_awaitable);
    REQUIRE(w.kind() == lock_kind::read);
    // downgraded: it holds the read side now, so a try-read is granted beside it
    {
      auto [ec, g] = co_await mb.async_try_acquire_shared(tuple_awaitable);
      CHECK_FALSE(ec);
      CHECK(g.owns_lock());
      CHECK(w.owns_lock());
      // a try-write is still busy
      auto [ec2, g2] = co_await mb.async_try_acquire(tuple_awaitable);
      CHECK(ec2 == errc::lock_busy);
      if (g.owns_lock()) co_await g.async_release(asio::use_awaitable);
    }
    co_await w.async_release(asio::use_awaitable);
    auto left = co_await a.async_get_children("/locks/trydown", asio::use_awaitable);
    CHECK(left.children.empty());
  }());
}

namespace {
// The downgrade mark a zklock writer's holder creates (src/sansio/node_name.hpp): the writer's
// sequence after "zklock-downgraded-", in the same dir.
std::string mark_of(const std::string& writer_path) {
  auto slash = writer_path.rfind('/');
  return writer_path.substr(0, slash + 1) + "zklock-downgraded-" + writer_path.substr(writer_path.size() - 10);
}
}  // namespace

TEST_CASE_METHOD(two_sessions_fixture, "a downgrade forged by another session grants no reader beside the writer", "[integration][shared][foreign]") {
  auto& forger = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    const std::string dir = "/locks/forged";
    shared_mutex ma(a, dir), mb(b, dir);
    auto w = co_await ma.async_acquire(asio::use_awaitable);
    REQUIRE(w.owns_lock());
    completion<lock_guard> reader;
    mb.async_acquire_shared(reader.handler());
    co_await until_children(a, dir, 2);
    co_await sleep_for(100ms);  // the reader watches the writer
    REQUIRE_FALSE(reader.done);

    // the marker alone, written by another session
    co_await forger.async_set_data(w.node_path(), "zklock/2:downgraded", -1, asio::use_awaitable);
    co_await sleep_for(300ms);
    CHECK_FALSE(reader.done);  // two holders otherwise: the writer never downgraded
    CHECK(w.kind() == lock_kind::write);
    CHECK(w.status() == lock_status::held);
    // the view (async_contenders, zklock holders) agrees with the grant rule: still a writer
    auto view = co_await ma.async_contenders(asio::use_awaitable);
    REQUIRE(view.size() == 2);
    CHECK(view[0].kind == lock_kind::write);
    {
      auto [ec, g] = co_await mb.async_try_acquire_shared(tuple_awaitable);
      CHECK(ec == errc::lock_busy);
    }
    // and a mark of the forger's own (ephemeral: its session owns it), the marker written again
    const auto mark = mark_of(w.node_path());
    co_await forger.async_create(mark, "", create_mode::ephemeral, asio::use_awaitable);
    co_await forger.async_set_data(w.node_path(), "zklock/2:downgraded web-1:1", -1, asio::use_awaitable);
    co_await sleep_for(300ms);
    CHECK_FALSE(reader.done);
    {
      auto [ec, g] = co_await mb.async_try_acquire_shared(tuple_awaitable);
      CHECK(ec == errc::lock_busy);
    }
    view = co_await ma.async_contenders(asio::use_awaitable);
    REQUIRE(view.size() == 2);
    CHECK(view[0].kind == lock_kind::write);  // the mark is another session's
    // the writer's own downgrade finds the mark's name taken by another session: refused, it
    // still holds the write side
    auto [dec] = co_await w.async_downgrade(asio::as_tuple(asio::use_awaitable));
    CHECK(dec == zk_errc::node_exists);
    CHECK(w.kind() == lock_kind::write);
    CHECK(w.owns_lock());
    co_await sleep_for(200ms);
    CHECK_FALSE(reader.done);

    // the forger's mark gone, the writer's own downgrade lets the reader in
    co_await forger.async_delete(mark, -1, asio::use_awaitable);
    co_await w.async_downgrade(asio::use_awaitable);
    CHECK(w.kind() == lock_kind::read);
    co_await until(reader.done);
    CHECK(reader.done);
    CHECK_FALSE(reader.ec);
    view = co_await ma.async_contenders(asio::use_awaitable);
    REQUIRE(view.size() == 2);
    CHECK(view[0].kind == lock_kind::read);  // its own mark: downgraded
    if (reader.done) co_await reader.result.async_release(asio::use_awaitable);
    co_await w.async_release(asio::use_awaitable);
    auto left = co_await forger.async_get_children(dir, asio::use_awaitable);
    CHECK(left.children.empty());  // the writer's mark went with its release
  }());
}

TEST_CASE_METHOD(two_sessions_fixture, "a revocation request written over a downgraded writer's node leaves it a reader",
          "[integration][shared][foreign]") {
  auto& revoker = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    const std::string dir = "/locks/revdown";
    shared_mutex ma(a, dir), mb(b, dir);
    auto w = co_await ma.async_acquire(asio::use_awaitable);
    co_await w.async_downgrade(asio::use_awaitable);
    REQUIRE(w.kind() == lock_kind::read);
    // what Curator's Revoker writes
    co_await revoker.async_set_data(w.node_path(), "__REVOKE__", -1, asio::use_awaitable);
    {
      auto [ec, g] = co_await mb.async_try_acquire_shared(tuple_awaitable);
      CHECK_FALSE(ec);
      CHECK(g.owns_lock());
      if (g.owns_lock()) co_await g.async_release(asio::use_awaitable);
    }
    auto [ec, g] = co_await mb.async_acquire_shared_for(5s, tuple_awaitable);
    CHECK_FALSE(ec);
    CHECK(g.owns_lock());
    CHECK(w.owns_lock());
    if (g.owns_lock()) co_await g.async_release(asio::use_awaitable);
    co_await w.async_release(asio::use_awaitable);
    auto left = co_await revoker.async_get_children(dir, asio::use_awaitable);
    CHECK(left.children.empty());
  }());
}
