// The review's fault bugs, each against a real server (a lost guard still deletes its node, a
// suspended session, destroyed sessions, cancels while disconnected, a partitioned holder), bad
// input and other tenants, a cancellation storm, validity on arrival and the lost error's cause.
#include "common.hpp"

#include <fstream>
#include <map>
#include <random>

using namespace zklock;
using zklock::test::zk_server;

// ---------------------------------------------------------------------------------------------
// the review's fault bugs

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "a guard reported lost whose session survived still deletes its node", "[integration][fault]") {
  // Server down longer than the validity deadline, then back: the session survives (the
  // server restores it with a fresh timeout), and so does our node. Before the fix it stayed
  // for the life of the session and every other contender waited forever. The deadline comes
  // well before the session timeout (a wide validity margin), so that the server's restart
  // fits between them: past the timeout with no server answering, the session expires here.
  // The deadline 2 s after the stop, the expiry 15 s after it: a restart gets 13 s (a JVM's
  // start beside the test command's build took more than the 6 s of an 8 s timeout once).
  auto so = options_for(srv.connect_string(), 15000ms);
  so.validity_margin = 13000ms;
  auto& s = connect(so);
  auto& other = connect(20000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto id = s.session_id();
    mutex m(s, "/locks/ghost");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    srv.stop();
    auto [lost] = co_await g.async_wait_lost(tuple_awaitable);
    CHECK(lost == errc::lock_lost);
    CHECK(g.status() == lock_status::lost);
    srv.start();
    co_await await_state(s, session_state::reconnected, 60s);
    CHECK(s.session_id() == id);  // the same session: the node was still there
    co_await await_state(other, session_state::reconnected, 60s);
    co_await until_children(other, "/locks/ghost", 0);  // deleted without waiting for the owner
    mutex om(other, "/locks/ghost");
    auto [ec, og] = co_await om.async_try_acquire(tuple_awaitable);
    CHECK_FALSE(ec);
    auto [rel] = co_await g.async_release(tuple_awaitable);
    CHECK(rel == errc::lock_lost);
    co_await og.async_release(asio::use_awaitable);
  }(), 120s);
}

TEST_CASE_METHOD(proxied_fixture, "async_connect on a suspended session is refused: no second session, no two holders", "[integration][fault]") {
  auto& s = connect_proxied(8000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto id = s.session_id();
    mutex m(s, "/locks/replace");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(s, session_state::suspended);
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    CHECK(ec == errc::session_suspended);
    CHECK(g.status() == lock_status::maybe_lost);
    proxy.set_accepting(true);
    co_await await_state(s, session_state::reconnected);
    CHECK(s.session_id() == id);
    CHECK(g.status() == lock_status::held);
    co_await g.async_release(asio::use_awaitable);
  }(), 60s);
}

TEST_CASE_METHOD(server_fixture, "destroying the session tells its guards and pending acquires", "[integration][fault]") {
  auto s = std::make_unique<session>(ioc.get_executor(), options_for(srv.connect_string()));
  session other(ioc.get_executor(), options_for(srv.connect_string()));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s->async_connect(asio::use_awaitable);
    co_await other.async_connect(asio::use_awaitable);
    mutex om(other, "/locks/gone/a");
    auto og = co_await om.async_acquire(asio::use_awaitable);
    mutex held_m(*s, "/locks/gone/b"), waiting_m(*s, "/locks/gone/a");
    auto g = co_await held_m.async_acquire(asio::use_awaitable);
    std::optional<error_code> waiter;
    waiting_m.async_acquire([&](error_code ec, lock_guard) { waiter = ec; });
    co_await sleep_for(300ms);
    std::optional<error_code> lost;
    g.async_wait_lost([&](error_code ec) { lost = ec; });
    s.reset();
    for (int i = 0; i < 100 && !(waiter && lost); ++i) co_await sleep_for(20ms);
    REQUIRE(waiter);
    CHECK(*waiter == errc::session_closed);
    REQUIRE(lost);
    CHECK(*lost == errc::lock_lost);
    CHECK(g.status() == lock_status::lost);
    // Closed, not expired: the destroyed session's close is sent on the loop and the server
    // deletes its ephemerals on it, but the other session's read may reach the server first. The
    // expiry would come no sooner than about 2.7 s after the destruction (the 4 s timeout from
    // the last ping, at most a third of it before); the node must be gone well before that.
    co_await until_children(other, "/locks/gone/b", 0, 2s, 10ms);
    co_await og.async_release(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(proxied_fixture, "a cancel while disconnected leaves no watch behind after the reconnect", "[integration][fault][cancel]") {
  auto& s = connect_proxied(8000ms);
  auto& other = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex om(other, "/locks/unwatch"), m(s, "/locks/unwatch");
    auto og = co_await om.async_acquire(asio::use_awaitable);
    asio::cancellation_signal sig;
    std::optional<error_code> got;
    m.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lock_guard) { got = ec; }));
    co_await sleep_for(300ms);  // queued and watching
    CHECK(server_watches(srv) == 1);
    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(s, session_state::suspended);
    sig.emit(asio::cancellation_type::terminal);
    for (int i = 0; i < 50 && !got; ++i) co_await sleep_for(10ms);
    REQUIRE(got);  // at once, without the network
    CHECK(*got == asio::error::operation_aborted);
    proxy.set_accepting(true);
    co_await await_state(s, session_state::reconnected);
    co_await until_children(other, "/locks/unwatch", 1);  // our node deleted
    co_await until_no_watches(srv, 5s);
    CHECK(server_watches(srv) == 0);  // and our watch removed on the server
    co_await og.async_release(asio::use_awaitable);
  }(), 60s);
}

TEST_CASE_METHOD(proxied_fixture, "partitioned holder: lost at its validity deadline, before the server grants the lock to the next",
          "[integration][fault][validity]") {
  // The holder's connection is blackholed (stays open, nothing passes). The server cannot
  // expire its session before last reply's send + session timeout; the guard turns lost (and
  // cancels work bound to lost_slot) before then, so before the successor is granted.
  auto& s = connect_proxied(4000ms);
  auto& other = connect(4000ms);
  using clock = std::chrono::steady_clock;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/validity"), om(other, "/locks/validity");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    auto until = g.valid_until();
    CHECK(until > clock::now());
    CHECK(until <= clock::now() + 4000ms);
    co_await sleep_for(2s);  // idle: the guard's own keepalive moves the deadline on
    CHECK(g.valid_until() > until);

    std::optional<clock::time_point> granted, lost_at, cancelled_at;
    lock_guard og;
    om.async_acquire([&](error_code ec, lock_guard lg) {
      CHECK_FALSE(ec);
      og = std::move(lg);
      granted = clock::now();
    });
    asio::steady_timer critical_section(ioc, 60s);  // work bound to the lock
    critical_section.async_wait(asio::bind_cancellation_slot(g.lost_slot(), [&](error_code ec) {
      CHECK(ec == asio::error::operation_aborted);
      cancelled_at = clock::now();
    }));
    co_await sleep_for(200ms);
    proxy.blackhole(true);
    auto cut = clock::now();
    auto [lost] = co_await g.async_wait_lost(tuple_awaitable);
    lost_at = clock::now();
    CHECK(lost == errc::lock_lost);
    while (!granted && clock::now() < cut + 30s) co_await sleep_for(10ms);
    REQUIRE(granted);
    REQUIRE(cancelled_at);
    WARN("partitioned holder lost " << std::chrono::duration_cast<std::chrono::milliseconds>(*lost_at - cut).count()
                 << " ms after the cut, successor granted "
                 << std::chrono::duration_cast<std::chrono::milliseconds>(*granted - cut).count() << " ms after");
    CHECK(*lost_at < *granted);
    CHECK(*cancelled_at < *granted);
    proxy.blackhole(false);
    proxy.drop_all();
    co_await og.async_release(asio::use_awaitable);
  }(), 90s);
}

// ---------------------------------------------------------------------------------------------
// bad input and other tenants

TEST_CASE_METHOD(server_fixture, "odd lock dirs: a missing chroot, an ephemeral dir, data and foreign children", "[integration][input]") {
  auto& s = connect();
  session chrooted(ioc.get_executor(), options_for(srv.connect_string() + "/no/such/chroot"));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await chrooted.async_connect(asio::use_awaitable);  // the server does not check a chroot
    // a chroot that does not exist: the lock dir cannot be created under it
    mutex in_missing_chroot(chrooted, "/locks/a");
    auto [ec1, g1] = co_await in_missing_chroot.async_acquire_for(5s, tuple_awaitable);
    CHECK(ec1 == zk_errc::no_node);
    auto created = co_await s.async_exists("/no", asio::use_awaitable);
    CHECK_FALSE(created.has_value());  // nothing created
    // a lock dir that is an ephemeral node cannot have contenders
    co_await s.async_create("/ephemeral-dir", "", create_mode::ephemeral, asio::use_awaitable);
    mutex in_ephemeral(s, "/ephemeral-dir");
    auto [ec2, g2] = co_await in_ephemeral.async_try_acquire(tuple_awaitable);
    CHECK(ec2 == zk_errc::no_children_for_ephemerals);
    // a lock dir with data and children that are not contenders works as any other
    co_await s.async_create("/busy-dir", "some data", create_mode::persistent, asio::use_awaitable);
    co_await s.async_create("/busy-dir/config", "", create_mode::persistent, asio::use_awaitable);
    co_await s.async_create("/busy-dir/lock-not-a-sequence", "", create_mode::persistent, asio::use_awaitable);
    mutex in_busy(s, "/busy-dir");
    auto g3 = co_await in_busy.async_try_acquire(asio::use_awaitable);
    CHECK(g3.owns_lock());
    CHECK((co_await in_busy.async_contenders(asio::use_awaitable)).size() == 1);
    co_await g3.async_release(asio::use_awaitable);
    CHECK(co_await children_of(s, "/busy-dir") == 2);  // the foreign children, untouched
  }());
}

TEST_CASE_METHOD(server_fixture, "another tenant can neither join the queue nor delete a held node (digest, creator_all)",
          "[integration][input][auth]") {
  auto alice_opts = options_for(srv.connect_string());
  alice_opts.digest_auth = "alice:secret";
  alice_opts.default_acl = acl_policy::creator_all;
  auto bob_opts = options_for(srv.connect_string());
  bob_opts.digest_auth = "bob:other";
  auto& alice = connect(alice_opts);
  auto& bob = connect(bob_opts);
  auto& anonymous = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex am(alice, "/tenant/lock");
    auto g = co_await am.async_acquire(asio::use_awaitable);  // creates /tenant and /tenant/lock as alice's
    for (session* other : {&bob, &anonymous}) {
      mutex om(*other, "/tenant/lock");
      auto [ec, og] = co_await om.async_acquire_for(5s, tuple_awaitable);
      CHECK(ec == zk_errc::no_auth);
      auto [dec] = co_await other->async_delete(g.node_path(), -1, tuple_awaitable);
      CHECK(dec == zk_errc::no_auth);
    }
    CHECK(g.owns_lock());
    CHECK(co_await children_of(alice, "/tenant/lock") == 1);  // nothing of theirs left
    co_await g.async_release(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(server_fixture, "two waiters of one session cancelled together leave no watch on the node both watched",
          "[integration][fault][cancel]") {
  // Both watch the holder's node: the server keeps one watch for the session. Removing one of
  // two watchers only checks it there (the server keeps the watch for the other); two removals
  // sent together each counted the other one, so neither took the server's watch away, and it
  // stayed as long as the connection (found by the cancellation storm, about 1 run in 5).
  auto& holder_s = connect();
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex hm(holder_s, "/locks/pair"), first(s, "/locks/pair"), second(s, "/locks/pair");
    auto held = co_await hm.async_acquire(asio::use_awaitable);
    asio::cancellation_signal sig_first, sig_second;
    std::optional<error_code> got_first, got_second;
    first.async_acquire(asio::bind_cancellation_slot(sig_first.slot(), [&](error_code ec, lock_guard) { got_first = ec; }));
    co_await sleep_for(200ms);
    second.async_acquire(asio::bind_cancellation_slot(sig_second.slot(), [&](error_code ec, lock_guard) { got_second = ec; }));
    co_await sleep_for(300ms);  // both queued, both watching the holder's node (and the second the first's)
    sig_first.emit(asio::cancellation_type::terminal);
    sig_second.emit(asio::cancellation_type::terminal);  // its removal goes while the first's is on its way
    for (int i = 0; i < 100 && !(got_first && got_second); ++i) co_await sleep_for(20ms);
    REQUIRE(got_first);
    REQUIRE(got_second);
    CHECK(*got_first == asio::error::operation_aborted);
    CHECK(*got_second == asio::error::operation_aborted);
    co_await until_children(holder_s, "/locks/pair", 1);  // the holder's node only
    co_await until_no_watches(srv, 5s);
    CHECK(server_watches(srv) == 0);
    co_await held.async_release(asio::use_awaitable);
  }(), 60s);
}

// ---------------------------------------------------------------------------------------------
// a cancellation storm

namespace {
long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
}  // namespace

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "a cancellation storm with connection cuts leaves no node, no watch, no growth",
          "[integration][fault][cancel]") {
  // 8 sessions behind proxies, a holder that never lets go, and 2,000 acquires (ZKLOCK_STORM_ACQUIRES) (seeded) that
  // are cancelled (all three types), timed out or try-acquired at random points while the
  // proxies cut every connection now and then. Afterwards: only the holder's node, no watch
  // on the server, every handler called once, memory back near where it was.
  std::vector<std::unique_ptr<zklock::test::tcp_proxy>> proxies;
  // A cut found by a request's own send (before the C client reads the end of the stream) used
  // to leave that connection's requests in the C client's queue: the first reply on the next
  // connection was taken for the oldest of them ("unexpected server response") and failed
  // every request with runtime_inconsistency, a few times a run.
  int unexpected_replies = 0, dropped_in_send = 0;
  auto log = [&](zklock::log_level level, std::string_view m) {
    if (m.find("unexpected server response") != std::string_view::npos) ++unexpected_replies;
    if (m.find("failed while a request was sent") != std::string_view::npos) ++dropped_in_send;
    if (level <= zklock::log_level::error) std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data());
  };
  std::vector<std::unique_ptr<session>> sessions;
  for (int i = 0; i < 8; ++i) {
    proxies.push_back(std::make_unique<zklock::test::tcp_proxy>(ioc.get_executor(), srv.port()));
    auto opts = options_for(proxies.back()->connect_string(), 8000ms);
    opts.log_threshold = zklock::log_level::warn;
    opts.log = log;
    sessions.push_back(std::make_unique<session>(ioc.get_executor(), opts));
  }
  auto& holder_s = connect();
  const std::uint32_t seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    for (auto& s : sessions) co_await s->async_connect(asio::use_awaitable);
    mutex hm(holder_s, "/locks/storm");
    auto held = co_await hm.async_acquire(asio::use_awaitable);
    std::vector<std::unique_ptr<mutex>> ms;
    for (auto& s : sessions) ms.push_back(std::make_unique<mutex>(*s, "/locks/storm"));

    // every pending acquire (and its cleanup) holds a reference to its session's engine
    auto engine_refs = [&] {
      long n = 0;
      for (auto& s : sessions) n += detail::access::impl(*s).use_count();
      return n;
    };
    const long refs_before = engine_refs();
    long rss_before = 0;
    int started = 0, completed = 0, unexpected = 0;
    std::map<std::string, int> outcomes;  // "kind: result" -> count, printed on failure
    std::map<int, int> open_by_kind;
    // 2,000 in CI; ZKLOCK_STORM_ACQUIRES=10000 for the long pass the reliability issue asks for
    const int total = std::getenv("ZKLOCK_STORM_ACQUIRES") ? std::atoi(std::getenv("ZKLOCK_STORM_ACQUIRES")) : 2000;
    for (int round = 0; round < 2; ++round) {
      if (round == 1) rss_before = rss_kb();  // after a first warm-up half
      // a signal must outlive its operation's use of the slot: emitted ones wait in `spent`
      std::vector<std::unique_ptr<asio::cancellation_signal>> signals, spent;
      for (int i = 0; i < total / 2; ++i) {
        auto& m = *ms[rng() % ms.size()];
        ++started;
        const int kind = static_cast<int>(rng() % 4);
        ++open_by_kind[kind];
        auto done = [&, kind](error_code ec, lock_guard g) {
          ++completed;
          --open_by_kind[kind];
          ++outcomes[std::to_string(kind) + ": " + ec.message()];
          // the lock is held throughout: nobody may get it. A try or a timed acquire cut off from
          // ZooKeeper says so (connection_unavailable) rather than blaming contention.
          bool cut_off = kind <= 1 && ec == errc::connection_unavailable;
          if (!ec || g.owns_lock() ||
              !(ec == asio::error::operation_aborted || ec == condition::lock_unavailable || cut_off))
            ++unexpected;
        };
        switch (kind) {
          case 0:
            m.async_acquire_for(std::chrono::milliseconds(rng() % 50), done);
            break;
          case 1:
            m.async_try_acquire(done);
            break;
          default: {
            signals.push_back(std::make_unique<asio::cancellation_signal>());
            m.async_acquire(asio::bind_cancellation_slot(signals.back()->slot(), done));
            break;
          }
        }
        if (rng() % 200 == 0) proxies[rng() % proxies.size()]->drop_all();  // a connection cut
        if (rng() % 8 == 0) co_await sleep_for(std::chrono::milliseconds(rng() % 5));
        if (!signals.empty() && rng() % 2 == 0) {
          static constexpr asio::cancellation_type types[] = {
              asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total};
          auto idx = rng() % signals.size();
          signals[idx]->emit(types[rng() % 3]);
          spent.push_back(std::move(signals[idx]));
          signals.erase(signals.begin() + static_cast<std::ptrdiff_t>(idx));
        }
      }
      for (auto& sig : signals) sig->emit(asio::cancellation_type::terminal);
      auto deadline = std::chrono::steady_clock::now() + 60s;
      while (completed < started && std::chrono::steady_clock::now() < deadline) co_await sleep_for(20ms);
    }
    for (auto& [k, n] : outcomes) WARN(k << " x" << n);
    for (auto& [k, n] : open_by_kind) WARN("kind " << k << " still open: " << n);
    CHECK(completed == started);
    CHECK(unexpected == 0);
    WARN("connections found cut by a request's send: " << dropped_in_send);
    CHECK(unexpected_replies == 0);
    for (auto& s : sessions)
      for (int i = 0; i < 600 && !is_connected(s->state()); ++i) co_await sleep_for(50ms);
    co_await until_children(holder_s, "/locks/storm", 1, 30s);  // the holder's node only
    co_await until_no_watches(srv, 10s);
    CHECK(server_watches(srv) == 0);
    for (int i = 0; i < 100 && engine_refs() != refs_before; ++i) co_await sleep_for(50ms);
    CHECK(engine_refs() == refs_before);  // no acquire or cleanup left alive
    long rss_after = rss_kb();
    WARN("cancellation storm: " << started << " acquires, RSS " << rss_before << " kB -> " << rss_after << " kB");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // a sanitizer's quarantine and shadow memory grow RSS by themselves: the leak checker and
    // engine_refs() above are the evidence there
#else
    CHECK(rss_after < rss_before + 4 * 1024);
#endif
    co_await held.async_release(asio::use_awaitable);
  }(), 180s);
}

TEST_CASE_METHOD(proxied_fixture, "a release made while disconnected deletes the node after the reconnect, guard gone or not",
          "[integration][fault][promise]") {
  // release_pending promises the node goes after the reconnect. Once the guard is gone only
  // the hold itself can keep that promise (found by the fault harness: the node stayed for the
  // life of the session, and every waiter queued behind it).
  auto& s = connect_proxied(10000ms);
  auto& observer = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    {
      mutex m(s, "/locks/owed");
      auto g = co_await m.async_acquire(asio::use_awaitable);
      proxy.set_accepting(false);
      proxy.drop_all();
      co_await await_state(s, session_state::suspended, 10s);
      auto [ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
      CHECK(ec == errc::release_pending);
    }  // guard and mutex gone
    co_await sleep_for(200ms);
    proxy.set_accepting(true);
    co_await await_state(s, session_state::reconnected, 20s);
    co_await until_children(observer, "/locks/owed", 0, 10s);  // deleted, with the session alive
    CHECK(is_connected(s.state()));
  }(), 60s);
}

TEST_CASE_METHOD(server_fixture, "a lock granted after a wait longer than the session timeout is valid on arrival",
          "[integration][fault][promise]") {
  // A waiter sends nothing while it waits; a grant taken straight from the watch event used to
  // hand out a guard whose validity deadline had passed (lost on arrival, zklock exec killed
  // the command at once). Found by the shared-lock interop work.
  auto& a = connect(4000ms);
  auto& b = connect(4000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex ma(a, "/locks/longwait"), mb(b, "/locks/longwait");
    auto g = co_await ma.async_acquire(asio::use_awaitable);
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
      co_await sleep_for(b.negotiated_timeout() + 1500ms);  // longer than b's session timeout
      co_await g.async_release(asio::use_awaitable);
    }, asio::detached);
    auto g2 = co_await mb.async_acquire(asio::use_awaitable);
    CHECK(g2.status() == lock_status::held);
    CHECK(g2.valid_until() > std::chrono::steady_clock::now() + b.negotiated_timeout() / 2);
    co_await sleep_for(200ms);
    CHECK(g2.owns_lock());
    co_await g2.async_release(asio::use_awaitable);
  }(), 60s);
}

TEST_CASE_METHOD(proxied_fixture, "async_wait_deadline: quiet on a healthy session, a lead before the loss when ZooKeeper stops answering",
          "[integration][promise][validity][timing]") {
  auto& s = connect_proxied(3000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/deadline");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    const auto lead = 1000ms;
    bool early = false;
    error_code early_ec;
    asio::cancellation_signal stop_early;
    // healthy: the keepalive keeps the deadline more than half a timeout ahead, so a lead of a
    // third never comes within reach
    g.async_wait_deadline(s.negotiated_timeout() / 3, asio::bind_cancellation_slot(stop_early.slot(), [&](error_code ec) {
      early_ec = ec;
      early = true;
    }));
    co_await sleep_for(s.negotiated_timeout() * 2);
    CHECK_FALSE(early);
    stop_early.emit(asio::cancellation_type::terminal);
    co_await sleep_for(10ms);
    CHECK(early_ec == asio::error::operation_aborted);

    std::chrono::steady_clock::time_point at_deadline_lead, at_lost;
    error_code lead_ec = errc::lock_busy, lost_ec;
    g.async_wait_deadline(lead, [&](error_code ec) {
      lead_ec = ec;
      at_deadline_lead = std::chrono::steady_clock::now();
    });
    g.async_wait_lost([&](error_code ec) {
      lost_ec = ec;
      at_lost = std::chrono::steady_clock::now();
    });
    auto until = g.valid_until();
    proxy.set_accepting(false);
    proxy.drop_all();  // nothing answers any more: the deadline stops moving
    while (at_lost == std::chrono::steady_clock::time_point{}) co_await sleep_for(10ms);
    CHECK_FALSE(lead_ec);
    CHECK(lost_ec == errc::lock_lost);
    auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(at_lost - at_deadline_lead);
    INFO("deadline lead " << gap.count() << " ms before the loss");
    CHECK(gap > lead - 150ms);
    CHECK(gap < lead + 150ms);
    CHECK(at_lost >= until - 50ms);
    // once lost, it completes at once with lock_lost
    auto [after] = co_await g.async_wait_deadline(lead, tuple_awaitable);
    CHECK(after == errc::lock_lost);
    proxy.set_accepting(true);
  }(), 60s);
}

TEST_CASE_METHOD(proxied_fixture, "while suspended: a try-acquire fails at once, a timed acquire does not blame contention, the guard says maybe_lost in the state handler",
          "[integration][promise][fault][timing]") {
  auto& s = connect_proxied(8000ms);
  auto& other = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/suspended"), free_m(s, "/locks/suspended-free"), other_m(other, "/locks/suspended-free");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    // a try-acquire under way when the connection goes gives up then, too
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
      auto known = s.state();
      auto [ec, st] = co_await s.async_wait_state(known, tuple_awaitable);
      // the state handler of `suspended` already sees the guard maybe lost (its own listener
      // runs later)
      CHECK(st == session_state::suspended);
      CHECK(g.status() == lock_status::maybe_lost);
      CHECK(g.owns_lock());
    }, asio::detached);
    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(s, session_state::suspended);

    auto t0 = std::chrono::steady_clock::now();
    auto [try_ec, tg] = co_await free_m.async_try_acquire(tuple_awaitable);
    CHECK(try_ec == errc::connection_unavailable);
    CHECK(try_ec == condition::connection_lost);
    CHECK(std::chrono::steady_clock::now() - t0 < 500ms);  // never waits

    auto [for_ec, fg] = co_await free_m.async_acquire_for(300ms, tuple_awaitable);
    CHECK(for_ec == errc::connection_unavailable);  // nobody holds it: not lock_timeout
    CHECK(for_ec != condition::lock_unavailable);

    proxy.set_accepting(true);
    co_await await_state(s, session_state::reconnected);
    CHECK(g.status() == lock_status::held);
    // nothing of the failed attempts is left: another session takes the free lock at once
    for (int i = 0; i < 50; ++i) {
      auto [e, ch] = co_await other.async_get_children("/locks/suspended-free", tuple_awaitable);
      if (e || ch.children.empty()) break;
      co_await sleep_for(20ms);
    }
    auto [oec, og] = co_await other_m.async_try_acquire(tuple_awaitable);
    CHECK_FALSE(oec);
    co_await g.async_release(asio::use_awaitable);
  }(), 60s);
}

TEST_CASE_METHOD(proxied_fixture, "the lost error names its cause: a validity deadline passed behind a blackholed proxy, a node deleted by someone else",
          "[integration][fault][validity]") {
  // The lost error names its cause: "session expired or lock node deleted" when the deadline passed said neither
  auto& s = connect_proxied(3000ms);
  auto& other = connect(20000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    {
      // someone else deletes our node: the keepalive finds it (a third of the session timeout)
      mutex m(s, "/locks/cause-deleted");
      auto g = co_await m.async_acquire(asio::use_awaitable);
      co_await other.async_delete(g.node_path(), -1, asio::use_awaitable);
      auto [lost] = co_await g.async_wait_lost(tuple_awaitable);
      CHECK(lost == errc::lock_lost);
      CHECK(lost == condition::lock_lost);
      CHECK(lock_lost_cause(lost) == lost_cause::node_deleted);
      CHECK_THAT(lost.message(), Catch::Contains("deleted by someone else"));
      auto [rel] = co_await g.async_release(tuple_awaitable);
      CHECK(lock_lost_cause(rel) == lost_cause::node_deleted);
    }
    {
      // nothing passes any more, the connection stays open: lost at the validity deadline
      mutex m(s, "/locks/cause-deadline");
      auto g = co_await m.async_acquire(asio::use_awaitable);
      proxy.blackhole(true);
      auto [lost] = co_await g.async_wait_lost(tuple_awaitable);
      CHECK(lost == errc::lock_lost);
      CHECK(lost == condition::lock_lost);
      CHECK(lock_lost_cause(lost) == lost_cause::deadline_passed);
      CHECK_THAT(lost.message(), Catch::Contains("validity deadline"));
      // asked after the loss, the guard says the same
      auto [again] = co_await g.async_wait_lost(tuple_awaitable);
      CHECK(lock_lost_cause(again) == lost_cause::deadline_passed);
      proxy.blackhole(false);
      g = lock_guard{};
      co_await until_children(other, "/locks/cause-deadline", 0);  // deleted, or gone with the session
    }
  }(), 60s);
}
