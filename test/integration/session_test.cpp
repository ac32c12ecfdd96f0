// The session against real ZooKeeper servers started by the fixture.
#include "common.hpp"
#include "tcp_proxy.hpp"
#include "zk_server.hpp"

#include <zklock/election.hpp>

#include <future>
#include <thread>

using namespace zklock;
using zklock::test::zk_server;

TEST_CASE_METHOD(server_fixture, "connect, CRUD, multi, and every completion token", "[integration][session]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    CHECK(s.state() == session_state::connected);
    CHECK(s.session_id() != 0);

    auto r = co_await s.async_create("/crud", "v1", create_mode::persistent, asio::use_awaitable);
    CHECK(r.path == "/crud");
    CHECK(r.stat.czxid > 0);
    auto [ec, r2] = co_await s.async_create("/crud", "", create_mode::persistent, tuple_awaitable);
    CHECK(ec == zk_errc::node_exists);
    auto seq1 = co_await s.async_create("/crud/s-", "", create_mode::persistent_sequential, asio::use_awaitable);
    auto seq2 = co_await s.async_create("/crud/s-", "", create_mode::ephemeral_sequential, asio::use_awaitable);
    CHECK(seq1.path == "/crud/s-0000000000");
    CHECK(seq2.path == "/crud/s-0000000001");
    CHECK(seq2.stat.ephemeral_owner == s.session_id());
    auto c = co_await s.async_create("/crud/container", "", create_mode::container, asio::use_awaitable);
    CHECK(c.path == "/crud/container");

    auto d = co_await s.async_get_data("/crud", asio::use_awaitable);
    CHECK(d.data == "v1");
    auto st = co_await s.async_set_data("/crud", "v2", d.stat.version, asio::use_awaitable);
    CHECK(st.version == d.stat.version + 1);
    auto [ec2, st2] = co_await s.async_set_data("/crud", "v3", d.stat.version, tuple_awaitable);
    CHECK(ec2 == zk_errc::bad_version);

    auto ch = co_await s.async_get_children("/crud", asio::use_awaitable);
    CHECK(ch.children.size() == 3);
    CHECK(ch.stat.num_children == 3);

    auto ex = co_await s.async_exists("/crud/nope", asio::use_awaitable);
    CHECK_FALSE(ex.has_value());
    auto ex2 = co_await s.async_exists("/crud", asio::use_awaitable);
    REQUIRE(ex2.has_value());
    CHECK(ex2->num_children == 3);

    auto [ec3] = co_await s.async_delete("/crud/s-0000000000", 7, tuple_awaitable);
    CHECK(ec3 == zk_errc::bad_version);
    co_await s.async_delete("/crud/s-0000000000", 0, asio::use_awaitable);

    // multi: all or nothing
    // (vectors built before co_await: g++ 12 cannot keep an initializer_list across it)
    std::vector<multi_op> failing{multi_op::create("/crud/m1"), multi_op::create("/crud/m1")};
    auto [ec4, res4] = co_await s.async_multi(std::move(failing), tuple_awaitable);
    CHECK(ec4 == zk_errc::node_exists);
    auto m1 = co_await s.async_exists("/crud/m1", asio::use_awaitable);
    CHECK_FALSE(m1);
    std::vector<multi_op> ops{multi_op::create("/crud/m1", "x"), multi_op::set_data("/crud/m1", "y"),
                              multi_op::check("/crud", -1), multi_op::remove("/crud/container")};
    auto res5 = co_await s.async_multi(std::move(ops), asio::use_awaitable);
    REQUIRE(res5.size() == 4);
    CHECK(res5[0].path == "/crud/m1");
    CHECK(res5[1].stat.version == 1);
    auto m1data = co_await s.async_get_data("/crud/m1", asio::use_awaitable);
    CHECK(m1data.data == "y");

    // deferred
    auto deferred_op = s.async_exists("/crud", asio::deferred);
    auto ex3 = co_await std::move(deferred_op)(asio::use_awaitable);
    CHECK(ex3.has_value());
  }());

  // plain callback
  bool called = false;
  s.async_get_data("/crud", [&](error_code ec, data_result d) {
    CHECK_FALSE(ec);
    CHECK(d.data == "v2");
    called = true;
  });
  CHECK_FALSE(called);  // never inline from the initiating call
  ioc.restart();
  while (!called) ioc.run_one_for(5s);
  CHECK(called);

  // use_future, with the io_context running on another thread
  std::thread runner;
  {
    auto guard = asio::make_work_guard(ioc);
    ioc.restart();
    runner = std::thread([&] { ioc.run(); });
    std::promise<std::future<std::optional<node_stat>>> p;
    asio::post(ioc, [&] { p.set_value(s.async_exists("/crud", asio::use_future)); });
    auto f = p.get_future().get();
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    CHECK(f.get().has_value());
    std::promise<void> closed;
    asio::post(ioc, [&] { s.async_close([&](error_code) { closed.set_value(); }); });
    closed.get_future().wait_for(10s);
  }
  runner.join();
  CHECK(s.state() == session_state::closed);
}

TEST_CASE_METHOD(server_fixture, "bad input fails at once with a distinct error and sends nothing", "[integration][session]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto sent = s.stats().requests_sent;
    for (auto [path, want] : std::vector<std::pair<std::string, errc>>{
             {"", errc::path_empty},
             {"a/b", errc::path_not_absolute},
             {"/a/", errc::path_trailing_slash},
             {"/a//b", errc::path_empty_segment},
             {"/a/../b", errc::path_relative_segment},
             {"/a/\x01", errc::path_control_character}}) {
      auto [ec, r] = co_await s.async_create(path, "", create_mode::persistent, tuple_awaitable);
      CHECK(ec == want);
      auto [ec2, r2] = co_await s.async_get_children(path, tuple_awaitable);
      CHECK(ec2 == want);
    }
    CHECK(s.stats().requests_sent == sent);
  }());
  for (const auto& [connect, expected] : std::vector<std::pair<std::string, error_code>>{
           {"", errc::empty_connect_string},
           {"localhost", errc::malformed_connect_string},
           {"127.0.0.1:2181/bad/", errc::path_trailing_slash}}) {
    session bad(ioc.get_executor(), options_for(connect));
    const error_code want = expected;  // a lambda captures a variable, not a structured binding (clang++ 14)
    run_test(ioc, [&]() -> asio::awaitable<void> {
      auto [ec] = co_await bad.async_connect(tuple_awaitable);
      CHECK(ec == want);
      CHECK(bad.state() == session_state::disconnected);
    }());
  }
}

TEST_CASE_METHOD(server_fixture, "chroot and multiple hosts in the connect string", "[integration][session]") {
  auto& root = connect();
  // a dead port first: the client must move on to the live one
  session chrooted(ioc.get_executor(), options_for("127.0.0.1:" + std::to_string(zklock::test::free_port()) + "," +
                                                   srv.connect_string() + "/app"));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await root.async_create("/app", "", create_mode::persistent, asio::use_awaitable);
    co_await chrooted.async_connect(asio::use_awaitable);
    auto r = co_await chrooted.async_create("/x", "", create_mode::persistent, asio::use_awaitable);
    CHECK(r.path == "/x");
    auto appx = co_await root.async_exists("/app/x", asio::use_awaitable);
    CHECK(appx.has_value());
  }());
}

TEST_CASE_METHOD(two_sessions_fixture, "watches fire on the io_context's thread", "[integration][session][watch]") {
  auto test_thread = std::this_thread::get_id();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    watch w_exists, w_children, w_data;
    auto wst = co_await a.async_exists("/w", w_exists, asio::use_awaitable);
    CHECK_FALSE(wst);
    REQUIRE(w_exists.valid());
    co_await b.async_create("/w", "1", create_mode::persistent, asio::use_awaitable);
    auto ev = co_await w_exists.async_wait(asio::use_awaitable);
    CHECK(ev.type == watch_event_type::created);
    CHECK(ev.path == "/w");
    CHECK(std::this_thread::get_id() == test_thread);

    co_await a.async_get_children("/w", w_children, asio::use_awaitable);
    co_await a.async_get_data("/w", w_data, asio::use_awaitable);
    co_await b.async_create("/w/c", "", create_mode::ephemeral, asio::use_awaitable);
    co_await b.async_set_data("/w", "2", -1, asio::use_awaitable);
    auto ev2 = co_await w_children.async_wait(asio::use_awaitable);
    CHECK(ev2.type == watch_event_type::child);
    auto ev3 = co_await w_data.async_wait(asio::use_awaitable);
    CHECK(ev3.type == watch_event_type::changed);
    CHECK(std::this_thread::get_id() == test_thread);

    // one-shot: a second change is not seen by the fired watch; a fresh watch sees deletion
    watch w_del;
    co_await a.async_exists("/w/c", w_del, asio::use_awaitable);
    co_await b.async_delete("/w/c", -1, asio::use_awaitable);
    auto ev4 = co_await w_del.async_wait(asio::use_awaitable);
    CHECK(ev4.type == watch_event_type::deleted);

    // a watch on a missing node via get_data is not set
    watch none;
    auto [ec, d] = co_await a.async_get_data("/nope", none, tuple_awaitable);
    CHECK(ec == zk_errc::no_node);
    CHECK_FALSE(none.valid());
  }());
}

TEST_CASE_METHOD(server_fixture, "cancelling pending operations and watches", "[integration][session][cancel]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_create("/c", "", create_mode::persistent, asio::use_awaitable);

    // a watch wait cancelled by a timer: operation_aborted, and the watch stays usable
    watch w;
    co_await s.async_get_data("/c", w, asio::use_awaitable);
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer t(co_await asio::this_coro::executor, 100ms);
    auto r = co_await (w.async_wait(tuple_awaitable) || t.async_wait(tuple_awaitable));
    CHECK(r.index() == 1);
    co_await s.async_set_data("/c", "x", -1, asio::use_awaitable);
    auto ev = co_await w.async_wait(asio::use_awaitable);
    CHECK(ev.type == watch_event_type::changed);

    // removing a watch from the server: the waiter sees not_watching
    watch w2;
    co_await s.async_get_data("/c", w2, asio::use_awaitable);
    co_await s.async_remove_watch(w2, asio::use_awaitable);
    auto ev2 = co_await w2.async_wait(asio::use_awaitable);
    CHECK(ev2.type == watch_event_type::not_watching);
    auto [ec_rm] = co_await s.async_remove_watch(w2, tuple_awaitable);
    CHECK(ec_rm == zk_errc::no_watcher);

    // an operation cancelled through its slot completes with operation_aborted at once
    asio::cancellation_signal sig;
    error_code got;
    bool done = false;
    s.async_get_children("/c", asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, children_result) {
                           got = ec;
                           done = true;
                         }));
    sig.emit(asio::cancellation_type::terminal);
    co_await sleep_for(200ms);
    CHECK(done);
    CHECK(got == asio::error::operation_aborted);

    // a cancelled create that the server performs anyway is reported
    std::string abandoned;
    bool created_done = false;
    asio::cancellation_signal sig2;
    s.async_create("/c/orphan", "", create_mode::ephemeral,
                   asio::bind_cancellation_slot(sig2.slot(), [&](error_code ec, create_result) {
                     CHECK(ec == asio::error::operation_aborted);
                     created_done = true;
                   }));
    sig2.emit(asio::cancellation_type::terminal);
    co_await sleep_for(300ms);
    CHECK(created_done);
    auto orphan = co_await s.async_exists("/c/orphan", asio::use_awaitable);
    CHECK(orphan.has_value());
  }());
}

TEST_CASE_METHOD(server_fixture, "abandoned creates go to the user's hook", "[integration][session][cancel]") {
  std::vector<std::string> abandoned;
  auto opts = options_for(srv.connect_string());
  opts.on_abandoned_create = [&](const std::string& p) { abandoned.push_back(p); };
  session s(ioc.get_executor(), opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    asio::cancellation_signal sig;
    s.async_create("/orphan-", "", create_mode::ephemeral_sequential,
                   asio::bind_cancellation_slot(sig.slot(), [](error_code, create_result) {}));
    sig.emit(asio::cancellation_type::terminal);
    co_await until([&] { return !abandoned.empty(); });  // the create's reply, however late
    co_await sleep_for(100ms);                           // and no second call
    REQUIRE(abandoned.size() == 1);
    CHECK(abandoned[0] == "/orphan-0000000000");
  }());
}

TEST_CASE_METHOD(server_fixture, "digest auth and creator-only ACL: others get no_auth", "[integration][session][auth]") {
  auto owner_opts = options_for(srv.connect_string());
  owner_opts.digest_auth = "alice:secret";
  owner_opts.default_acl = acl_policy::creator_all;
  auto& owner = connect(owner_opts);
  auto& stranger = connect();
  auto bob_opts = options_for(srv.connect_string());
  bob_opts.digest_auth = "bob:other";
  auto& bob = connect(bob_opts);
  auto alice2_opts = options_for(srv.connect_string());
  alice2_opts.digest_auth = "alice:secret";
  auto& alice2 = connect(alice2_opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await owner.async_create("/secret", "data", create_mode::persistent, asio::use_awaitable);
    auto [ec, d] = co_await stranger.async_get_data("/secret", tuple_awaitable);
    CHECK(ec == zk_errc::no_auth);
    auto [ec2, d2] = co_await bob.async_get_data("/secret", tuple_awaitable);
    CHECK(ec2 == zk_errc::no_auth);
    auto d3 = co_await alice2.async_get_data("/secret", asio::use_awaitable);
    CHECK(d3.data == "data");
  }());
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "a server restart is seen as suspended, then reconnected, watches survive",
          "[integration][session][fault]") {
  auto& s = connect(10000ms);
  auto& other = connect(10000ms);
  std::vector<session_state> seen;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto id = s.session_id();
    co_await s.async_create("/r", "", create_mode::persistent, asio::use_awaitable);
    watch w;
    co_await s.async_get_data("/r", w, asio::use_awaitable);
    // restart twice: the C client usually reopens its socket under the same fd number
    for (int round = 0; round < 2; ++round) {
      srv.restart();
      co_await await_state(s, session_state::suspended);
      seen.push_back(s.state());
      co_await await_state(s, session_state::reconnected);
      seen.push_back(s.state());
      CHECK(s.session_id() == id);
      // the loop still works after re-registering the socket
      auto d = co_await s.async_get_data("/r", asio::use_awaitable);
      CHECK(d.data.empty());
    }
    co_await await_state(other, session_state::reconnected);
    co_await other.async_set_data("/r", "after", -1, asio::use_awaitable);
    auto ev = co_await w.async_wait(asio::use_awaitable);
    CHECK(ev.type == watch_event_type::changed);
  }(), 120s);
  CHECK(seen == std::vector<session_state>{session_state::suspended, session_state::reconnected,
                                           session_state::suspended, session_state::reconnected});
}

TEST_CASE_METHOD(proxied_fixture, "session expiry is seen as expired, watches end, the session can restart",
          "[integration][session][fault]") {
  auto& s = connect_proxied(4000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto first_id = s.session_id();
    co_await s.async_create("/eph", "", create_mode::ephemeral, asio::use_awaitable);
    watch w;
    co_await s.async_exists("/never", w, asio::use_awaitable);

    co_await expire_session(s, proxy, srv.connect_string());
    co_await await_state(s, session_state::expired);
    auto [ec, ev] = co_await w.async_wait(tuple_awaitable);
    CHECK(ec == errc::session_expired);
    auto [ec2, st] = co_await s.async_exists("/eph", tuple_awaitable);
    CHECK(ec2 == errc::session_expired);

    co_await s.async_connect(asio::use_awaitable);  // a new session
    CHECK(s.state() == session_state::connected);
    CHECK(s.session_id() != first_id);
    auto eph = co_await s.async_exists("/eph", asio::use_awaitable);
    CHECK_FALSE(eph);
  }());
}

TEST_CASE_METHOD(own_server_fixture<proxied_fixture>, "pausing the server past the session timeout expires the session", "[integration][session][fault][slow]") {
  auto& s = connect_proxied(1000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    srv.pause();
    co_await await_state(s, session_state::suspended);
    // Keep the client away until the resumed server has expired the session: a client that
    // reconnects in the instant after SIGCONT can beat the server's session tracker.
    proxy.set_accepting(false);
    proxy.drop_all();
    co_await sleep_for(3s);
    srv.resume();
    co_await sleep_for(2s);
    proxy.set_accepting(true);
    co_await await_state(s, session_state::expired);
  }());
}

TEST_CASE_METHOD(server_fixture, "close is graceful: ephemerals vanish at once", "[integration][session]") {
  auto& s = connect(20000ms);
  auto& watcher = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_create("/gone", "", create_mode::ephemeral, asio::use_awaitable);
    watch w;
    co_await watcher.async_exists("/gone", w, asio::use_awaitable);
    auto t0 = std::chrono::steady_clock::now();
    co_await s.async_close(asio::use_awaitable);
    auto ev = co_await w.async_wait(asio::use_awaitable);
    CHECK(ev.type == watch_event_type::deleted);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);  // far below the 20 s session timeout
    auto [ec, r] = co_await s.async_get_data("/", tuple_awaitable);
    CHECK(ec == errc::session_closed);
  }());
}

TEST_CASE("connecting to a dead port fails within the connect timeout", "[integration][session][fault]") {
  asio::io_context ioc;
  auto opts = options_for("127.0.0.1:" + std::to_string(zklock::test::free_port()));
  opts.connect_timeout = 1500ms;
  session s(ioc.get_executor(), opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto t0 = std::chrono::steady_clock::now();
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    auto took = std::chrono::steady_clock::now() - t0;
    CHECK(ec == errc::connect_timeout);
    CHECK(took >= 1400ms);
    CHECK(took < 5s);
    CHECK(s.state() == session_state::disconnected);
  }());
}

TEST_CASE_METHOD(server_fixture, "connecting and running operations adds no thread", "[integration][session]") {
  int before = thread_count();
  auto sessions = connect_sessions(4);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await sessions[0]->async_create("/t", "", create_mode::persistent, asio::use_awaitable);
    for (auto& s : sessions) {
      mutex m(*s, "/t/lock");
      auto g = co_await m.async_acquire(asio::use_awaitable);
      co_await g.async_release(asio::use_awaitable);
    }
    CHECK(thread_count() == before);
  }());
  CHECK(thread_count() == before);
}

TEST_CASE("the C client's log goes to the user's sink", "[integration][session]") {
  asio::io_context ioc;
  std::vector<std::string> lines;
  auto opts = options_for("127.0.0.1:" + std::to_string(zklock::test::free_port()));
  opts.connect_timeout = 1000ms;
  opts.log_threshold = log_level::info;
  opts.log = [&](log_level, std::string_view m) { lines.emplace_back(m); };
  session s(ioc.get_executor(), opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    CHECK(ec == errc::connect_timeout);
  }());
  CHECK_FALSE(lines.empty());
}

TEST_CASE("a 3-node ensemble survives losing the member we talk to", "[integration][session][ensemble][slow]") {
  zklock::test::zk_ensemble ens(3);
  asio::io_context ioc;
  session s(ioc.get_executor(), options_for(ens.connect_string(), 10000ms));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    co_await s.async_create("/e", "1", create_mode::persistent, asio::use_awaitable);
    co_await s.async_create("/e/eph", "", create_mode::ephemeral, asio::use_awaitable);
    auto id = s.session_id();
    // find and kill the member this session is connected to
    for (int i = 0; i < ens.size(); ++i) {
      auto cons = ens.four_letter(i, "cons");
      char hex[32];
      std::snprintf(hex, sizeof hex, "sid=0x%llx", static_cast<unsigned long long>(id));
      if (cons.find(hex) != std::string::npos) {
        ens.kill(i);
        break;
      }
    }
    co_await await_state(s, session_state::suspended);
    co_await await_state(s, session_state::reconnected, 60s);
    CHECK(s.session_id() == id);
    auto eeph = co_await s.async_exists("/e/eph", asio::use_awaitable);
    CHECK(eeph.has_value());
  }(), 120s);
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "the default log during an outage: one line per unreachable server, not the C client's retries",
          "[integration][session][fault]") {
  auto o = options_for(srv.connect_string(), 20000ms);
  o.log_threshold = log_level::warn;  // the default
  std::vector<std::string> lines;
  o.log = [&](log_level, std::string_view m) { lines.emplace_back(m); };
  session s(ioc.get_executor(), o);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    srv.stop();  // unreachable: the C client retries several times a second
    co_await sleep_for(6s);
    srv.start();
    co_await await_state(s, session_state::reconnected);
  }(), 60s);
  for (auto& l : lines) UNSCOPED_INFO(l);
  CHECK(lines.size() <= 3);
  int summaries = 0;
  for (auto& l : lines) summaries += l.find("unreachable") != std::string::npos;
  CHECK(summaries == 1);
}

// The ensemble gone for good: the only server killed and never restarted. Once the negotiated
// timeout has passed since the connection was lost, the session expires here, as the server
// would have expired it: every waiter fails with session_expired, within the timeout plus this
// margin (the loss is seen at once, the kill closes the socket; the rest is the loop's turns).
constexpr auto local_expiry_margin = 1500ms;

struct ensemble_gone_fixture : own_server_fixture<server_fixture> {
  void ensemble_gone(int local_waiters);
};

void ensemble_gone_fixture::ensemble_gone(int local_waiters) {
  auto& s = connect(4000ms);
  auto& other = connect(4000ms);
  std::vector<std::pair<std::string, error_code>> results;  // which waiter, its error
  auto record = [&](std::string who) {
    return [&results, who](error_code ec, auto&&...) { results.emplace_back(who, ec); };
  };
  run_test(ioc, [&]() -> asio::awaitable<void> {
    // a local-queue holder and `local_waiters` local waiters
    mutex_options lq;
    lq.local_queue = true;
    mutex local(s, "/gone/local", lq);
    auto g = co_await local.async_acquire(asio::use_awaitable);
    for (int i = 0; i < local_waiters; ++i) local.async_acquire(record("local waiter"));
    error_code lost;
    bool lost_done = false;
    g.async_wait_lost([&](error_code ec) {
      lost = ec;
      lost_done = true;
    });
    // a plain acquire with no timeout, behind another session's holder
    mutex held(other, "/gone/plain");
    auto other_guard = co_await held.async_acquire(asio::use_awaitable);
    mutex plain(s, "/gone/plain");
    plain.async_acquire(record("plain acquire"));
    // a candidate behind another session's leader, and an observer of that leader
    election leader_side(other, "/gone/election", "alpha");
    auto leadership = co_await leader_side.async_campaign(asio::use_awaitable);
    election e(s, "/gone/election", "beta");
    e.async_campaign(record("campaign"));
    auto known = co_await e.async_leader(asio::use_awaitable);
    REQUIRE(known);
    e.async_observe(known, record("observe"));
    // a watch, and a state waiter that sees every change
    watch w;
    co_await s.async_exists("/gone/never", w, asio::use_awaitable);
    w.async_wait(record("watch"));
    co_await sleep_for(300ms);
    REQUIRE(results.empty());  // all waiting

    auto timeout = s.negotiated_timeout();
    auto killed = std::chrono::steady_clock::now();
    srv.kill();
    const std::size_t expected = local_waiters + 4;
    while (results.size() < expected || !lost_done) {
      if (std::chrono::steady_clock::now() - killed > timeout + 10s) break;
      co_await sleep_for(10ms);
    }
    auto took = std::chrono::steady_clock::now() - killed;
    INFO("session timeout " << timeout.count() << " ms; all waiters done after "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms; "
                            << results.size() << " of " << expected << " completed");
    for (auto& [who, ec] : results) UNSCOPED_INFO(who << ": " << ec.message());
    REQUIRE(results.size() == expected);
    CHECK(took <= timeout + local_expiry_margin);
    CHECK(took >= timeout - local_expiry_margin);  // not before the server would have expired us
    for (auto& [who, ec] : results) {
      INFO(who << ": " << ec.message());
      CHECK(ec == errc::session_expired);
    }
    CHECK(s.state() == session_state::expired);
    REQUIRE(lost_done);
    CHECK(lost == errc::lock_lost);
    CHECK(g.status() == lock_status::lost);
    // What the session still owed fails as expired; new operations too.
    auto [ec_read, r] = co_await s.async_get_data("/", tuple_awaitable);
    CHECK(ec_read == errc::session_expired);
    auto [ec_acq, g2] = co_await local.async_acquire(tuple_awaitable);
    CHECK(ec_acq == errc::session_expired);
  }());
}

TEST_CASE_METHOD(ensemble_gone_fixture, "the ensemble gone for good: the session expires after its timeout, every waiter fails with session_expired",
          "[integration][session][fault]") {
  ensemble_gone(0);  // the local queue's holder, no local waiter
}

// The 20 local waiters are behind a holder whose guard turned lost at its deadline (the
// session still suspended): the expiry that follows must still reach them.
TEST_CASE_METHOD(ensemble_gone_fixture, "the ensemble gone for good: local-queue waiters fail with session_expired",
          "[integration][session][fault][local]") {
  ensemble_gone(20);
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "after a local expiry and a new session the same local queue serves acquires once the lost holder lets go",
          "[integration][session][fault][local]") {
  auto opts = options_for(srv.connect_string(), 4000ms);
  auto& s = connect(opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex_options lq;
    lq.local_queue = true;
    mutex local(s, "/gone/again", lq);
    auto g = co_await local.async_acquire(asio::use_awaitable);
    const auto old_node = g.node_path();
    std::optional<error_code> waiter;
    local.async_acquire([&](error_code ec, lock_guard) { waiter = ec; });
    co_await sleep_for(200ms);
    REQUIRE_FALSE(waiter);
    srv.kill();
    co_await await_state(s, session_state::expired, s.negotiated_timeout() + local_expiry_margin);
    co_await sleep_for(50ms);  // the expiry's handlers
    REQUIRE(waiter);
    CHECK(*waiter == errc::session_expired);
    CHECK(g.status() == lock_status::lost);
    srv.start();
    co_await s.async_connect(asio::use_awaitable);
    // A new session's acquire waits behind the old session's lost holder (no local overlap
    // with a holder that may not have seen its loss yet) ...
    std::optional<std::pair<error_code, lock_guard>> next;
    local.async_acquire([&](error_code ec, lock_guard ng) { next.emplace(ec, std::move(ng)); });
    co_await sleep_for(300ms);
    CHECK_FALSE(next);
    // ... and gets a node of the new session once it lets go (after the server expired the old
    // session, whose node stood ahead of it).
    auto [rec] = co_await g.async_release(tuple_awaitable);
    CHECK(rec == errc::lock_lost);
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!next && std::chrono::steady_clock::now() < deadline) co_await sleep_for(10ms);
    REQUIRE(next);
    REQUIRE_FALSE(next->first);
    CHECK(next->second.owns_lock());
    CHECK(next->second.node_path() != old_node);
    co_await next->second.async_release(asio::use_awaitable);
    // and the acquire after it, on a node of its own
    auto again = co_await local.async_acquire(asio::use_awaitable);
    CHECK(again.owns_lock());
    co_await again.async_release(asio::use_awaitable);
    CHECK(co_await children_of(s, "/gone/again") == 0);
  }(), 90s);
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "after a local expiry the next async_connect starts a new session once a server is back and the old ephemerals expire",
          "[integration][session][fault]") {
  auto opts = options_for(srv.connect_string(), 4000ms);
  opts.connect_timeout = 1500ms;
  auto& s = connect(opts);
  session watcher(ioc.get_executor(), options_for(srv.connect_string(), 4000ms));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto first_id = s.session_id();
    co_await s.async_create("/eph-gone", "", create_mode::ephemeral, asio::use_awaitable);
    srv.kill();
    co_await await_state(s, session_state::expired, s.negotiated_timeout() + local_expiry_margin);
    // No server: the connect times out (the session is not `suspended` any more).
    auto [ec_down] = co_await s.async_connect(tuple_awaitable);
    CHECK(ec_down == errc::connect_timeout);
    srv.start();
    auto [ec_up] = co_await s.async_connect(tuple_awaitable);
    REQUIRE_FALSE(ec_up);
    CHECK(s.state() == session_state::connected);
    CHECK(s.session_id() != first_id);
    // The old session's ephemeral goes at the server's own expiry of it.
    co_await watcher.async_connect(asio::use_awaitable);
    auto deadline = std::chrono::steady_clock::now() + 20s;
    for (;;) {
      auto [ec, st] = co_await watcher.async_exists("/eph-gone", tuple_awaitable);
      REQUIRE_FALSE(ec);
      if (!st) break;
      if (std::chrono::steady_clock::now() > deadline) FAIL("the old session's ephemeral is still there");
      co_await sleep_for(200ms);
    }
  }());
}
