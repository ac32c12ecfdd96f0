// A contender watches its own node, waiting and holding, against real servers: a waiter whose
// node someone else deletes queues again (never granted beside the waiter behind it), and a
// holder whose node is deleted turns lost (node_deleted) at once, however busy its session is.
// The oracle: a holder count that must never exceed one, and the loss's cause.
#include "common.hpp"

#include <zklock/election.hpp>
#include <zklock/semaphore.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using namespace zklock;

namespace {

// The children of `path` in queue order (by their sequence suffix).
asio::awaitable<std::vector<std::string>> children_in_queue_order(session& s, const std::string& path) {
  auto [ec, r] = co_await s.async_get_children(path, tuple_awaitable);
  std::vector<std::string> q = ec ? std::vector<std::string>{} : r.children;
  std::sort(q.begin(), q.end(),
            [](const std::string& a, const std::string& b) { return a.substr(a.size() - 10) < b.substr(b.size() - 10); });
  co_return q;
}

// Someone else's session (an operator's zkCli, a cleanup script) deletes the node.
asio::awaitable<void> operator_delete(session& op, const std::string& node) {
  auto [ec] = co_await op.async_delete(node, -1, tuple_awaitable);
  REQUIRE_FALSE(ec);
}

constexpr auto session_timeout = 3000ms;
// Longer than a third of the session timeout: the waiter's contact is stale when its turn comes
// (the grant then asks the server about its node first), and no keepalive of a hold runs.
constexpr auto quiet = session_timeout / 3 + 400ms;

// An operator's session (`op`, which deletes and writes the contenders' nodes) and the
// contenders' (session_timeout), straight to the server.
struct operator_fixture : server_fixture {
  session& op = connect(20000ms);
  std::vector<session*> contenders(int n) { return connect_sessions(n, session_timeout); }
};

}  // namespace

namespace {
// What a contender holds by: a mutex's guard or an election's leadership.
bool holds(const lock_guard& g) { return g.owns_lock(); }
bool holds(const leadership& l) { return l.is_leader(); }
asio::awaitable<void> give_back(lock_guard& g) { co_await g.async_release(asio::use_awaitable); }
asio::awaitable<void> give_back(leadership& l) { co_await l.async_resign(asio::use_awaitable); }

// L holds, A then B queue; every session is quiet longer than a third of its timeout; someone
// else deletes A's node while A is connected and waiting; L gives up. B holds alone (A is not
// granted beside it); A, queued again on a new node, holds after B. The contenders L, A, B are
// `start(i, handler)` for i = 0, 1, 2: it queues contender i, whose grant hands `handler` a Held.
template <class Held, class Start>
asio::awaitable<void> deleted_waiter(session& op, const std::string& path, Start start_contender, int& max_holding) {
  int holding = 0;
  bool granted[3] = {false, false, false};
  std::vector<Held> held(3);
  auto start = [&](int i) {
    start_contender(i, [&, i](error_code ec, Held h) {
      REQUIRE_FALSE(ec);
      REQUIRE(holds(h));
      held[i] = std::move(h);
      granted[i] = true;
      max_holding = std::max(max_holding, ++holding);
    });
  };
  start(0);
  co_await until([&] { return granted[0]; });
  start(1);
  co_await until_children(op, path, 2, 20s);
  start(2);
  co_await until_children(op, path, 3, 20s);
  auto q = co_await children_in_queue_order(op, path);
  const std::string a_node = path + "/" + q[1];
  co_await sleep_for(quiet);             // every session idle for a third of its timeout
  co_await operator_delete(op, a_node);  // A is connected and waiting
  co_await sleep_for(200ms);
  --holding;
  co_await give_back(held[0]);  // L's release: B's turn, never A's
  co_await until([&] { return granted[2]; });
  co_await sleep_for(session_timeout / 2);  // A's keepalive, had it been granted, would tell
  CHECK_FALSE(granted[1]);
  CHECK(max_holding == 1);
  --holding;
  co_await give_back(held[2]);
  co_await until([&] { return granted[1]; });
  CHECK(held[1].node_path() != a_node);
  --holding;
  co_await give_back(held[1]);
  co_await until_children(op, path, 0, 20s);
}
}  // namespace

TEST_CASE_METHOD(operator_fixture,
                 "mutex: a waiter whose node is deleted by someone else queues again and the waiter behind it holds alone",
                 "[integration][own_node]") {
  auto s = contenders(3);
  const std::string path = "/locks/own-node/waiter";
  int max_holding = 0;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    std::vector<mutex> m;
    for (auto* x : s) m.emplace_back(*x, path);
    co_await deleted_waiter<lock_guard>(
        op, path, [&](int i, auto granted) { m[i].async_acquire(std::move(granted)); }, max_holding);
  }());
  CHECK(max_holding == 1);
}

TEST_CASE_METHOD(operator_fixture,
                 "election: a candidate whose node is deleted by someone else re-joins and the candidate behind it leads alone",
                 "[integration][own_node][election]") {
  auto s = contenders(3);
  const std::string path = "/election/own-node/candidate";
  int max_leading = 0;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    std::vector<election> e;
    for (int i = 0; i < 3; ++i) e.emplace_back(*s[i], path, "c" + std::to_string(i));
    co_await deleted_waiter<leadership>(
        op, path, [&](int i, auto granted) { e[i].async_campaign(std::move(granted)); }, max_leading);
  }());
  CHECK(max_leading == 1);
}

namespace {
// A session that is never idle: a read every 300 ms until `stop` (no keepalive of a hold ever
// runs: its contact is always fresh).
asio::awaitable<void> keep_busy(session& s, const bool& stop) {
  while (!stop) {
    co_await s.async_exists("/", tuple_awaitable);
    co_await sleep_for(300ms);
  }
}
}  // namespace

namespace {
// `g`'s session `s` kept busy, `op` deletes its node: lost (node_deleted) at once, told by its
// node's watch, well before the deadline or a keepalive could say anything (while reads keep
// the session busy, neither ever does).
asio::awaitable<void> check_busy_holder_lost(session& s, session& op, lock_guard& g) {
  bool stop = false;
  asio::co_spawn(co_await asio::this_coro::executor, keep_busy(s, stop), asio::detached);
  co_await sleep_for(quiet);  // busy all along: the contact stays fresh
  std::optional<error_code> lost;
  g.async_wait_lost([&](error_code ec) { lost = ec; });
  co_await operator_delete(op, g.node_path());
  co_await until([&] { return lost.has_value(); }, session_timeout / 2);
  stop = true;
  REQUIRE(lost.has_value());
  CHECK(lock_lost_cause(*lost) == lost_cause::node_deleted);
  CHECK(g.status() == lock_status::lost);
  auto [rel] = co_await g.async_release(tuple_awaitable);
  CHECK(lock_lost_cause(rel) == lost_cause::node_deleted);
  co_await sleep_for(400ms);  // keep_busy ends
}
}  // namespace

TEST_CASE_METHOD(operator_fixture, "mutex: a busy holder whose node is deleted by someone else is lost (node_deleted) at once",
                 "[integration][own_node]") {
  auto& s = *contenders(1)[0];
  const std::string path = "/locks/own-node/busy-holder";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, path);
    auto g = co_await m.async_acquire(asio::use_awaitable);
    co_await check_busy_holder_lost(s, op, g);
  }());
}

TEST_CASE_METHOD(operator_fixture,
                 "semaphore: a busy lease holder whose lease node is deleted by someone else is lost (node_deleted) "
                 "at once, granted alone or after a wait",
                 "[integration][own_node][semaphore]") {
  auto cs = contenders(2);
  auto& s = *cs[0];
  const std::string path = "/locks/own-node/lease-holder";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    // (the semaphore's internal mutex watches no node of its own; its lease step does)
    semaphore sem(s, path, 1), other(*cs[1], path, 1);
    for (bool waited : {false, true}) {
      CAPTURE(waited);
      lock_guard g;
      if (!waited) {
        g = co_await sem.async_acquire(asio::use_awaitable);
      } else {
        // granted by the leases dir's listing once the holder ahead releases
        auto ahead = co_await other.async_acquire(asio::use_awaitable);
        bool done = false;
        sem.async_acquire([&](error_code ec, lock_guard h) {
          CHECK_FALSE(ec);
          g = std::move(h);
          done = true;
        });
        co_await until_children(op, path + "/leases", 2, 20s);
        co_await ahead.async_release(asio::use_awaitable);
        co_await until([&] { return done; }, 10s);
        REQUIRE(done);
      }
      co_await check_busy_holder_lost(s, op, g);
    }
  }());
}

TEST_CASE_METHOD(operator_fixture, "election: a busy leader whose node is deleted by someone else is lost (node_deleted) at once",
                 "[integration][own_node][election]") {
  auto s = contenders(2);
  const std::string path = "/election/own-node/busy-leader";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election e(*s[0], path, "busy"), next(*s[1], path, "next");
    auto l = co_await e.async_campaign(asio::use_awaitable);
    std::optional<leadership> l2;
    next.async_campaign([&](error_code ec, leadership x) {
      REQUIRE_FALSE(ec);
      l2 = std::move(x);
    });
    co_await until_children(op, path, 2, 20s);
    bool stop = false;
    asio::co_spawn(ioc, keep_busy(*s[0], stop), asio::detached);
    co_await sleep_for(quiet);
    std::optional<error_code> lost;
    l.async_wait_lost([&](error_code ec) { lost = ec; });
    co_await operator_delete(op, l.node_path());
    co_await until([&] { return l2.has_value(); });  // the next candidate takes over...
    co_await until([&] { return lost.has_value(); }, session_timeout / 2);  // ...and the old leader knows
    stop = true;
    REQUIRE(lost.has_value());
    CHECK(lock_lost_cause(*lost) == lost_cause::node_deleted);
    CHECK_FALSE(l.is_leader());
    co_await l.async_resign(tuple_awaitable);
    co_await l2->async_resign(asio::use_awaitable);
    co_await until_children(op, path, 0, 20s);
    co_await sleep_for(400ms);
  }());
}

TEST_CASE_METHOD(operator_fixture, "our own release's delete is no loss, and a data write to our node is no loss either",
                 "[integration][own_node]") {
  auto& s = *contenders(1)[0];
  const std::string path = "/locks/own-node/release";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, path);
    auto g = co_await m.async_acquire(asio::use_awaitable);
    std::optional<error_code> lost;
    g.async_wait_lost([&](error_code ec) { lost = ec; });
    // a foreign write (Curator's Revoker, an operator's set): still ours, watched again
    auto [wec, wst] = co_await op.async_set_data(g.node_path(), "__REVOKE__", -1, tuple_awaitable);
    REQUIRE_FALSE(wec);
    co_await sleep_for(200ms);
    CHECK_FALSE(lost.has_value());
    CHECK(g.status() == lock_status::held);
    // ...and its deletion after the write is still heard at once
    co_await operator_delete(op, g.node_path());
    co_await until([&] { return lost.has_value(); }, session_timeout / 2);
    CHECK(lock_lost_cause(*lost) == lost_cause::node_deleted);
    g = lock_guard{};
    // a plain acquire and release: the release's own delete fires our node's watch, no loss
    auto g2 = co_await m.async_acquire(asio::use_awaitable);
    std::optional<error_code> lost2;
    g2.async_wait_lost([&](error_code ec) { lost2 = ec; });
    auto [rec] = co_await g2.async_release(tuple_awaitable);
    CHECK_FALSE(rec);
    co_await sleep_for(100ms);
    REQUIRE(lost2.has_value());
    CHECK(*lost2 == errc::already_released);
    co_await until_children(op, path, 0, 20s);
  }());
}

TEST_CASE_METHOD(operator_fixture,
                 "mutex: a write into a waiter's node, its deletion and the holder's, pipelined: no grant on the deleted node",
                 "[integration][own_node]") {
  // The write spends the waiter's own-node watch; the holder's deletion arrives while it is
  // being set again. The waiter must not take that event for a grant: its node is gone.
  auto s = contenders(3);
  const std::string path = "/locks/own-node/write-delete-delete";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    std::vector<mutex> m;
    for (auto* x : s) m.emplace_back(*x, path);
    auto held = co_await m[0].async_acquire(asio::use_awaitable);
    lock_guard a, b;
    bool a_granted = false, b_granted = false;
    std::string a_node_at_grant;
    bool b_owned_at_a_grant = false, a_owned_at_b_grant = false;
    m[1].async_acquire([&](error_code ec, lock_guard g) {
      REQUIRE_FALSE(ec);
      a_node_at_grant = g.node_path();
      b_owned_at_a_grant = b.owns_lock();
      a = std::move(g);
      a_granted = true;
    });
    co_await until_children(op, path, 2, 20s);
    m[2].async_acquire([&](error_code ec, lock_guard g) {
      REQUIRE_FALSE(ec);
      a_owned_at_b_grant = a.owns_lock();
      b = std::move(g);
      b_granted = true;
    });
    co_await until_children(op, path, 3, 20s);
    auto q = co_await children_in_queue_order(op, path);
    const std::string a_node = path + "/" + q[1];
    REQUIRE(path + "/" + q[0] == held.node_path());
    // one pipelined batch from the operator's session: write, delete A's node, delete the holder's
    int replies = 0;
    op.async_set_data(a_node, "x", -1, [&](error_code, auto&&...) { ++replies; });
    op.async_delete(a_node, -1, [&](error_code) { ++replies; });
    op.async_delete(held.node_path(), -1, [&](error_code) { ++replies; });
    co_await until([&] { return replies == 3; });
    co_await until([&] { return b_granted; });
    co_await sleep_for(300ms);
    CHECK_FALSE(a_granted);  // queued again behind B
    CHECK_FALSE(a_owned_at_b_grant);
    CHECK(a_node_at_grant.empty());
    co_await b.async_release(asio::use_awaitable);
    co_await until([&] { return a_granted; });
    CHECK(a_node_at_grant != a_node);
    CHECK_FALSE(b_owned_at_a_grant);
    CHECK(a.owns_lock());
    co_await a.async_release(asio::use_awaitable);
    co_await held.async_release(tuple_awaitable);
    co_await until_children(op, path, 0, 20s);
  }());
}
