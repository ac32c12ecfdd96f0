// Failure-path races: a grant that races its session's close or destruction, a released
// guard destroyed on another thread, and a release the server refuses for good.
#include "common.hpp"

#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <sys/wait.h>
#include <thread>

using namespace zklock;
using zklock::test::zk_server;

namespace {

// Sets the ACL of `path` with ZooKeeper's own command-line client (the public API creates nodes
// with the session's acl_policy only: open or creator_all; it has no setAcl and no per-create
// ACL list). `acl` as zkCli takes it, e.g. "world:anyone:cr".
void set_acl(const zk_server& srv, const std::string& path, const std::string& acl) {
  const char* cp = std::getenv("ZKLOCK_TEST_ZK_CLASSPATH");
  std::string classpath = cp ? cp
                             : "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:"
                               "/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar:/usr/share/java/commons-cli.jar";
  std::string cmd = "java -Xshare:auto -XX:TieredStopAtLevel=1 -cp '" + classpath +
                    "' org.apache.zookeeper.ZooKeeperMain -server " + srv.connect_string() + " setAcl " + path + " " +
                    acl + " 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    int rc = ::pclose(p);
    INFO(out);
    REQUIRE(WIFEXITED(rc));
  } else {
    FAIL("popen failed");
  }
  // ZooKeeperMain exits 0 even when the command failed: check the ACL took
  std::string get = "java -Xshare:auto -XX:TieredStopAtLevel=1 -cp '" + classpath +
                    "' org.apache.zookeeper.ZooKeeperMain -server " + srv.connect_string() + " getAcl " + path + " 2>&1";
  std::string acl_out;
  if (FILE* p = ::popen(get.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) acl_out += buf;
    ::pclose(p);
  }
  INFO(out << "\n---\n" << acl_out);
  REQUIRE(acl_out.find("'world,'anyone") != std::string::npos);
  REQUIRE(acl_out.find(": cr") != std::string::npos);
}

struct acquire_result {
  bool done = false;
  error_code ec;
  lock_guard guard;
};

// Bug 1. Session B waits behind A; A releases, so B's grant (a watch event, or a reply) is on
// B's socket; a handler of B's io_context then closes or destroys B's session after k rounds
// of B's queue.
// For every k: the acquire fails with session_closed, or it completed before the close and its
// guard turned lost at the close. Never a guard that owns the lock after its session closed
// (a third session's try-acquire succeeds then: two holders).
struct close_race_fixture : server_fixture {
  void acquire_against_close(bool destroy);
};

void close_race_fixture::acquire_against_close(bool destroy) {
  auto& ioc_a = ioc;  // A's and C's; B's is made and destroyed in each round
  auto& a = connect();
  auto& c = connect();
  const std::string path = destroy ? "/locks/grant-destroy" : "/locks/grant-close";
  mutex ma(a, path), mc(c, path);
  std::ostringstream outcomes;
  int completed_before_close = 0, failed = 0, lost_at_close = 0;
  for (int k = 0; k <= 60 && completed_before_close < 3; ++k) {
    asio::io_context ioc_b;  // destroyed last: the guard and the session post to it
    lock_guard ga;
    run_test(ioc_a, [&]() -> asio::awaitable<void> { ga = co_await ma.async_acquire(asio::use_awaitable); }());
    auto b = std::make_unique<session>(ioc_b.get_executor(), options_for(srv.connect_string()));
    run_test(ioc_b, b->async_connect(asio::use_awaitable));
    auto mb = std::make_unique<mutex>(*b, path);
    acquire_result r;
    mb->async_acquire([&](error_code ec, lock_guard g) {
      r.done = true;
      r.ec = ec;
      r.guard = std::move(g);
    });
    ioc_b.run_for(300ms);  // B queues behind A and watches A's node
    REQUIRE_FALSE(r.done);
    run_test(ioc_a, [&]() -> asio::awaitable<void> {
      CHECK(co_await children_of(a, path) == 2);
      co_await ga.async_release(asio::use_awaitable);  // applied: B's event is on its way
    }());
    std::this_thread::sleep_for(30ms);  // on B's socket by now

    // The close (or destruction) is made by a handler of B's io_context, as a user's would be,
    // so that it runs inline on the session's executor (called from another thread it would be
    // posted behind the queued grant). That handler posts itself again k times: each round it
    // lets the handlers queued before it run (the socket's read, then the watch event it
    // queued, then the grant's completion...), so the close lands at every point of the grant.
    int ran = 0;
    bool closed = false, done_before = false;
    std::function<void()> closer = [&] {
      if (ran < k) {
        ++ran;
        return asio::post(ioc_b, closer);
      }
      done_before = r.done;
      if (destroy) {
        mb.reset();
        b.reset();
      } else {
        b->async_close([](error_code) {});
      }
      closed = true;
    };
    asio::post(ioc_b, closer);
    REQUIRE(run_until(ioc_b, [&] { return closed; }, 10s));
    // Whatever was queued runs now: the grant (if any) and the session's end.
    run_until(ioc_b, [&] { return r.done; }, 10s);
    for (int i = 0; i < 50 && ioc_b.poll() > 0; ++i) {
    }
    REQUIRE(r.done);

    // A third session: may it take the lock while B's guard says B holds it?
    bool c_got = false;
    run_test(ioc_a, [&]() -> asio::awaitable<void> {
      auto [ec, g] = co_await mc.async_try_acquire(tuple_awaitable);
      c_got = !ec;
      if (!ec) co_await g.async_release(asio::use_awaitable);
      // nothing left behind (B's close reaches the server on B's connection: allow it a moment)
      auto deadline = std::chrono::steady_clock::now() + 5s;
      while (co_await children_of(c, path) != 0 && std::chrono::steady_clock::now() < deadline) co_await sleep_for(20ms);
      CHECK(co_await children_of(c, path) == 0);
    }());

    outcomes << "k=" << k << (done_before ? " completed-before-close" : "") << ": "
             << (r.ec ? r.ec.message() : std::string("granted, status ") + to_string(r.guard.status()) +
                                             ", owns_lock " + (r.guard.owns_lock() ? "true" : "false"))
             << ", third session's try-acquire " << (c_got ? "succeeded" : "lock_busy") << "\n";
    INFO(outcomes.str());
    if (r.ec) {
      ++failed;
      CHECK(r.ec == errc::session_closed);
    } else {
      // Completed before the close: the close must take it away from the guard.
      CHECK_FALSE(r.guard.owns_lock());
      CHECK(r.guard.status() == lock_status::lost);
      CHECK(r.guard.valid_until() == std::chrono::steady_clock::time_point::min());
      if (!r.guard.owns_lock()) ++lost_at_close;
      // ... and the hold learnt it: its lost waiters are told at once (not at the deadline, ~4 s
      // on), and its release says lock_lost (not release_pending, which would promise a delete
      // after a reconnect that a closed session never makes).
      std::optional<error_code> lost, released;
      r.guard.async_wait_lost([&](error_code ec) { lost = ec; });
      run_until(ioc_b, [&] { return lost.has_value(); }, 1s);
      CHECK(lost == std::optional<error_code>(errc::lock_lost));
      r.guard.async_release([&](error_code ec) { released = ec; });
      run_until(ioc_b, [&] { return released.has_value(); }, 1s);
      CHECK(released == std::optional<error_code>(errc::lock_lost));
    }
    CHECK_FALSE((r.guard.owns_lock() && c_got));  // two holders
    if (done_before) ++completed_before_close;
    r.guard = lock_guard{};
  }
  WARN(outcomes.str());
  CHECK(failed > 0);                  // some steps closed before the grant was made
  CHECK(completed_before_close > 0);  // and the loop went past the grant
  CHECK(lost_at_close > 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. a grant racing the close or the destruction of its session

TEST_CASE_METHOD(close_race_fixture, "a grant racing async_close at every step never hands out an owning guard", "[integration][mutex][race]") {
  acquire_against_close(false);
}

TEST_CASE_METHOD(close_race_fixture, "a grant racing the session's destruction at every step never hands out an owning guard",
          "[integration][mutex][race]") {
  acquire_against_close(true);
}

// ---------------------------------------------------------------------------------------------
// 7. a released guard destroyed on another thread (ThreadSanitizer: ctest --preset tsan -R "another thread")

TEST_CASE_METHOD(server_fixture, "a released guard destroyed on another thread leaves the session to its loop", "[integration][promise][tsan]") {
  auto work = asio::make_work_guard(ioc);
  session s(ioc.get_executor(), options_for(srv.connect_string()));
  std::thread loop([&] { ioc.run(); });
  asio::co_spawn(ioc, s.async_connect(asio::use_awaitable), asio::use_future).get();
  mutex m(s, "/locks/released-threads");
  // The loop subscribes and unsubscribes session listeners meanwhile (every acquire and every
  // hold is one), as a server's would: a destructor that touched the session's listener map
  // from this thread would race with it.
  std::atomic<bool> busy{true};
  std::vector<std::future<void>> traffic;
  for (int t = 0; t < 4; ++t) {
    traffic.push_back(asio::co_spawn(
        ioc,
        [&, t]() -> asio::awaitable<void> {
          mutex other(s, "/locks/loop-traffic-" + std::to_string(t));
          while (busy) {
            auto g = co_await other.async_acquire(asio::use_awaitable);
            co_await g.async_release(asio::use_awaitable);
          }
        },
        asio::use_future));
  }
  for (int i = 0; i < 20; ++i) {
    lock_guard g = asio::co_spawn(ioc, m.async_acquire(asio::use_awaitable), asio::use_future).get();
    // released on the loop (the deferred operation is launched there), awaited from here
    asio::co_spawn(ioc, g.async_release(asio::use_awaitable), asio::use_future).get();
    CHECK(g.status() == lock_status::released);
    // The loop goes on with its traffic meanwhile (nothing orders it with this thread)...
    std::this_thread::sleep_for(10ms);
    g = lock_guard{};  // ... when the guard, holding the last reference to its hold, goes here
  }
  busy = false;
  for (auto& f : traffic) f.get();
  auto empty = asio::co_spawn(
      ioc, [&]() -> asio::awaitable<std::size_t> { co_return co_await children_of(s, "/locks/released-threads"); },
      asio::use_future);
  CHECK(empty.get() == 0);
  work.reset();
  asio::post(ioc, [&] { ioc.stop(); });
  loop.join();
}

// ---------------------------------------------------------------------------------------------
// 8c. a release the server refuses for good

TEST_CASE_METHOD(server_fixture, "a release refused by the lock dir's ACL is reported on the guard and in the log, not forgotten",
          "[integration][mutex][fault]") {
  std::vector<std::string> errors;
  // set_acl below runs zkCli (a JVM, seconds to start) while this io_context waits: session
  // timeouts of 20 s (the test server's maximum) so that no session expires meanwhile.
  auto opts = options_for(srv.connect_string(), 20s);
  opts.log = [&](log_level level, std::string_view line) {
    if (level == log_level::error) errors.emplace_back(line);
  };
  auto& admin = connect(20s);
  session s(ioc.get_executor(), opts);  // its log holds the test's locals: destroyed before them
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    co_await admin.async_create("/locks", "", create_mode::persistent, asio::use_awaitable);
    co_await admin.async_create("/locks/acl", "", create_mode::persistent, asio::use_awaitable);
    co_await admin.async_create("/locks/acl-background", "", create_mode::persistent, asio::use_awaitable);
  }());
  // Contenders may create and list, not delete: world CREATE|READ.
  set_acl(srv, "/locks/acl", "world:anyone:cr");
  set_acl(srv, "/locks/acl-background", "world:anyone:cr");

  std::string node, background_node;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/acl");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    node = g.node_path();
    auto [ec] = co_await g.async_release(tuple_awaitable);
    // The node is still there and blocks the lock for the rest of the session: the release
    // failed, and says why.
    CHECK(co_await children_of(admin, "/locks/acl") == 1);
    CHECK(ec == zk_errc::no_auth);
    // ... and the guard does not say it was released cleanly.
    CHECK(g.status() == lock_status::lost);
    CHECK_FALSE(g.owns_lock());

    // A guard dropped without release: nobody waits for the outcome, so the log says it.
    {
      mutex mb(s, "/locks/acl-background");
      auto g2 = co_await mb.async_acquire(asio::use_awaitable);
      background_node = g2.node_path();
    }
    co_await sleep_for(500ms);
    CHECK(co_await children_of(admin, "/locks/acl-background") == 1);
  }());
  std::string all;
  for (auto& e : errors) all += e + "\n";
  INFO("error log:\n" << all);
  CHECK(all.find(node) != std::string::npos);
  CHECK(all.find(background_node) != std::string::npos);

  // The nodes go with the session (cleanup: the dirs are empty after the test).
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_close(asio::use_awaitable);
    CHECK(co_await children_of(admin, "/locks/acl") == 0);
    CHECK(co_await children_of(admin, "/locks/acl-background") == 0);
  }());
}
