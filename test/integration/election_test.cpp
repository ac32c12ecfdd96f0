// zklock::election against real servers. The oracle: a leader count that must never exceed
// one, leadership intervals on one clock, and the election path's children afterwards.
#include "common.hpp"

#include <zklock/election.hpp>
#include <zklock/revoke.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

using namespace zklock;

namespace {

using clk = std::chrono::steady_clock;
double ms(clk::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Waits until `path` has `n` children (a campaign has queued), polling every 2 ms.
asio::awaitable<void> await_children(session& s, const std::string& path, std::size_t n) {
  return until_children(s, path, n, 10s, 2ms);
}

}  // namespace

TEST_CASE_METHOD(server_fixture,
                 "election: one leader among 6 candidates, FIFO succession, fencing tokens increase, nothing left",
                 "[integration][election]") {
  auto sessions = connect_sessions(6);
  const std::string path = "/election/fifo";
  int leading = 0, max_leading = 0;
  std::vector<std::string> order;
  std::vector<std::int64_t> tokens;
  int finished = 0;
  auto e_id = [](std::size_t i) { return "node-" + std::to_string(i); };
  run_test(ioc, [&]() -> asio::awaitable<void> {
    std::vector<std::unique_ptr<election>> elections;
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      elections.push_back(std::make_unique<election>(*sessions[i], path, e_id(i)));
      asio::co_spawn(ioc, [&, e = elections.back().get()]() -> asio::awaitable<void> {
        auto l = co_await e->async_campaign(asio::use_awaitable);
        REQUIRE(l.is_leader());
        CHECK(l.identity() == e->identity());
        max_leading = std::max(max_leading, ++leading);
        order.push_back(l.identity());
        tokens.push_back(l.fencing_token());
        co_await sleep_for(20ms);
        --leading;
        co_await l.async_resign(asio::use_awaitable);
        ++finished;
      }, asio::detached);
      // queued (or already led) before the next one campaigns: the queue order is known
      const std::string id = e_id(i);
      for (bool queued = false; !queued;) {
        queued = std::find(order.begin(), order.end(), id) != order.end();
        for (auto& ct : co_await elections[0]->async_candidates(asio::use_awaitable)) queued |= ct.data == id;
        if (!queued) co_await sleep_for(1ms);
      }
    }
    co_await until([&] { return finished == 6; });
    CHECK(co_await children_of(*sessions[0], path) == 0);
  }());
  CHECK(max_leading == 1);
  REQUIRE(order.size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(order[i] == "node-" + std::to_string(i));
  for (std::size_t i = 1; i < tokens.size(); ++i) CHECK(tokens[i] > tokens[i - 1]);
}

TEST_CASE_METHOD(server_fixture,
                 "election: resign hands over at once, without a listing, and re-campaign on the same object",
                 "[integration][election][timing]") {
  auto sessions = connect_sessions(2);
  const std::string path = "/election/resign";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election a(*sessions[0], path, "a"), b(*sessions[1], path, "b");
    auto la = co_await a.async_campaign(asio::use_awaitable);
    completion<leadership> b_won;
    b.async_campaign(b_won.handler());
    co_await await_children(*sessions[0], path, 2);
    co_await sleep_for(50ms);  // b watches a's node
    CHECK_FALSE(b_won.done);
    auto sent_before = sessions[1]->stats().requests_sent;
    auto t0 = clk::now();
    co_await la.async_resign(asio::use_awaitable);
    co_await until([&] { return b_won.done; });
    CHECK_FALSE(b_won.ec);
    auto& lb = b_won.result;
    CHECK(lb.is_leader());
    CHECK(lb.fencing_token() > la.fencing_token());
    // the handoff is a's delete and the watch event: b sends nothing, neither a listing nor a
    // read of its own node (its node's watch, set since its create, keeps its id through
    // revocation)
    CHECK(sessions[1]->stats().requests_sent == sent_before);
    auto handoff = b_won.at - t0;
    std::fprintf(stderr, "election resign handoff: %.3f ms\n", ms(handoff));
    CHECK(handoff < 500ms);

    // a campaigns again on the same object and leads after b resigns
    completion<leadership> a_won;
    a.async_campaign(a_won.handler());
    co_await await_children(*sessions[0], path, 2);
    co_await sleep_for(30ms);
    CHECK_FALSE(a_won.done);
    co_await lb.async_resign(asio::use_awaitable);
    co_await until([&] { return a_won.done; });
    CHECK_FALSE(a_won.ec);
    auto& la2 = a_won.result;
    CHECK(la2.is_leader());
    CHECK(la2.identity() == "a");
    CHECK(la2.fencing_token() > lb.fencing_token());
    auto [ec] = co_await la.async_resign(tuple_awaitable);  // resigned before
    CHECK(ec == errc::already_released);
    co_await la2.async_resign(asio::use_awaitable);
    CHECK(co_await children_of(*sessions[0], path) == 0);
  }());
}

TEST_CASE_METHOD(server_fixture,
                 "election: only the next candidate watches the leader's node by its data, the one behind it by a "
                 "child watch (a write does not fire it, the resign does, with no listing)",
                 "[integration][election][handoff]") {
  // A node's deletion fires its data watches before its child watches: the candidate that
  // the leader's resign makes leader is told before the candidates further back.
  auto sessions = connect_sessions(3);
  const std::string path = "/election/nearest";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election l(*sessions[0], path, "l"), a(*sessions[1], path, "a"), b(*sessions[2], path, "b");
    auto ll = co_await l.async_campaign(asio::use_awaitable);
    completion<leadership> a_won, b_won;
    a.async_campaign(a_won.handler());
    co_await await_children(*sessions[0], path, 2);
    b.async_campaign(b_won.handler());
    co_await await_children(*sessions[0], path, 3);
    co_await sleep_for(50ms);  // a and b watch what blocks them (b: l and a)
    const auto b_sent = sessions[2]->stats().requests_sent;
    const auto b_events = sessions[2]->stats().watch_events;
    const auto a_events = sessions[1]->stats().watch_events;
    // a write to the leader's node (its own identity again): the next candidate's data watch
    // fires (it lists again), the child watch of the one behind it does not
    co_await sessions[0]->async_set_data(ll.node_path(), "l", -1, asio::use_awaitable);
    co_await until([&] { return sessions[1]->stats().watch_events > a_events; });
    co_await sleep_for(50ms);
    CHECK(sessions[2]->stats().watch_events == b_events);
    CHECK(sessions[2]->stats().requests_sent == b_sent);
    // the resign: a leads; b hears of it (its child watch), and leads at a's resign, sending nothing
    co_await ll.async_resign(asio::use_awaitable);
    co_await until([&] { return a_won.done; });
    REQUIRE_FALSE(a_won.ec);
    co_await until([&] { return sessions[2]->stats().watch_events > b_events; });
    CHECK_FALSE(b_won.done);
    co_await a_won.result.async_resign(asio::use_awaitable);
    co_await until([&] { return b_won.done; });
    REQUIRE_FALSE(b_won.ec);
    CHECK(b_won.result.is_leader());
    CHECK(sessions[2]->stats().requests_sent == b_sent);  // neither a listing nor a watch set again
    co_await b_won.result.async_resign(asio::use_awaitable);
    CHECK(co_await children_of(*sessions[0], path) == 0);
  }());
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>,
                 "election: a leader keeps one data watch on its node, and a revocation request and the identity "
                 "written back over it are one event each",
                 "[integration][election][revocation]") {
  auto sessions = connect_sessions(3);
  const std::string path = "/election/one-watch";
  auto& s = *sessions[1];
  // the paths the server watches for session `id` (wchc: "0x<id>" then "\t<path>" lines)
  auto watched_by = [&](std::int64_t id) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(id));
    std::vector<std::string> paths;
    std::istringstream in(srv.four_letter("wchc"));
    bool ours = false;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("0x", 0) == 0) ours = line.substr(0, line.find_first_of(":\r ")) == hex;
      else if (ours && !line.empty() && line[0] == '\t') paths.push_back(line.substr(1));
    }
    return paths;
  };
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election first(*sessions[0], path, "first"), e(s, path, "second");
    auto l0 = co_await first.async_campaign(asio::use_awaitable);
    std::optional<leadership> l;
    e.async_campaign([&](error_code ec, leadership got) {
      CHECK_FALSE(ec);
      l = std::move(got);
    });
    co_await await_children(*sessions[0], path, 2);
    co_await sleep_for(100ms);  // its node and the leader's node watched
    co_await l0.async_resign(asio::use_awaitable);
    co_await until([&] { return l.has_value(); });
    REQUIRE(l->is_leader());
    co_await sleep_for(100ms);  // whatever the grant sent has its reply
    auto w = watched_by(s.session_id());
    INFO(srv.four_letter("wchc"));
    CHECK(w == std::vector<std::string>{l->node_path()});
    CHECK(server_watches(srv) == 0);  // (nobody else watches anything)

    // Each write to its node fires one watch of its session (two watchers of one node would
    // each get the event): the request, then the identity written back over it.
    auto changed = [&] { return s.stats().events(watch_event_type::changed); };
    auto before = changed();
    auto revoked = std::make_shared<std::optional<error_code>>();
    l->async_wait_revoked([revoked](error_code ec) { *revoked = ec; });
    auto nodes = co_await async_revoke_holders(*sessions[2], path, asio::use_awaitable);
    REQUIRE(nodes.size() == 1);
    for (int i = 0; i < 300 && !*revoked; ++i) co_await sleep_for(10ms);
    REQUIRE(*revoked);
    CHECK_FALSE(revoked->value());
    std::string data;
    for (int i = 0; i < 300 && data != "second"; ++i) {
      data = (co_await sessions[2]->async_get_data(l->node_path(), asio::use_awaitable)).data;
      if (data != "second") co_await sleep_for(10ms);
    }
    CHECK(data == "second");  // written back
    co_await sleep_for(200ms);  // the write-back's event heard, the watch set again
    CHECK(changed() - before == 2);
    CHECK(watched_by(s.session_id()) == std::vector<std::string>{l->node_path()});
    CHECK(l->is_leader());
    co_await l->async_resign(asio::use_awaitable);
    CHECK(co_await children_of(*sessions[0], path) == 0);
  }());
}

TEST_CASE_METHOD(server_fixture,
                 "election: a campaign cancelled at every step leaves no node and no watch",
                 "[integration][election][cancel]") {
  auto sessions = connect_sessions(2);
  const std::string path = "/election/cancel";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election leader_e(*sessions[0], path, "leader");
    auto held = co_await leader_e.async_campaign(asio::use_awaitable);
    election e(*sessions[1], path, "waiter");
    auto [tec, tl] = co_await e.async_campaign_for(200ms, tuple_awaitable);
    CHECK(tec == errc::lock_timeout);
    CHECK_FALSE(tl.is_leader());
    CHECK(server_watches(srv) == 0);  // the leader's own data watch is not counted (server_watches: on its own node)
    for (int polls = 0; polls <= 40; polls += 2) {
      CAPTURE(polls);
      auto got = co_await cancel_after_polls([&](auto handler) { e.async_campaign(std::move(handler)); }, polls);
      CHECK(got == asio::error::operation_aborted);
      CHECK(co_await children_of(*sessions[0], path) == 1);  // the leader's node only
      CHECK(server_watches(srv) == 0);  // the leader's only, on its own node (not counted)
    }
    co_await held.async_resign(asio::use_awaitable);
    CHECK(co_await children_of(*sessions[0], path) == 0);
  }(), 120s);
}

TEST_CASE_METHOD(server_fixture,
                 "election: observers see every change, including no leader", "[integration][election][observe]") {
  auto sessions = connect_sessions(3);
  const std::string path = "/election/observe";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election watcher(*sessions[2], path, "observer");
    CHECK_FALSE(co_await watcher.async_leader(asio::use_awaitable));  // no path yet

    std::vector<std::optional<leader_info>> seen;
    bool stop = false;
    asio::cancellation_signal stop_sig;
    bool observer_done = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
      std::optional<leader_info> known;
      for (;;) {
        auto [ec, now] = co_await watcher.async_observe(
            known, asio::bind_cancellation_slot(stop_sig.slot(), tuple_awaitable));
        if (ec) {
          CHECK(ec == asio::error::operation_aborted);
          CHECK(stop);
          break;
        }
        CHECK(now != known);
        seen.push_back(now);
        known = now;
      }
      observer_done = true;
    }, asio::detached);
    co_await sleep_for(100ms);
    CHECK(seen.empty());
    CHECK(server_watches(srv) == 1);  // one watch: the exists watch on the missing path

    election a(*sessions[0], path, "a"), b(*sessions[1], path, "b");
    auto la = co_await a.async_campaign(asio::use_awaitable);
    co_await until([&] { return seen.size() == 1; });
    REQUIRE(seen[0]);
    CHECK(seen[0]->identity == "a");
    CHECK(seen[0]->node == la.node_path());
    CHECK(seen[0]->since > 0);
    std::optional<leadership> lb;
    b.async_campaign([&](error_code, leadership l) { lb = std::move(l); });
    co_await await_children(*sessions[2], path, 2);
    co_await sleep_for(50ms);
    CHECK(seen.size() == 1);  // a follower queueing is no change of leader
    auto now = co_await watcher.async_leader(asio::use_awaitable);
    REQUIRE(now);
    CHECK(now->identity == "a");

    co_await la.async_resign(asio::use_awaitable);
    co_await until([&] { return seen.size() == 2; });
    REQUIRE(seen[1]);
    CHECK(seen[1]->identity == "b");
    co_await until([&] { return lb.has_value(); });
    co_await lb->async_resign(asio::use_awaitable);
    co_await until([&] { return seen.size() == 3; });
    CHECK_FALSE(seen[2]);  // nobody leads
    CHECK_FALSE(co_await watcher.async_leader(asio::use_awaitable));

    // a again: seen from "no leader" (a child watch on the empty path)
    auto la2 = co_await a.async_campaign(asio::use_awaitable);
    co_await until([&] { return seen.size() == 4; });
    REQUIRE(seen[3]);
    CHECK(seen[3]->node == la2.node_path());
    // the observer's on a's node (a's own is not counted), set after its listing of the path
    co_await until([&] { return server_watches(srv) == 1; }, 20s, 20ms);
    CHECK(server_watches(srv) == 1);
    stop = true;
    stop_sig.emit(asio::cancellation_type::terminal);
    co_await until([&] { return observer_done; });
    CHECK(server_watches(srv) == 0);  // cancelled: its watch removed (a's own stays, not counted)
    co_await la2.async_resign(asio::use_awaitable);
  }());
}

TEST_CASE_METHOD(server_fixture,
                 "election: async_leader and async_observe started on another thread enter the session on its executor",
                 "[integration][election][observe][threads]") {
  // The C client is single-threaded: an operation started off the session's executor must not
  // send from the calling thread. The session's io_context is not running while another thread
  // starts both reads, so a request sent now was sent from that thread.
  auto& s = connect();
  election e(s, "/election/threads", "me");
  const leader_info gone{"someone", "/election/threads/_c_x-latch-0000000000", 1};
  const auto sent_before = s.stats().requests_sent;
  std::optional<error_code> leader_ec, observe_ec;
  std::optional<leader_info> leader_now, observe_now{gone};
  std::thread([&] {
    e.async_leader([&](error_code ec, std::optional<leader_info> r) {
      leader_ec = ec;
      leader_now = std::move(r);
    });
    e.async_observe(gone, [&](error_code ec, std::optional<leader_info> r) {
      observe_ec = ec;
      observe_now = std::move(r);
    });
  }).join();
  CHECK(s.stats().requests_sent == sent_before);
  REQUIRE(run_until(ioc, [&] { return leader_ec && observe_ec; }, 10s));
  CHECK_FALSE(*leader_ec);
  CHECK_FALSE(leader_now);  // no path: nobody leads
  CHECK_FALSE(*observe_ec);
  CHECK_FALSE(observe_now);  // differs from `gone` at once
}

TEST_CASE_METHOD(proxied_fixture,
                 "election: a leader suspended and reconnected within the session timeout stays leader, nobody else leads",
                 "[integration][election][fault]") {
  auto& sa = connect_proxied(8000ms);
  auto& sb = connect(8000ms);
  const std::string path = "/election/suspend";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election a(sa, path, "a"), b(sb, path, "b");
    auto la = co_await a.async_campaign(asio::use_awaitable);
    bool lost = false;
    la.async_wait_lost([&](error_code ec) { lost = ec == errc::lock_lost; });
    std::optional<leadership> lb;
    b.async_campaign([&](error_code, leadership l) { lb = std::move(l); });
    co_await await_children(sb, path, 2);

    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(sa, session_state::suspended);
    CHECK(la.status() == lock_status::maybe_lost);
    co_await sleep_for(1500ms);
    proxy.set_accepting(true);
    co_await await_state(sa, session_state::reconnected);
    co_await sleep_for(300ms);  // the reconnect's node check has answered
    CHECK(la.status() == lock_status::held);
    CHECK(la.is_leader());
    CHECK_FALSE(lost);
    CHECK_FALSE(lb);
    auto leader = co_await b.async_leader(asio::use_awaitable);
    REQUIRE(leader);
    CHECK(leader->identity == "a");
    co_await la.async_resign(asio::use_awaitable);
    co_await until([&] { return lb.has_value(); });
    CHECK(lb->is_leader());
    co_await lb->async_resign(asio::use_awaitable);
  }(), 60s);
}

TEST_CASE_METHOD(proxied_fixture,
                 "election: a leader whose session expires loses leadership before another leads, async_wait_deadline warns it a lead before",
                 "[integration][election][fault]") {
  auto& sa = connect_proxied(4000ms);
  auto& sb = connect(4000ms);
  const std::string path = "/election/expire";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election a(sa, path, "a"), b(sb, path, "b");
    auto la = co_await a.async_campaign(asio::use_awaitable);
    // the leader's work, bound to lost_slot(): cancelled when leadership is lost
    clk::time_point a_stopped{}, b_started{};
    asio::steady_timer work(ioc, 1h);
    work.async_wait(asio::bind_cancellation_slot(la.lost_slot(), [&](error_code ec) {
      CHECK(ec == asio::error::operation_aborted);
      a_stopped = clk::now();
    }));
    // the supervision that zklock elect uses: SIGTERM `lead` before the leader-until deadline
    const auto lead = 1000ms;
    clk::time_point a_warned{};
    error_code warned_ec = errc::lock_busy;
    la.async_wait_deadline(lead, [&](error_code ec) {
      warned_ec = ec;
      a_warned = clk::now();
    });
    std::optional<leadership> lb;
    b.async_campaign([&](error_code ec, leadership l) {
      CHECK_FALSE(ec);
      b_started = clk::now();
      lb = std::move(l);
    });
    co_await await_children(sb, path, 2);

    // partitioned: the server expires a's session after its timeout
    proxy.set_accepting(false);
    proxy.blackhole(true);
    proxy.drop_all();
    // a's leader-until deadline as it stands: no reply can move it on any more
    const auto a_valid_until = la.valid_until();
    CHECK(a_valid_until > clk::now());
    co_await until([&] { return lb.has_value(); }, 30s);
    REQUIRE(a_stopped != clk::time_point{});
    CHECK(a_stopped < b_started);
    // one clock (steady_clock, one process): a stopped once its deadline passed, and the next
    // leader's code started only after that deadline
    CHECK(a_stopped >= a_valid_until);
    CHECK(b_started > a_valid_until);
    // warned (no error) once the deadline was `lead` away, well before the loss
    REQUIRE(a_warned != clk::time_point{});
    CHECK_FALSE(warned_ec);
    CHECK(a_warned >= a_valid_until - lead - 10ms);
    CHECK(a_warned < a_stopped - lead / 2);
    std::fprintf(stderr, "election expiry: a warned %.1f ms before it stopped\n", ms(a_stopped - a_warned));
    std::fprintf(stderr, "election expiry: a's valid_until %.1f ms before b started\n", ms(b_started - a_valid_until));
    std::fprintf(stderr, "election expiry: a stopped %.1f ms before b started\n", ms(b_started - a_stopped));
    CHECK_FALSE(la.is_leader());
    CHECK(la.status() == lock_status::lost);
    CHECK(lb->fencing_token() > la.fencing_token());
    auto [after_loss] = co_await la.async_wait_deadline(lead, tuple_awaitable);
    CHECK(after_loss == errc::lock_lost);
    co_await lb->async_resign(asio::use_awaitable);
    auto [after_resign] = co_await lb->async_wait_deadline(lead, tuple_awaitable);
    CHECK(after_resign == errc::already_released);
    proxy.blackhole(false);
    proxy.set_accepting(true);
  }(), 60s);
}

// Candidate B waits behind A; A resigns, so B's grant is on B's socket; B's io_context runs k
// handlers, then B's session is closed or destroyed. For every k: the campaign fails, or it
// completed before the close and its leadership turned lost with the close. Never a
// leadership that says it leads after its session ended.
static void grant_against_close(bool destroy) {
  server_fixture f;
  auto& ioc_a = f.ioc;
  auto& a = f.connect();
  const std::string path = destroy ? "/election/grant-destroy" : "/election/grant-close";
  election ea(a, path, "a");
  int completed_before = 0, failed = 0, granted_after = 0;
  std::ostringstream outcomes;
  for (int k = 0; k <= 40; ++k) {
    asio::io_context ioc_b;
    leadership la;
    run_test(ioc_a, [&]() -> asio::awaitable<void> { la = co_await ea.async_campaign(asio::use_awaitable); }());
    auto b = std::make_unique<session>(ioc_b.get_executor(), options_for(f.srv.connect_string()));
    run_test(ioc_b, b->async_connect(asio::use_awaitable));
    auto eb = std::make_unique<election>(*b, path, "b");
    bool done = false;
    error_code got;
    leadership lb;
    eb->async_campaign([&](error_code ec, leadership l) {
      done = true;
      got = ec;
      lb = std::move(l);
    });
    ioc_b.run_for(300ms);
    REQUIRE_FALSE(done);
    run_test(ioc_a, la.async_resign(asio::use_awaitable));
    std::this_thread::sleep_for(30ms);
    for (int i = 0; i < k; ++i) ioc_b.run_one_for(200ms);
    bool before = done;
    if (destroy) {
      eb.reset();
      b.reset();
    } else {
      b->async_close([](error_code) {});
    }
    run_until(ioc_b, [&] { return done; }, 10s);
    for (int i = 0; i < 50 && ioc_b.poll() > 0; ++i) {
    }
    REQUIRE(done);
    outcomes << "k=" << k << (before ? " before" : "") << ": "
             << (got ? got.message() : std::string("leadership, status ") + to_string(lb.status())) << "\n";
    if (before) ++completed_before;
    if (got) ++failed;
    else if (!before) ++granted_after;
    CHECK_FALSE(lb.is_leader());
    if (completed_before >= 3) break;
  }
  INFO(outcomes.str());
  CHECK(failed > 0);
  (void)granted_after;  // a grant completed just before the close (posted twice): it must be lost, checked above
  run_test(ioc_a, [&]() -> asio::awaitable<void> {
    auto deadline = clk::now() + 10s;
    while (co_await children_of(a, path) != 0 && clk::now() < deadline) co_await sleep_for(10ms);
    CHECK(co_await children_of(a, path) == 0);  // b's node went with its session
  }());
}

TEST_CASE("election: closing the session racing a grant never yields a leadership", "[integration][election][race]") {
  grant_against_close(false);
}

TEST_CASE("election: destroying the session racing a grant never yields a leadership",
          "[integration][election][race]") {
  grant_against_close(true);
}

// ---- races that bit the peers (Curator's and kazoo's bug trackers) ----------------------------------

// Resign during a reconnect. Three candidates a (through the proxy), b, c; a leads. How a's
// connection fails:
//  - cut: the proxy drops it and refuses new ones; a resigns while suspended;
//  - blackhole: nothing passes, the client notices by its receive timeout; a resigns while
//    suspended (the server still has a's session, and a's node);
//  - lost_reply: a resigns while connected, its delete reaches the server and commits, the
//    reply is swallowed; the connection then times out.
// The header's promise (async_resign, lock_guard::async_release): while the connection is down
// the resign completes at once with errc::release_pending and the node is deleted after the
// reconnect (or goes with the session); a delete lost with the connection is sent again, and
// one that finds the node gone then means the first committed. Oracle: a stops leading at the
// call, b leads exactly once and only once a's node is gone, c never leads while b does,
// nobody leads twice, nothing is left.
enum class cut_kind { cut, blackhole, lost_reply };

static void resign_during_reconnect(cut_kind how) {
  proxied_fixture f;
  auto& proxy = f.proxy;
  // blackholed, the server hears nothing from a: leave time to resign and reconnect after
  // the client's receive timeout (2/3 of the session timeout) and before the expiry
  const auto timeout = how == cut_kind::blackhole ? 15000ms : 4000ms;
  auto& sa = f.connect_proxied(timeout);
  auto& sb = f.connect(4000ms);
  auto& sc = f.connect(4000ms);
  const std::string path = "/election/resign-reconnect";
  run_test(f.ioc, [&]() -> asio::awaitable<void> {
    election a(sa, path, "a"), b(sb, path, "b"), c(sc, path, "c");
    int leading = 0, max_leading = 0, b_grants = 0, c_grants = 0;
    auto la = co_await a.async_campaign(asio::use_awaitable);
    ++leading;
    const auto a_node = la.node_path();
    const auto a_session = sa.session_id();
    const auto a_token = la.fencing_token();
    std::optional<leadership> lb, lc;
    b.async_campaign([&](error_code ec, leadership l) {
      CHECK_FALSE(ec);
      ++b_grants;
      max_leading = std::max(max_leading, ++leading);
      lb = std::move(l);
    });
    co_await await_children(sc, path, 2);
    c.async_campaign([&](error_code ec, leadership l) {
      CHECK_FALSE(ec);
      ++c_grants;
      max_leading = std::max(max_leading, ++leading);
      lc = std::move(l);
    });
    co_await await_children(sc, path, 3);
    co_await sleep_for(50ms);  // b watches a's node, c watches b's

    std::optional<error_code> resigned;
    auto resign = [&] {
      la.async_resign([&](error_code ec) { resigned = ec; });
      --leading;  // a's work stops at the call
      CHECK_FALSE(la.is_leader());
    };
    switch (how) {
      case cut_kind::cut:
        proxy.set_accepting(false);
        proxy.drop_all();
        co_await await_state(sa, session_state::suspended);
        resign();
        break;
      case cut_kind::blackhole:
        proxy.blackhole(true);
        co_await await_state(sa, session_state::suspended);
        resign();
        break;
      case cut_kind::lost_reply:
        proxy.swallow_replies(true);
        resign();
        co_await until([&] { return lb.has_value(); });  // the delete committed: b leads
        CHECK_FALSE(resigned);                            // its reply has not come
        co_await await_state(sa, session_state::suspended);
        break;
    }
    if (how != cut_kind::lost_reply) {
      // completes at once, without the network; nobody else leads: a's node is still there
      co_await until([&] { return resigned.has_value(); }, 1s);
      CHECK(*resigned == errc::release_pending);
      co_await sleep_for(500ms);
      CHECK_FALSE(lb);
      CHECK(co_await children_of(sc, path) == 3);
    }
    if (how == cut_kind::blackhole) {
      proxy.blackhole(false);
      proxy.drop_all();  // a connect attempt swallowed meanwhile: start a new one now
    }
    proxy.swallow_replies(false);
    proxy.set_accepting(true);
    co_await await_state(sa, session_state::reconnected);
    co_await until([&] { return lb.has_value(); });
    REQUIRE(resigned);
    CHECK(*resigned == errc::release_pending);
    auto [eec, st] = co_await sc.async_exists(a_node, tuple_awaitable);
    CHECK_FALSE(eec);
    CHECK_FALSE(st);  // a's node is gone, its session lives on
    CHECK(lb->is_leader());
    CHECK(lb->fencing_token() > a_token);
    co_await sleep_for(300ms);
    CHECK(b_grants == 1);
    CHECK(c_grants == 0);
    CHECK_FALSE(la.is_leader());
    auto [ec2] = co_await la.async_resign(tuple_awaitable);
    CHECK(ec2 == errc::already_released);
    CHECK(co_await children_of(sc, path) == 2);
    --leading;
    co_await lb->async_resign(asio::use_awaitable);
    co_await until([&] { return lc.has_value(); });
    CHECK(c_grants == 1);
    CHECK(b_grants == 1);
    --leading;
    co_await lc->async_resign(asio::use_awaitable);
    CHECK(co_await children_of(sc, path) == 0);
    CHECK(max_leading == 1);
    CHECK(sa.session_id() == a_session);  // a's session survived throughout
  }(), 90s);
}

TEST_CASE("election: resign while the connection is cut completes with release_pending, the next leads once after the reconnect",
          "[integration][election][fault][timing]") {
  resign_during_reconnect(cut_kind::cut);
}

TEST_CASE("election: resign while the connection is blackholed completes with release_pending, the next leads once after the reconnect",
          "[integration][election][fault][slow][timing]") {
  resign_during_reconnect(cut_kind::blackhole);
}

TEST_CASE("election: resign whose reply is lost hands over once, the retry after the reconnect finds the node gone",
          "[integration][election][fault]") {
  resign_during_reconnect(cut_kind::lost_reply);
}

// A campaign cancelled with its create in flight: the create is handed to the client inside
// the initiation (on the session's executor), so a cancellation emitted right after the call
// returns comes before its reply. Every cancellation type, with a leader in place (the
// campaign would wait) and without one (the create-and-list would lead). Then a create whose
// reply is lost with the connection: the node exists on the server and only the protected
// name finds it after the reconnect. After each: no node of ours, no watch, and the next
// campaign on the same object leads.
TEST_CASE_METHOD(proxied_fixture,
                 "election: a campaign cancelled with its create in flight leaves no node and no watch, the next one leads",
                 "[integration][election][cancel]") {
  auto& s0 = connect();
  auto& s1 = connect();
  auto& sp = connect_proxied();
  const std::string path = "/election/cancel-create";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election leader_e(s0, path, "leader"), e(s1, path, "e");
    // creates the path once: its children are counted below
    auto held = co_await leader_e.async_campaign(asio::use_awaitable);
    for (bool with_leader : {true, false}) {
      for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                        asio::cancellation_type::total}) {
        INFO("with_leader " << with_leader << ", cancellation type " << static_cast<int>(type));
        asio::cancellation_signal sig;
        std::optional<error_code> got;
        leadership won;
        auto sent = s1.stats().requests_sent;
        e.async_campaign(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, leadership l) {
          got = ec;
          won = std::move(l);
        }));
        CHECK(s1.stats().requests_sent > sent);  // the create is on its way
        sig.emit(type);
        co_await until([&] { return got.has_value(); }, 10s);
        CHECK(*got == asio::error::operation_aborted);
        CHECK_FALSE(won.is_leader());
        CHECK(co_await children_of(s0, path) == (with_leader ? 1u : 0u));
        CHECK(server_watches(srv) == 0);  // the leader's own is on its own node (not counted)
      }
      // the next campaign on the same object works
      std::optional<leadership> next;
      e.async_campaign([&](error_code ec, leadership l) {
        CHECK_FALSE(ec);
        next = std::move(l);
      });
      if (with_leader) {
        co_await await_children(s0, path, 2);
        co_await held.async_resign(asio::use_awaitable);
      }
      co_await until([&] { return next.has_value(); }, 10s);
      CHECK(next->is_leader());
      CHECK(next->identity() == "e");
      co_await next->async_resign(asio::use_awaitable);
    }

    // the create's reply lost with the connection (it committed): cancelled meanwhile
    held = co_await leader_e.async_campaign(asio::use_awaitable);
    election ep(sp, path, "p");
    proxy.swallow_replies(true);
    std::optional<error_code> got;
    asio::cancellation_signal sig;
    auto sent = sp.stats().requests_sent;
    ep.async_campaign(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, leadership) { got = ec; }));
    CHECK(sp.stats().requests_sent > sent);
    sig.emit(asio::cancellation_type::terminal);
    co_await await_children(s0, path, 2);  // it reached the server: our node is there
    co_await await_state(sp, session_state::suspended);
    proxy.swallow_replies(false);
    co_await until([&] { return got.has_value(); }, 20s);  // once cleaned up, after the reconnect
    CHECK(*got == asio::error::operation_aborted);
    auto deadline = clk::now() + 10s;
    while (co_await children_of(s0, path) != 1 && clk::now() < deadline) co_await sleep_for(10ms);
    CHECK(co_await children_of(s0, path) == 1);  // found by its protected name and deleted
    co_await sleep_for(100ms);
    CHECK(server_watches(srv) == 0);  // the leader's own is on its own node (not counted)
    std::optional<leadership> next;
    ep.async_campaign([&](error_code ec, leadership l) {
      CHECK_FALSE(ec);
      next = std::move(l);
    });
    co_await await_children(s0, path, 2);
    co_await held.async_resign(asio::use_awaitable);
    co_await until([&] { return next.has_value(); }, 10s);
    CHECK(next->is_leader());
    CHECK(next->identity() == "p");
    co_await next->async_resign(asio::use_awaitable);
    CHECK(co_await children_of(s0, path) == 0);
  }(), 90s);
}

// CURATOR-724: the election path is a container, and the server reaps an empty container (here
// every 100 ms: znode.container.checkIntervalMs). A campaign on the same object after the path
// (and its container parent) were reaped recreates them and leads. A candidate waiting behind
// the leader while its connection is down, whose node an operator deletes, and whose leader
// resigns, so that the path is empty and reaped before it reconnects: after the reconnect it
// must not take the leader's deletion for its grant (its node is gone), but queue again on a
// recreated path and lead from a node of its own session — no error reaches the user, and a
// later candidate queues behind it.
TEST_CASE("election: a reaped container path is recreated, before a campaign and under a waiting candidate",
          "[integration][election][fault]") {
  zklock::test::server_options so;
  so.container_check_interval_ms = 100;
  proxied_fixture f(so);
  auto& proxy = f.proxy;
  auto& sa = f.connect();
  auto& sb = f.connect_proxied(8000ms);
  auto& sc = f.connect();
  const std::string parent = "/reaped", path = "/reaped/election";
  auto await_reaped = [&](const std::string& p) -> asio::awaitable<void> {
    auto deadline = clk::now() + 15s;
    for (;;) {
      auto [ec, st] = co_await sc.async_exists(p, tuple_awaitable);
      if (!ec && !st) break;
      if (clk::now() > deadline) FAIL(p << " was never reaped");
      co_await sleep_for(20ms);
    }
  };
  run_test(f.ioc, [&]() -> asio::awaitable<void> {
    election a(sa, path, "a"), b(sb, path, "b"), c(sc, path, "c");

    // 1. campaign, resign: path and parent reaped; campaign again on the same object
    auto la = co_await a.async_campaign(asio::use_awaitable);
    const auto first_token = la.fencing_token();
    co_await la.async_resign(asio::use_awaitable);
    co_await await_reaped(path);
    co_await await_reaped(parent);
    auto [ec1, la2] = co_await a.async_campaign_for(10s, tuple_awaitable);
    CHECK_FALSE(ec1);
    REQUIRE(la2.is_leader());
    auto [sec, st] = co_await sc.async_exists(la2.node_path(), tuple_awaitable);
    REQUIRE(st);
    CHECK(st->ephemeral_owner == sa.session_id());
    CHECK(la2.fencing_token() > first_token);

    // 2. b waits behind a, cut off; its node deleted by an operator; a resigns; reaped
    std::optional<error_code> b_ec;
    leadership lb;
    b.async_campaign([&](error_code ec, leadership l) {
      b_ec = ec;
      lb = std::move(l);
    });
    co_await await_children(sc, path, 2);
    co_await sleep_for(50ms);  // b watches a's node
    auto queue = co_await c.async_candidates(asio::use_awaitable);
    REQUIRE(queue.size() == 2);
    REQUIRE(queue[1].data == "b");
    const std::string b_node = path + "/" + queue[1].node;
    proxy.set_accepting(false);
    proxy.drop_all();
    co_await await_state(sb, session_state::suspended);
    co_await sc.async_delete(b_node, -1, asio::use_awaitable);  // the operator
    co_await la2.async_resign(asio::use_awaitable);
    co_await await_reaped(path);
    proxy.set_accepting(true);
    co_await await_state(sb, session_state::reconnected);
    co_await until([&] { return b_ec.has_value(); }, 20s);
    CHECK_FALSE(*b_ec);
    REQUIRE(lb.is_leader());
    CHECK(lb.node_path() != b_node);
    auto [bec, bst] = co_await sc.async_exists(lb.node_path(), tuple_awaitable);
    CHECK_FALSE(bec);
    REQUIRE(bst);  // b leads from a node that exists, of its own session
    CHECK(bst->ephemeral_owner == sb.session_id());
    bool b_lost = false;
    lb.async_wait_lost([&](error_code ec) { b_lost = ec == errc::lock_lost; });

    // a later candidate queues behind b
    std::optional<leadership> lc;
    c.async_campaign([&](error_code ec, leadership l) {
      CHECK_FALSE(ec);
      lc = std::move(l);
    });
    co_await await_children(sc, path, 2);
    co_await sleep_for(3000ms);  // past b's hold keepalive (a third of its 8 s timeout)
    CHECK_FALSE(lc);
    CHECK_FALSE(b_lost);
    CHECK(lb.is_leader());
    co_await lb.async_resign(asio::use_awaitable);
    co_await until([&] { return lc.has_value(); });
    CHECK(lc->is_leader());
    co_await lc->async_resign(asio::use_awaitable);
  }(), 90s);
}

TEST_CASE_METHOD(proxied_fixture,
                 "election: a cancelled observer completes at once while the ensemble is unreachable (terminal, partial), "
                 "its watch is removed after the reconnect",
                 "[integration][election][observe][cancel][fault]") {
  auto& leader_s = connect();
  auto& watcher_s = connect_proxied(8000ms);
  const std::string path = "/election/observe-cut";
  run_test(ioc, [&]() -> asio::awaitable<void> {
    election a(leader_s, path, "alpha"), watcher(watcher_s, path, "observer");
    auto la = co_await a.async_campaign(asio::use_awaitable);
    auto known = co_await watcher.async_leader(asio::use_awaitable);
    REQUIRE(known);
    const int base = server_watches(srv);  // the leader's own, if any
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
      // watching when the ensemble goes, or started while it is gone (its read waits for a
      // connection)
      for (bool started_unreachable : {false, true}) {
        CAPTURE(static_cast<int>(type), started_unreachable);
        asio::cancellation_signal stop;
        std::optional<error_code> got;
        auto observe = [&] {
          watcher.async_observe(known, asio::bind_cancellation_slot(stop.slot(), [&](error_code ec, std::optional<leader_info>) {
            got = ec;
          }));
        };
        if (!started_unreachable) {
          observe();
          co_await until([&] { return server_watches(srv) == base + 1; });  // its data watch on alpha's node
        }
        // unreachable: the connection dropped, new ones refused
        proxy.set_accepting(false);
        proxy.drop_all();
        co_await await_state(watcher_s, session_state::suspended);
        if (started_unreachable) {
          observe();
          co_await sleep_for(300ms);  // its read failed: waiting for a connection
          CHECK_FALSE(got);
        }
        stop.emit(type);
        co_await sleep_for(300ms);
        if (type != asio::cancellation_type::total) {
          REQUIRE(got);  // at once, still unreachable
          CHECK(*got == asio::error::operation_aborted);
          CHECK(watcher_s.state() == session_state::suspended);
        }
        proxy.set_accepting(true);
        co_await await_state(watcher_s, session_state::reconnected);
        co_await until([&] { return got.has_value() && server_watches(srv) == base; });  // removed after the reconnect
        CHECK(*got == asio::error::operation_aborted);
        CHECK(server_watches(srv) == base);
      }
    }
    co_await la.async_resign(asio::use_awaitable);
  }(), 180s);
}
