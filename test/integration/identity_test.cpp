// Who holds and waits: every recipe's nodes carry an identity after their
// marker, async_contenders reports it, and the marker rules (the downgrade) still hold.
#include "common.hpp"
#include "zk_server.hpp"

#include <zklock/election.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <unistd.h>

using namespace zklock;
using zklock::test::zk_server;

namespace {
std::string host_pid() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(::getpid());
}
}  // namespace

TEST_CASE_METHOD(server_fixture, "identities: every recipe's nodes say who holds and waits", "[integration][identity]") {
  auto named = [&](std::optional<std::string> id) {
    auto o = options_for(srv.connect_string());
    o.identity = std::move(id);
    return std::make_unique<session>(ioc.get_executor(), o);
  };
  auto dflt = named(std::nullopt);  // "<hostname>:<pid>"
  auto worker = named("worker-2");
  auto anon = named("");  // no identity: the marker alone, as before
  run_test(ioc, [&]() -> asio::awaitable<void> {
    for (auto* s : {dflt.get(), worker.get(), anon.get()}) co_await s->async_connect(asio::use_awaitable);

    // mutex: the session's identity, a mutex's own, none
    mutex m1(*dflt, "/id/mutex");
    mutex m2(*worker, "/id/mutex");
    mutex m3(*worker, "/id/mutex", mutex_options{.identity = "request 42"});
    mutex m4(*anon, "/id/mutex");
    auto held = co_await m1.async_acquire(asio::use_awaitable);
    std::vector<lock_guard> later(3);
    int granted = 0;
    auto wait_on = [&](mutex& m, lock_guard& g) {
      asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        g = co_await m.async_acquire(asio::use_awaitable);
        ++granted;
      }, asio::detached);
    };
    wait_on(m2, later[0]);
    co_await contenders_until([&] { return m1.async_contenders(asio::use_awaitable); }, 2);
    wait_on(m3, later[1]);
    co_await contenders_until([&] { return m1.async_contenders(asio::use_awaitable); }, 3);
    wait_on(m4, later[2]);
    auto q = co_await contenders_until([&] { return m1.async_contenders(asio::use_awaitable); }, 4);
    REQUIRE(q.size() == 4);
    CHECK(q[0].identity == host_pid());
    CHECK(q[0].data == "zklock/3 " + host_pid());
    CHECK(q[1].identity == "worker-2");
    CHECK(q[2].identity == "request 42");
    CHECK(q[3].identity.empty());
    CHECK(q[3].data == "zklock/3");
    // the queue works as always: each is granted in turn
    co_await held.async_release(asio::use_awaitable);
    for (int i = 0; i < 3; ++i) {
      for (int n = 0; n < 200 && granted == i; ++n) co_await sleep_for(10ms);
      REQUIRE(granted == i + 1);
      co_await later[i].async_release(asio::use_awaitable);
    }

    // shared_mutex: a downgraded writer keeps its identity, and the reader behind it is let in
    shared_mutex w(*dflt, "/id/rw", shared_mutex_options{.identity = "writer-A"});
    shared_mutex r(*worker, "/id/rw");
    auto wg = co_await w.async_acquire(asio::use_awaitable);
    lock_guard rg;
    bool reader_in = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
      rg = co_await r.async_acquire_shared(asio::use_awaitable);
      reader_in = true;
    }, asio::detached);
    q = co_await contenders_until([&] { return w.async_contenders(asio::use_awaitable); }, 2);
    REQUIRE(q.size() == 2);
    CHECK(q[0].kind == lock_kind::write);
    CHECK(q[0].identity == "writer-A");
    CHECK(q[1].kind == lock_kind::read);
    CHECK(q[1].identity == "worker-2");
    co_await sleep_for(100ms);
    CHECK_FALSE(reader_in);
    co_await wg.async_downgrade(asio::use_awaitable);
    for (int n = 0; n < 200 && !reader_in; ++n) co_await sleep_for(10ms);
    CHECK(reader_in);  // granted beside the downgraded writer: the marker still reads
    q = co_await w.async_contenders(asio::use_awaitable);
    REQUIRE(q.size() == 2);
    CHECK(q[0].kind == lock_kind::read);  // downgraded, as its mark says
    CHECK(q[0].data == "zklock/2:downgraded writer-A");
    CHECK(q[0].identity == "writer-A");
    co_await rg.async_release(asio::use_awaitable);
    co_await wg.async_release(asio::use_awaitable);

    // semaphore leases
    semaphore sem(*worker, "/id/sem", 2, semaphore_options{.identity = "encoder-1"});
    semaphore sem2(*dflt, "/id/sem", 2);
    auto l1 = co_await sem.async_acquire(asio::use_awaitable);
    auto l2 = co_await sem2.async_acquire(asio::use_awaitable);
    q = co_await sem.async_leases(asio::use_awaitable);
    REQUIRE(q.size() == 2);
    CHECK(q[0].identity == "encoder-1");
    CHECK(q[1].identity == host_pid());
    co_await l1.async_release(asio::use_awaitable);
    co_await l2.async_release(asio::use_awaitable);

    // an election candidate: its participant id, the node's whole data
    election e(*dflt, "/id/elect", "scheduler-7");
    auto lead = co_await e.async_campaign(asio::use_awaitable);
    q = co_await e.async_candidates(asio::use_awaitable);
    REQUIRE(q.size() == 1);
    CHECK(q[0].identity == "scheduler-7");
    CHECK(q[0].data == "scheduler-7");
    co_await lead.async_resign(asio::use_awaitable);

    // a foreign contender (kazoo Lock(identifier="kazoo worker 7"), Curator: the client's
    // address): its data is its identity
    auto kz = co_await worker->async_create("/id/mutex/" + std::string(32, 'a') + "__lock__", "kazoo worker 7",
                                            create_mode::ephemeral_sequential, asio::use_awaitable);
    auto cur = co_await worker->async_create("/id/mutex/_c_0f2b-lock-", "127.0.0.1",
                                             create_mode::ephemeral_sequential, asio::use_awaitable);
    q = co_await m1.async_contenders(asio::use_awaitable);
    REQUIRE(q.size() == 2);
    CHECK(q[0].identity == "kazoo worker 7");
    CHECK(q[1].identity == "127.0.0.1");
    co_await worker->async_delete(kz.path, -1, asio::use_awaitable);
    co_await worker->async_delete(cur.path, -1, asio::use_awaitable);
    auto left = co_await m1.async_contenders(asio::use_awaitable);
    CHECK(left.empty());
  }());
}
