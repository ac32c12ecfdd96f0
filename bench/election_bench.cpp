// zklock-election-bench: failover of zklock::election, the election phase of scripts/bench.
// The same two modes as the Curator and kazoo election peers
// (bench/peers/curator/CuratorElection.java, bench/peers/kazoo/kazoo_election.py):
//
//   --mode resign --candidates N --resigns R [--hold-ms H]
//     N candidates, each its own session, on one io_context thread. The leader holds H ms,
//     takes a timestamp and resigns; the next leader's code (the statement after the
//     co_await of async_campaign) takes the time since. The resigner then campaigns again on
//     the same election object (it queues last). R resigns, R samples; two leaders at once in
//     this process count as violations. Then the same loop on a zklock::mutex (release ->
//     the next acquire's code), for the "about one mutex handoff" comparison. Prints one
//     key=value line (failover_p50_us ... mutex_handoff_p50_us ...); --json, --cdf. The
//     resigner campaigns again only once the next leader's code ran (see candidate_loop).
//     --warmup W: W resigns first, unrecorded (the peers' JIT and caches warm up in their
//     process; so do ours), then R recorded.
//
//   --mode candidate --id NAME
//     One candidate for the kill measurement driven by scripts/bench: prints
//     "connected negotiated_ms=T", "queued" once its node is in the election, and
//     "leader id=NAME t_ns=<CLOCK_MONOTONIC ns>" the moment it leads, then keeps leading until
//     it is killed (SIGTERM resigns and exits 0). The driver takes CLOCK_MONOTONIC just before
//     it sends SIGKILL to the leader's process: failover = t_ns - that.
#include <zklock/election.hpp>
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include "result_line.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;  // CLOCK_MONOTONIC: comparable across processes

namespace {

struct options {
  std::string connect = "127.0.0.1:2181", path = "/zklock-bench/election", json_file, cdf_file, timeline_file, id;
  int candidates = 3, resigns = 200, hold_ms = 20, session_timeout_ms = 10000;
  int warmup = 0;  // resign: resigns first, unrecorded (as the peers' --warmup)
  bool mutex_reference = true;
};

using zklock_bench::kv_line;
using zklock_bench::percentile;

double us_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

asio::awaitable<void> sleep_for(clock_type::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

std::unique_ptr<zklock::session> make_session(asio::io_context& ioc, const options& o) {
  zklock::session_options so;
  so.connect = o.connect;
  so.session_timeout = std::chrono::milliseconds(o.session_timeout_ms);
  so.connect_timeout = std::chrono::seconds(60);
  return std::make_unique<zklock::session>(ioc.get_executor(), so);
}

// One resign-and-rejoin loop over N sessions; `term` runs one candidate's campaign (or acquire)
// and returns when it has resigned (released), reporting through the shared bookkeeping.
struct handoffs {
  std::vector<double> samples;  // us: resign (release) started -> the next leader's (holder's) code
  std::vector<std::pair<clock_type::time_point, clock_type::time_point>> marks;  // each sample's two instants
  clock_type::time_point resign_started{};
  int resigner = -1, resigns = 0, leaders = 0, violations = 0, terms = 0;  // terms: also a generation
  asio::steady_timer* rejoin_gate = nullptr;  // the resigner waits on it until the next leader's code ran
};

// One term's start and end, for the election and for the mutex reference loop.
asio::awaitable<zklock::leadership> take(zklock::election& e) { co_return co_await e.async_campaign(asio::use_awaitable); }
asio::awaitable<zklock::lock_guard> take(zklock::mutex& m) { co_return co_await m.async_acquire(asio::use_awaitable); }
asio::awaitable<void> give(zklock::leadership& l) { co_await l.async_resign(asio::use_awaitable); }
asio::awaitable<void> give(zklock::lock_guard& g) { co_await g.async_release(asio::use_awaitable); }

template <class Recipe>
asio::awaitable<void> candidate_loop(Recipe& r, int me, handoffs& h, const options& o) {
  const int total = o.warmup + o.resigns;  // the first o.warmup resigns are not recorded
  while (h.resigns < total) {
    auto term = co_await take(r);
    if (h.resign_started != clock_type::time_point{} && h.resigner != me && h.resigns > o.warmup)
    {
      h.samples.push_back(us_since(h.resign_started));
      h.marks.emplace_back(h.resign_started, clock_type::now());
    }
    h.resign_started = {};
    if (h.rejoin_gate) h.rejoin_gate->cancel();
    ++h.terms;
    if (++h.leaders != 1) ++h.violations;
    if (h.resigns < total) co_await sleep_for(std::chrono::milliseconds(o.hold_ms));
    --h.leaders;
    if (h.resigns >= total) {  // the measured resigns are done: leave, rejoin no more
      co_await give(term);
      break;
    }
    ++h.resigns;
    h.resigner = me;
    h.resign_started = clock_type::now();
    const int term_no = h.terms;
    co_await give(term);
    // Campaign again on the same object (we queue last), once the next leader's code ran: a
    // create sent at once would queue in the standalone server's one pipeline (where reads wait
    // behind the writes being synced) ahead of the successor's listing, and be measured with it.
    if (h.terms == term_no) {
      asio::steady_timer gate(co_await asio::this_coro::executor, clock_type::time_point::max());
      h.rejoin_gate = &gate;
      co_await gate.async_wait(asio::as_tuple(asio::use_awaitable));
      h.rejoin_gate = nullptr;
    }
  }
}

// Runs the loop on N sessions with one Recipe per session; returns the figures, or a failure.
template <class Recipe>
bool run_loop(const options& o, const std::string& path, handoffs& h, std::uint64_t& requests, std::string& failure) {
  asio::io_context ioc;
  std::vector<std::unique_ptr<zklock::session>> sessions;
  for (int i = 0; i < o.candidates; ++i) sessions.push_back(make_session(ioc, o));
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (auto& s : sessions) co_await s->async_connect(asio::use_awaitable);
    std::vector<std::unique_ptr<Recipe>> recipes;
    for (int i = 0; i < o.candidates; ++i) {
      if constexpr (std::is_same_v<Recipe, zklock::election>)
        recipes.push_back(std::make_unique<Recipe>(*sessions[i], path, "candidate-" + std::to_string(i)));
      else
        recipes.push_back(std::make_unique<Recipe>(*sessions[i], path));
    }
    std::uint64_t before = 0;
    for (auto& s : sessions) before += s->stats().requests_sent;
    int finished = 0;
    for (int i = 0; i < o.candidates; ++i) {
      asio::co_spawn(ioc, candidate_loop(*recipes[i], i, h, o), [&](std::exception_ptr e) {
        if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); ioc.stop(); }
        ++finished;
      });
      // queue in order, so that the first resigns find every other candidate waiting
      co_await sleep_for(std::chrono::milliseconds(20));
    }
    while (finished < o.candidates) co_await sleep_for(std::chrono::milliseconds(5));
    std::uint64_t after = 0;
    for (auto& s : sessions) after += s->stats().requests_sent;
    requests = after - before;
    for (auto& s : sessions) co_await s->async_close(asio::use_awaitable);
  }, [&](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); ioc.stop(); }
  });
  ioc.run();
  return failure.empty();
}

int run_resign(const options& o) {
  handoffs el, mx;
  std::uint64_t el_requests = 0, mx_requests = 0;
  std::string failure;
  if (!run_loop<zklock::election>(o, o.path, el, el_requests, failure)) {
    std::cerr << "zklock-election-bench: election: " << failure << "\n";
    return 2;
  }
  if (o.mutex_reference && !run_loop<zklock::mutex>(o, o.path + "-mutex", mx, mx_requests, failure)) {
    std::cerr << "zklock-election-bench: mutex: " << failure << "\n";
    return 2;
  }
  auto& s = el.samples;
  kv_line r;
  r.add("impl", std::string("zklock"));
  r.add("kind", std::string("election-resign"));
  r.add("candidates", static_cast<long long>(o.candidates));
  r.add("resigns", static_cast<long long>(el.resigns - o.warmup));
  r.add("warmup", static_cast<long long>(o.warmup));
  r.add("hold_ms", static_cast<long long>(o.hold_ms));
  r.add("session_timeout_ms", static_cast<long long>(o.session_timeout_ms));
  r.add("failover_p50_us", percentile(s, 50));
  r.add("failover_p90_us", percentile(s, 90));
  r.add("failover_p99_us", percentile(s, 99));
  r.add("failover_max_us", percentile(s, 100));
  r.add("failovers", static_cast<long long>(s.size()));
  r.add("requests_per_term", el.terms ? static_cast<double>(el_requests) / el.terms : NAN);
  if (o.mutex_reference) {
    r.add("mutex_handoff_p50_us", percentile(mx.samples, 50));
    r.add("mutex_handoff_p99_us", percentile(mx.samples, 99));
    r.add("mutex_handoffs", static_cast<long long>(mx.samples.size()));
    r.add("mutex_requests_per_acq", mx.terms ? static_cast<double>(mx_requests) / mx.terms : NAN);
  }
  r.add("violations", static_cast<long long>(el.violations + mx.violations));
  r.emit(o.json_file);
  if (!o.cdf_file.empty()) {
    std::ofstream f(o.cdf_file);
    for (double x : s) f << x << "\n";
  }
  if (!o.timeline_file.empty()) {  // CLOCK_MONOTONIC ns: to be laid beside a wire trace (bench/zk_opcount.py --trace)
    std::ofstream f(o.timeline_file);
    auto ns = [](clock_type::time_point t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    for (const auto& [a, b] : el.marks) f << ns(a) << " " << ns(b) << "\n";
  }
  return el.violations + mx.violations == 0 ? 0 : 1;
}

int run_candidate(const options& o) {
  asio::io_context ioc;
  auto s = make_session(ioc, o);
  zklock::election e{*s, o.path, o.id};
  zklock::leadership leading;
  int status = 0;
  auto fail = [&](const std::string& what, zklock::error_code ec) {
    std::cerr << "zklock-election-bench: " << what << ": " << ec.message() << "\n";
    status = 2;
    ioc.stop();
  };
  s->async_connect([&](zklock::error_code ec) {
    if (ec) return fail("connect", ec);
    std::cout << "connected negotiated_ms=" << s->negotiated_timeout().count() << std::endl;
    e.async_campaign([&](zklock::error_code ec, zklock::leadership l) {
      auto now = clock_type::now();  // the leader's code runs here
      if (ec) return fail("campaign", ec);
      std::cout << "leader id=" << o.id << " t_ns="
                << std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() << std::endl;
      leading = std::move(l);
      leading.async_wait_lost([&](zklock::error_code ec) {
        if (ec == zklock::errc::lock_lost) fail("leadership lost", ec);
      });
    });
    // "queued" once our node is in the election (the driver kills the leader only then)
    auto poll = std::make_shared<asio::steady_timer>(ioc);
    auto check = std::make_shared<std::function<void()>>();
    *check = [&, poll, check] {
      e.async_candidates([&, poll, check](zklock::error_code ec, std::vector<zklock::contender> cs) {
        if (!ec && std::any_of(cs.begin(), cs.end(), [&](const zklock::contender& c) { return c.data == o.id; })) {
          std::cout << "queued" << std::endl;
          *check = nullptr;  // breaks the cycle
          return;
        }
        poll->expires_after(std::chrono::milliseconds(10));
        poll->async_wait([check](zklock::error_code) { if (*check) (*check)(); });
      });
    };
    (*check)();
  });
  asio::signal_set signals(ioc, SIGTERM, SIGINT);
  signals.async_wait([&](zklock::error_code ec, int) {
    if (ec) return;
    auto close = [&] { s->async_close([&](zklock::error_code) { ioc.stop(); }); };
    if (leading) return leading.async_resign([close](zklock::error_code) { close(); });
    close();
  });
  ioc.run();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zklock election failover benchmark (resign: in one process; candidate: one process of the kill measurement)"};
  options o;
  std::string mode = "resign";
  app.add_option("--mode", mode, "resign or candidate")->check(CLI::IsMember({"resign", "candidate"}));
  app.add_option("--connect", o.connect, "ZooKeeper hosts");
  app.add_option("--path", o.path, "election path");
  app.add_option("--candidates", o.candidates, "resign: candidates (sessions) in this process")->check(CLI::Range(2, 1000));
  app.add_option("--resigns", o.resigns, "resign: resigns measured")->check(CLI::PositiveNumber);
  app.add_option("--hold-ms", o.hold_ms, "resign: how long each leader leads before it resigns");
  app.add_option("--warmup", o.warmup, "resign: resigns run first in this process, unrecorded (as the peers')");
  app.add_option("--session-timeout-ms", o.session_timeout_ms, "requested session timeout");
  app.add_flag("!--no-mutex", o.mutex_reference, "resign: skip the zklock::mutex reference loop");
  app.add_option("--json", o.json_file, "resign: also write the result as JSON");
  app.add_option("--cdf", o.cdf_file, "resign: every failover (us), one per line");
  app.add_option("--timeline", o.timeline_file,
                 "resign: each failover's resign start and the next leader's code, CLOCK_MONOTONIC ns, one pair per line");
  app.add_option("--id", o.id, "candidate: participant id");
  CLI11_PARSE(app, argc, argv);
  if (mode == "candidate") {
    if (o.id.empty()) {
      std::cerr << "zklock-election-bench: --mode candidate needs --id\n";
      return 2;
    }
    return run_candidate(o);
  }
  return run_resign(o);
}
