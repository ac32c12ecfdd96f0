// A fault-harness client process: a zklock recipe in an acquire / hold / release loop, reporting
// every step to the harness's fenced resource (resource_client.hpp).
//   zklock_fault_worker RESOURCE_PORT CONNECT PATH WHO SESSION_TIMEOUT_MS HOLD_MS loop|hold [RECIPE [OPTIONS]]
// RECIPE: mutex (default): zklock::mutex; shared:WRITE_PERCENT:SEED: zklock::shared_mutex, each
//       acquisition the write side with that probability (drawn from SEED), else the read side;
//       semaphore:N: a lease of zklock::semaphore with max_leases N; election: a candidate of
//       zklock::election (identity WHO) that campaigns, leads (its writes fenced with the
//       leadership's fencing_token(), stopped by its lost_slot() and valid_until()) and resigns;
//       local-queue:COROUTINES:HANDOFFS: COROUTINES coroutines (WHO.1..WHO.N, each its own
//       resource connection) on one zklock::mutex with mutex_options{local_queue = true,
//       max_local_handoffs = HANDOFFS}, one session. The grant message says which side the
//       section holds ("side=exclusive|read|write|lease") and the session's child watch events
//       so far ("ev=N": the local queue's fairness check, see checker.hpp).
// loop: acquire, write "grant" (fencing token = lock_guard::fencing_token()), a "write" every
//       10 ms while the hold lasts (HOLD_MS, or what the resource's reply asks for), "end",
//       release; a new session when the old one ended. The section stops at once when the
//       guard is lost (lost_slot) or its validity deadline has passed, or when the resource
//       rejects a write (a newer holder wrote: we were paused).
// hold: acquire once, write "grant", hold until SIGTERM (the successor in the partition-window
//       measurement).
// SIGUSR1: stop acquiring (a pending acquire is cancelled, a section in progress finishes),
// report "idle" and keep the session open. SIGTERM: close the session and exit.
// A reply "OK ... CLOSE N" or "OK ... DESTROY N" (the harness's local-close scenario) closes
// (async_close) or destroys (the recipe object, then the session object) the session of the
// contender that sent the message (local-queue: the process's one session) N handlers after the
// one that got the reply (which first starts what it was about to: the acquire, the hold...; N
// posts to the executor: the close lands at a chosen step of what runs meanwhile); the
// worker says "close" with what it did, as the session's owner (WHO, or WHO.i with sessions:N),
// right before, in the same handler, and starts a new session once every contender left it.
// A section that ends because its guard went lost reports "lost" at once, then "lost_cause"
// with the guard's lost_cause (async_wait_lost's error; the harness's operator-delete scenario
// checks node_deleted).
// SIGRTMIN+1 / SIGRTMIN+2 (the harness's fd-exhaust scenario): lower RLIMIT_NOFILE to 3, so
// that every new socket fails with EMFILE (the descriptors open keep working); then restore it. Reported as "fds exhausted ..." / "fds restored".
// OPTIONS (after RECIPE): sessions:N (the storm scenario): N contenders, each with its own
//       session, named WHO.1..WHO.N, on this one io_context, plus a user socket (a loopback
//       connection to the resource, reopened every 20 pings, a ping every 50 ms) that reports
//       "user_socket_stall" when a reply takes longer than 2 s: another socket on the same
//       io_context must not lose its registration while the sessions reconnect. "idle" is sent
//       as WHO once every contender is idle.
// The guarded znode (PATH.znode, created by the first write; not for the semaphore): after each
// accepted write of a section that excludes the others, the holder reads the counter and sets
// it to read + 1 behind its guard's check op, and reports "zkwrite TOKEN read=R value=R+1
// version=V outcome=ok|refused|indeterminate|error:read fenced=1 invoke=T_NS" (history.cpp).
// A refusal is a loss: "lost refused by the znode's check op".
// mutant:NAME (after RECIPE; the harness's --mutant, mutants.hpp): a deliberately broken use of
// the library, for the checker to catch: ignore-lost, leader-keeps-leading, local-ignore-lost
// (it reports the loss, as the library told it, and writes on), leak-release (reports its
// release, keeps the guard), read-as-write (takes the read side, reports and writes as a
// writer), timeout-as-grant (a 5 ms acquire deadline; on its expiry a section with token 0),
// skip-lock-delay (the mutex with lock-delay 0 whatever lockdelay:MS says),
// grant-on-any-predecessor and data-change-as-grant (a lock of the worker's own on the session's
// requests, own_acquire: granted on the deletion of any node ahead, or on a change of the data of
// the node right ahead).
// lockdelay:MS (after RECIPE; the harness's --lock-delay): mutex_options::lock_delay of the mutex.
// probe (after RECIPE; the harness's pause-close scenario): a session of its own, idle, on a
//       strand of its own; every 5 ms its timer's lateness and a call of its session_id() (which
//       takes the C client's lock of the process) are timed. SIGRTMIN+3 / SIGRTMIN+4: every
//       contender's session closed at once from the worker's strand (threads mode: another
//       thread than the sessions'), the even-numbered ones by async_close and the others
//       destroyed (+3), or the other way round (+4); each says "close" right before and,
//       1.5 s after, "closed how=async_close|destroy took_ms=T probe=0|1 probe_late_ms=L
//       probe_call_ms=C": how long async_close (the destruction) took, and the probe's largest
//       lateness and call meanwhile.
// threads:N: the io_context run by N threads, each session on a strand of its own, the
//       worker's coroutines on another; the mutex taken with `acquire || timer` (1 to 10
//       sections long); a deadline that ended an acquire is reported "acquire_error
//       deadline=MS '...'".
// ZKLOCK_FAULT_WORKER_LEAK_CHILD_WATCH=1 in the environment (a test of the harness's leftover
// check, never set by the harness): a contender that goes idle first sets a child watch on the
// parent of PATH (getChildren; nobody changes its children while the clients are idle) and keeps
// it, a watch left behind that the check must find.
#include "resource_client.hpp"

#include <zklock/election.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using zklock::fault::resource_client;

namespace {

struct config {
  std::uint16_t resource_port = 0;
  std::string connect, path, who;
  std::chrono::milliseconds session_timeout{4000};
  int hold_ms = 30;
  bool loop = true;
  std::string recipe = "mutex";  // mutex, shared, semaphore
  int write_percent = 100;       // shared: the share of acquisitions that take the write side
  std::uint64_t mix_seed = 0;    // shared: seeds the read/write draws
  int leases = 1;                // semaphore: max_leases
  int sessions = 1;              // contenders (sessions) on this io_context; > 1: and a user socket
  int coroutines = 1;            // local-queue: contenders on one session and one mutex object
  int max_local_handoffs = 1;    // local-queue
  std::string mutant;            // a deliberately broken use of the library (mutants below), "" for none
  int threads = 1;               // threads:N: the io_context run by N threads (see main)
  int lock_delay_ms = 0;         // lockdelay:MS: mutex_options::lock_delay (mutex)
  bool probe = false;            // probe: a probe session timing the loop and the C client's lock (main)
  int contenders() const { return recipe == "local-queue" ? coroutines : sessions; }
};

// fd exhaustion: RLIMIT_NOFILE lowered to 3 (stdin, stdout, stderr are open): every new
// descriptor (a socket for a reconnect) fails with EMFILE, the ones open keep working. (Filling
// the free slots instead does not hold: the C client closes its socket and gets the slot back.)
struct fd_exhaustion {
  rlimit saved{};
  bool on = false;

  std::string exhaust() {
    if (on) return "exhausted already";
    ::getrlimit(RLIMIT_NOFILE, &saved);
    rlimit low = saved;
    low.rlim_cur = 3;
    if (::setrlimit(RLIMIT_NOFILE, &low) != 0) return std::string("setrlimit failed: ") + std::strerror(errno);
    on = true;
    const int probe = ::dup(0);  // must fail
    if (probe >= 0) ::close(probe);
    return std::string("exhausted limit=3") + (probe >= 0 ? " (a dup still succeeded)" : "");
  }
  std::string restore() {
    if (!on) return "restored already";
    ::setrlimit(RLIMIT_NOFILE, &saved);
    on = false;
    return "restored";
  }
};

// A contender's session and its recipe object (local-queue: the process's session and its one
// mutex), shared with a local-close fault's closer, which may close or destroy them at any
// handler. Members in this order: the recipe objects are destroyed before the session.
struct session_slot {
  std::optional<zklock::session> s;
  std::optional<zklock::mutex> m;
  std::optional<zklock::shared_mutex> sm;
  std::optional<zklock::semaphore> sem;
  std::optional<zklock::election> el;
  bool ended = false;  // closed or destroyed by a local-close fault (the owner starts a new one)
  // whether its contenders must leave it (it ended, expired or was closed)
  bool over() const {
    if (ended || !s) return true;
    auto st = s->state();
    return st == zklock::session_state::expired || st == zklock::session_state::closed;
  }
  std::uint64_t child_events() const { return s ? s->stats().events(zklock::watch_event_type::child) : 0; }
};

const char* cause_name(zklock::lost_cause c) {
  switch (c) {
    case zklock::lost_cause::deadline_passed: return "deadline_passed";
    case zklock::lost_cause::session_expired: return "session_expired";
    case zklock::lost_cause::session_closed: return "session_closed";
    case zklock::lost_cause::session_replaced: return "session_replaced";
    case zklock::lost_cause::node_deleted: return "node_deleted";
    case zklock::lost_cause::unknown: break;
  }
  return "unknown";
}

struct worker {
  config cfg;
  resource_client res;  // as WHO
  asio::any_io_executor ex;
  bool stopping = false;
  bool terminating = false;
  std::vector<std::unique_ptr<asio::cancellation_signal>> cancel_acquire;  // one per contender, emitted on SIGUSR1 / SIGTERM
  asio::steady_timer parked;                 // idle until SIGTERM
  int active = 0;                            // contenders not idle yet
  std::optional<asio::ip::tcp::socket> user_socket;
  const bool leak_child_watch = [] {
    const char* v = std::getenv("ZKLOCK_FAULT_WORKER_LEAK_CHILD_WATCH");
    return v && std::string(v) == "1";
  }();
  std::vector<zklock::watch> leaked;
  std::vector<zklock::lock_guard> leaked_guards;  // mutant leak-release

  // threads:N: each session on a strand of its own of the io_context (`pool`), the worker's
  // coroutines on another strand (`ex`)
  asio::any_io_executor pool;
  asio::any_io_executor session_executor() const {
    return cfg.threads > 1 ? asio::any_io_executor(asio::make_strand(pool)) : ex;
  }

  // Each contender's current session and its owner (the reports' sender), for the harness's
  // pause-close scenario: SIGRTMIN+3 / SIGRTMIN+4 close or destroy them all at once (close_all).
  std::vector<std::pair<std::shared_ptr<session_slot>, resource_client*>> live;

  // probe: a session of its own, idle, on a strand of its own; every 5 ms a timer and a call of
  // its session_id() (which takes the C client's lock of the process) are timed: the largest
  // lateness and call since the last reset (close_later resets and reports them)
  std::optional<zklock::session> probe;
  std::atomic<std::int64_t> probe_late_ns{0}, probe_call_ns{0};
  std::atomic<bool> probe_stop{false};
  std::atomic<bool> probe_connected{false};  // (read by the reports, on the worker's strand)
  asio::cancellation_signal probe_cancel;

  worker(config c, asio::any_io_executor e, asio::any_io_executor p)
      : cfg(std::move(c)), res(cfg.resource_port, cfg.who), ex(e), parked(e, asio::steady_timer::time_point::max()), pool(p) {
    for (int i = 0; i < cfg.contenders(); ++i) cancel_acquire.push_back(std::make_unique<asio::cancellation_signal>());
    live.resize(std::size_t(cfg.contenders()));
  }

  static bool ok(const std::string& reply) { return reply.rfind("OK", 0) == 0; }
  bool mutant(const char* name) const { return cfg.mutant == name; }
  // The worker ignores that its lock is gone: it keeps writing after its guard's validity
  // passed and after a resource refused it (each recipe's name for it: --list-mutants).
  bool ignores_loss() const {
    return mutant("ignore-lost") || mutant("leader-keeps-leading") || mutant("local-ignore-lost");
  }
  // The guarded znode: a counter next to the lock path.
  std::string znode() const { return cfg.path + ".znode"; }

  asio::awaitable<void> sleep(std::chrono::milliseconds d) {
    asio::steady_timer t(ex, d);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  // A contender's session: connects it (cancelled through `slot`) and says hello with its id as
  // `owner` (the contender, WHO.i with sessions:N, whose closes are reported under that name
  // too: the harness's rules pair a close with the owner's next hello). On an error: reports
  // it, waits 200 ms and returns false (the caller tries a new session).
  asio::awaitable<bool> connect_session(zklock::session& s, asio::cancellation_slot slot, resource_client& owner) {
    auto [cec] = co_await s.async_connect(asio::bind_cancellation_slot(slot, asio::as_tuple(asio::use_awaitable)));
    if (cec) {
      owner.send("error", 0, "connect:" + cec.message());
      if (!stopping) co_await sleep(200ms);
      co_return false;
    }
    std::ostringstream sid;
    sid << "0x" << std::hex << s.session_id();
    owner.send("hello", 0, sid.str());
    co_return true;
  }

  zklock::session_options session_opts() const {
    zklock::session_options o;
    o.connect = cfg.connect;
    o.session_timeout = cfg.session_timeout;
    o.connect_timeout = 60s;
    return o;
  }

  // local-close: a reply that asks for the session's end ("CLOSE N", "DESTROY N") starts a
  // closer of `ss`, which reports as `owner` (the session's owner).
  void directive(const std::string& reply, const std::shared_ptr<session_slot>& ss, resource_client& owner) {
    for (const char* how : {"CLOSE ", "DESTROY "}) {
      auto at = reply.find(how);
      if (at == std::string::npos) continue;
      const int handlers = std::atoi(reply.c_str() + at + std::strlen(how));
      // Posted, not spawned here: co_spawn dispatches (Boost 1.81 runs the coroutine at once
      // when called on the executor's thread), so with 0 handlers the closer would destroy the
      // recipe object and the session before the caller starts the operation it should race.
      // From the post, the closer runs after this handler, then `handlers` more.
      asio::post(ex, [this, ss, &owner, close = how[0] == 'C', handlers] {
        asio::co_spawn(ex, close_later(ss, owner, close, handlers), asio::detached);
      });
    }
  }

  // Closes (async_close) or destroys (recipe object, then session) `ss`'s session after
  // `handlers` posts, saying "close" first in the same handler. Started from a handler of its
  // own (directive), never inside the handler that asked for it. `measure` (pause-close):
  // 1.5 s after it began (the close's bound, 1 s, and a half), report "closed" with how long
  // async_close (or the destruction) took and the probe's largest timer lateness and
  // session_id() call meanwhile.
  asio::awaitable<void> close_later(std::shared_ptr<session_slot> ss, resource_client& owner, bool close, int handlers,
                                    bool measure = false) {
    for (int i = 0; i < handlers; ++i) co_await asio::post(ex, asio::use_awaitable);
    if (ss->ended || !ss->s) co_return;
    const auto began = std::chrono::steady_clock::now();
    if (measure) {
      probe_late_ns = 0;
      probe_call_ns = 0;
    }
    std::ostringstream sid;
    sid << "0x" << std::hex << ss->s->session_id();
    owner.send("close", 0, std::string(close ? "async_close" : "destroy") + " after " + std::to_string(handlers) +
                               " handlers, state " + zklock::to_string(ss->s->state()) + " session " + sid.str());
    ss->ended = true;
    if (close) {
      co_await ss->s->async_close(asio::as_tuple(asio::use_awaitable));
    } else {
      ss->el.reset();
      ss->sem.reset();
      ss->sm.reset();
      ss->m.reset();
      ss->s.reset();
    }
    if (!measure) co_return;
    const auto took = std::chrono::steady_clock::now() - began;
    asio::steady_timer t(ex, began + 1500ms);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    auto ms = [](std::int64_t ns) { return std::to_string(double(ns) / 1e6); };
    owner.send("closed", 0, std::string("how=") + (close ? "async_close" : "destroy") + " took_ms=" +
                                ms(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()) +
                                " probe=" + (probe_connected ? "1" : "0") + " probe_late_ms=" + ms(probe_late_ns) +
                                " probe_call_ms=" + ms(probe_call_ns));
  }

  // pause-close: every contender's session closed (`close_even`: the even-numbered contenders'
  // by async_close, the others' destroyed; else the other way round) at once, from this strand
  // (threads mode: not the sessions'), each reporting "close" and, later, "closed".
  void close_all(bool close_even) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      auto [ss, owner] = live[i];
      if (!ss || ss->ended || !ss->s) continue;
      asio::co_spawn(ex, close_later(ss, *owner, (i % 2 == 0) == close_even, 0, true), asio::detached);
    }
  }

  asio::awaitable<void> probe_loop() {
    auto pe = co_await asio::this_coro::executor;
    probe.emplace(pe, session_opts());
    auto [cec] = co_await probe->async_connect(
        asio::bind_cancellation_slot(probe_cancel.slot(), asio::as_tuple(asio::use_awaitable)));
    // (the report from the worker's strand: `res` is its, not this strand's)
    if (cec) asio::post(ex, [this, m = cec.message()] { res.send("note", 0, "probe session: " + m); });
    probe_connected = !cec;
    asio::steady_timer t(pe);
    auto raise = [](std::atomic<std::int64_t>& m, std::chrono::steady_clock::duration d) {
      const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
      for (std::int64_t was = m.load(); ns > was && !m.compare_exchange_weak(was, ns);) {
      }
    };
    while (!probe_stop) {
      const auto due = std::chrono::steady_clock::now() + 5ms;
      t.expires_at(due);
      co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      const auto woke = std::chrono::steady_clock::now();
      (void)probe->session_id();
      raise(probe_late_ns, woke - due);
      raise(probe_call_ns, std::chrono::steady_clock::now() - woke);
    }
    probe_connected = false;
    if (!cec) co_await probe->async_close(asio::as_tuple(asio::use_awaitable));
    probe.reset();
  }

  // Why `g` was lost: async_wait_lost's cause (it completes at once for a lost guard; 200 ms
  // allowed for a deadline the guard has not acted on yet).
  asio::awaitable<std::string> lost_cause_of(zklock::lock_guard& g) {
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer t(ex, 200ms);
    auto r = co_await (g.async_wait_lost(asio::as_tuple(asio::use_awaitable)) ||
                       t.async_wait(asio::as_tuple(asio::use_awaitable)));
    if (r.index() == 1) co_return "unknown(no lost report within 200 ms)";
    auto [ec] = std::get<0>(r);
    if (ec != zklock::errc::lock_lost) co_return "not-lost(" + ec.message() + ")";
    co_return cause_name(zklock::lock_lost_cause(ec));
  }

  // The resource refused a write: a newer holder wrote (we were paused, or our node was deleted
  // and the successor's grant reached the resource before our guard heard of it). The section
  // stops at once; the guard's loss and its cause are reported when it turns lost (up to 200 ms).
  asio::awaitable<void> rejected(zklock::lock_guard& g, resource_client& res, std::int64_t token) {
    res.send("lost", token, "rejected");
    res.send("lost_cause", token, co_await lost_cause_of(g));
  }

  // One write to the guarded znode: read the counter, set it to read + 1 behind the guard's
  // check op (a plain set_data would take any version: the check op is the only fencing), and
  // report "zkwrite" with the times. Returns false when the check op refused it (our node is gone).
  asio::awaitable<bool> znode_increment(zklock::lock_guard& g, resource_client& res, zklock::session& s, std::int64_t token) {
    const std::int64_t invoke = zklock::fault::mono_ns();
    auto [rec, data] = co_await s.async_get_data(znode(), asio::as_tuple(asio::use_awaitable));
    if (rec == zklock::zk_errc::no_node) {
      // the first write of the run: the lock's parents exist now (the acquire made them)
      co_await s.async_create(znode(), "0", zklock::create_mode::persistent, asio::as_tuple(asio::use_awaitable));
      std::tie(rec, data) = co_await s.async_get_data(znode(), asio::as_tuple(asio::use_awaitable));
    }
    if (rec) {
      report_znode(res, token, invoke, std::string("error:read"), -1, -1);  // nothing written
      co_return true;
    }
    const std::int64_t read = std::atoll(data.data.c_str());
    // (the ops built apart: GCC 12 rejects a braced list inside a co_await expression)
    std::vector<zklock::multi_op> ops;
    ops.push_back(zklock::multi_op::set_data(znode(), std::to_string(read + 1)));
    ops = g.guarded(std::move(ops));
    auto [wec, results] = co_await s.async_multi(std::move(ops), asio::as_tuple(asio::use_awaitable));
    if (!wec && results.size() == 2) {
      report_znode(res, token, invoke, std::string("ok"), read, results[1].stat.version);
      co_return true;
    }
    // the check op found our node gone: refused; any other failure (a connection loss: every
    // op's ec says so) may have committed
    const bool refused = !results.empty() && results[0].ec == zklock::zk_errc::no_node;
    report_znode(res, token, invoke, std::string(refused ? "refused" : "indeterminate"), read, -1);
    co_return !refused;
  }
  static void report_znode(resource_client& res, std::int64_t token, std::int64_t invoke, const std::string& outcome,
                           std::int64_t read, std::int64_t version) {
    res.send("zkwrite", token, "read=" + std::to_string(read) + " value=" + std::to_string(read + 1) + " version=" +
                                   std::to_string(version) + " outcome=" + outcome + " fenced=1 invoke=" + std::to_string(invoke));
  }

  // threads:N: the ordinary Asio deadline, `acquire || timer`, drawn from 1 to 10 sections'
  // length (some acquires are cancelled at each of their steps): the timer's completion cancels
  // the acquire from this strand, not the session's (another thread).
  // `passed_ms`: the deadline in ms when it ended the acquire (the timer won), else 0; the
  // acquire_error report then says "deadline=MS" (the harness's rules tell the user's own
  // deadline from an error of the library's).
  std::mt19937 deadline_rng{static_cast<unsigned>(::getpid())};
  asio::awaitable<std::tuple<boost::system::error_code, zklock::lock_guard>> acquire_with_deadline(zklock::mutex& m,
                                                                                                    int& passed_ms) {
    using namespace asio::experimental::awaitable_operators;
    const int ms = 1 + int(deadline_rng() % unsigned(10 * std::max(cfg.hold_ms, 1)));
    passed_ms = 0;
    asio::steady_timer deadline(ex, std::chrono::milliseconds(ms));
    auto r = co_await (m.async_acquire(asio::as_tuple(asio::use_awaitable)) ||
                       deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
    if (r.index() == 0) co_return std::move(std::get<0>(r));
    passed_ms = ms;
    co_return std::tuple<boost::system::error_code, zklock::lock_guard>{asio::error::timed_out, zklock::lock_guard()};
  }

  // mutant timeout-as-grant: a section with no guard (token 0), as long as a granted one.
  asio::awaitable<void> unguarded_section(resource_client& res, const std::string& side) {
    res.send("grant", 0, "(none) side=" + side + " ev=0");
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg.hold_ms);
    while (std::chrono::steady_clock::now() < until) {
      co_await sleep(10ms);
      res.send("write", 0);
    }
    res.send("end", 0);
    res.send("released", 0, "ok");
  }

  // Mutants grant-on-any-predecessor and data-change-as-grant: a lock of the worker's own on the
  // session's raw requests (an ephemeral sequential node in the lock dir, the children, exists
  // watches), with one rule broken each. Fencing token: the node's sequence number.
  static bool stopped_session(zklock::session& s) {
    auto st = s.state();
    return st == zklock::session_state::expired || st == zklock::session_state::closed;
  }
  bool own_lock() const { return mutant("grant-on-any-predecessor") || mutant("data-change-as-grant"); }
  static std::int64_t sequence_of(const std::string& name) {
    const auto at = name.rfind("-lock-");
    return at == std::string::npos ? -1 : std::atoll(name.c_str() + at + 6);
  }

  // Acquire: returns the node's path and its sequence ("" on an error or a stop, reported).
  asio::awaitable<std::pair<std::string, std::int64_t>> own_acquire(resource_client& res, zklock::session& s) {
    // the lock dir and its parents (persistent; a node that exists is fine)
    for (std::size_t at = 1; at != std::string::npos;) {
      at = cfg.path.find('/', at + 1);
      co_await s.async_create(cfg.path.substr(0, at), "", zklock::create_mode::persistent, asio::as_tuple(asio::use_awaitable));
    }
    auto [cec, created] = co_await s.async_create(cfg.path + "/_c_own-" + cfg.who + "-lock-", "",
                                                  zklock::create_mode::ephemeral_sequential, asio::as_tuple(asio::use_awaitable));
    if (cec) {
      res.send("acquire_error", 0, "'create: " + cec.message() + "'");
      co_return std::pair<std::string, std::int64_t>{};
    }
    const std::string own_path = created.path;  // a lambda captures a variable, not a structured binding (clang++ 14)
    const std::string mine = own_path.substr(own_path.rfind('/') + 1);
    const std::int64_t seq = sequence_of(mine);
    auto give_up = [&](const std::string& why) -> asio::awaitable<std::pair<std::string, std::int64_t>> {
      co_await s.async_delete(own_path, -1, asio::as_tuple(asio::use_awaitable));
      res.send("acquire_error", 0, "'" + why + "'");
      co_return std::pair<std::string, std::int64_t>{};
    };
    for (;;) {
      if (stopping) co_return co_await give_up("Operation canceled");
      auto [gec, kids] = co_await s.async_get_children(cfg.path, asio::as_tuple(asio::use_awaitable));
      if (gec) co_return co_await give_up("get_children: " + gec.message());
      std::vector<std::string> ahead;  // in queue order
      for (auto& k : kids.children)
        if (sequence_of(k) >= 0 && sequence_of(k) < seq) ahead.push_back(k);
      std::sort(ahead.begin(), ahead.end(), [](auto& x, auto& y) { return sequence_of(x) < sequence_of(y); });
      if (ahead.empty()) co_return std::pair<std::string, std::int64_t>{created.path, seq};
      // grant-on-any-predecessor watches every node ahead and takes the first deletion as the
      // grant; data-change-as-grant watches the one right ahead (as it should) and takes a
      // change of its data as the grant
      if (mutant("data-change-as-grant")) ahead.erase(ahead.begin(), ahead.end() - 1);
      std::vector<zklock::watch> ws(ahead.size());
      bool gone = false;
      for (std::size_t i = 0; i < ahead.size(); ++i) {
        auto [eec, st] = co_await s.async_exists(cfg.path + "/" + ahead[i], ws[i], asio::as_tuple(asio::use_awaitable));
        if (eec) co_return co_await give_up("exists: " + eec.message());
        if (!st) gone = true;
      }
      if (gone && mutant("grant-on-any-predecessor")) co_return std::pair<std::string, std::int64_t>{created.path, seq};
      if (gone) continue;  // look again
      // the first watch that fires (polled: a mutant's loop, not the library's)
      std::optional<zklock::watch_event> ev;
      while (!ev && !stopping && !stopped_session(s)) {
        for (auto& w : ws)
          if (w.fired()) {
            auto [wec, e] = co_await w.async_wait(asio::as_tuple(asio::use_awaitable));
            if (wec) co_return co_await give_up("watch: " + wec.message());
            ev = e;
            break;
          }
        if (!ev) co_await sleep(2ms);
      }
      if (!ev) continue;  // stopping, or the session ended (the next request says so)
      if (ev->type == zklock::watch_event_type::deleted && mutant("grant-on-any-predecessor"))
        co_return std::pair<std::string, std::int64_t>{created.path, seq};
      if (ev->type == zklock::watch_event_type::changed && mutant("data-change-as-grant"))
        co_return std::pair<std::string, std::int64_t>{created.path, seq};
    }
  }

  // A section of the own lock: as hold() (grant, a register write every 10 ms, end), and the
  // znode written behind a check op on our node back to back in between (a holder busy with its
  // resource: a second holder granted meanwhile is followed by this one's znode write before the
  // register's refusal reaches it); stops when the session is not connected or the register
  // refuses a write; then deletes its node.
  asio::awaitable<void> own_lock_section(resource_client& res, session_slot& ss) {
    zklock::session& s = *ss.s;
    res.send("acquire", 0);
    auto [node, token] = co_await own_acquire(res, s);
    if (node.empty()) {
      if (!stopping && !ss.over()) co_await sleep(100ms);
      co_return;
    }
    auto connected = [&] {
      auto st = s.state();
      return st == zklock::session_state::connected || st == zklock::session_state::reconnected;
    };
    const std::string granted = res.send("grant", token, node + " side=exclusive ev=0");
    if (ok(granted)) {
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(zklock::fault::hold_ms_of(granted, cfg.hold_ms));
      auto next_register = std::chrono::steady_clock::now() + 10ms;
      for (;;) {
        if (!connected()) {
          res.send("lost", token, "status=" + std::string(zklock::to_string(s.state())));
          break;
        }
        const bool last = std::chrono::steady_clock::now() >= until;
        if (!last) {
          const std::int64_t invoke = zklock::fault::mono_ns();
          auto [rec, data] = co_await s.async_get_data(znode(), asio::as_tuple(asio::use_awaitable));
          if (rec == zklock::zk_errc::no_node) {
            co_await s.async_create(znode(), "0", zklock::create_mode::persistent, asio::as_tuple(asio::use_awaitable));
            std::tie(rec, data) = co_await s.async_get_data(znode(), asio::as_tuple(asio::use_awaitable));
          }
          if (!rec) {
            const std::int64_t read = std::atoll(data.data.c_str());
            std::vector<zklock::multi_op> ops;
            ops.push_back(zklock::multi_op::check(node, -1));
            ops.push_back(zklock::multi_op::set_data(znode(), std::to_string(read + 1)));
            auto [wec, results] = co_await s.async_multi(std::move(ops), asio::as_tuple(asio::use_awaitable));
            const bool refused = wec && !results.empty() && results[0].ec == zklock::zk_errc::no_node;
            report_znode(res, token, invoke, !wec && results.size() == 2 ? "ok" : refused ? "refused" : "indeterminate",
                         read, !wec && results.size() == 2 ? results[1].stat.version : -1);
            if (refused) {
              res.send("lost", token, "refused by the znode's check op");
              break;
            }
          } else {
            co_await sleep(1ms);  // (a read that failed: not a busy loop)
          }
          if (std::chrono::steady_clock::now() < next_register) continue;
          next_register = std::chrono::steady_clock::now() + 10ms;
        }
        if (!ok(res.send(last ? "end" : "write", token))) {
          res.send("lost", token, "rejected");
          break;
        }
        if (last) break;
      }
    } else {
      res.send("lost", token, "rejected");
    }
    auto [dec] = co_await s.async_delete(node, -1, asio::as_tuple(asio::use_awaitable));
    res.send("released", token, dec ? "'" + dec.message() + "'" : "ok");
  }

  // One critical section; returns when it ended (normally, lost, or rejected). `ss`, `owner`:
  // the session and its owner, for the replies' directives (local-close).
  asio::awaitable<void> hold(zklock::lock_guard& g, resource_client& res, const std::shared_ptr<session_slot>& ss,
                             resource_client& owner, std::uint64_t child_events = 0) {
    const std::int64_t token = g.fencing_token();
    bool pause_before_write = false;
    bool told_lost = false;  // a mutant (ignores_loss) goes on
    // writes to the znode: a section that excludes the others (a read side or a lease does not)
    const bool exclusive = (g.kind() != zklock::lock_kind::read || mutant("read-as-write")) && cfg.recipe != "semaphore";
    // A guard may come back already past its validity deadline (e.g. granted by a watch event
    // after a wait with no request answered): it must not be used.
    if (std::chrono::steady_clock::now() >= g.valid_until()) {
      res.send("dead_grant", token, std::string("status=") + zklock::to_string(g.status()));
      co_return;
    }
    std::string reply = res.send("grant", token, g.node_path() + " side=" +
                                                     (mutant("read-as-write") ? std::string("write") : zklock::to_string(g.kind())) +
                                                     " ev=" + std::to_string(child_events));
    directive(reply, ss, owner);
    if (!ok(reply)) {
      co_await rejected(g, res, token);
      co_return;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(zklock::fault::hold_ms_of(reply, cfg.hold_ms));
    pause_before_write = reply.find(" PAUSE") != std::string::npos;
    for (;;) {
      if (!cfg.loop && terminating) break;
      asio::steady_timer t(ex, 10ms);
      co_await t.async_wait(asio::bind_cancellation_slot(g.lost_slot(), asio::as_tuple(asio::use_awaitable)));
      // The wait is over: its cancellation handler must leave the slot, or a loss after this
      // section (the session closed before the release: local-close) runs it on the destroyed
      // timer (Asio's timer leaves it installed; seen as a SIGSEGV in the guard's loss).
      g.lost_slot().clear();
      // The check a careful user makes before each write: the lock is certainly ours until
      // valid_until(); a guard that is not held has valid_until() == min().
      if (std::chrono::steady_clock::now() >= g.valid_until() && !told_lost) {
        res.send("lost", token, std::string("status=") + zklock::to_string(g.status()));
        told_lost = true;
        if (!ignores_loss()) {
          res.send("lost_cause", token, co_await lost_cause_of(g));
          co_return;
        }
      }
      // The resource may ask us to stop right here, between the check and the write, as a GC
      // pause or a VM freeze would: the write then reaches it after the pause.
      if (pause_before_write) {
        pause_before_write = false;
        ::raise(SIGSTOP);
      }
      const bool last = cfg.loop && std::chrono::steady_clock::now() >= until;
      const std::string wreply = res.send(last ? "end" : "write", token);
      directive(wreply, ss, owner);
      if (!ok(wreply) && !ignores_loss()) {
        co_await rejected(g, res, token);
        co_return;
      }
      if (last) co_return;
      // (no co_await in a && chain: GCC 12.2 runs it whatever the operands before it say)
      // Bounded by the guard's validity: a holder cut off from the servers must not wait in the
      // write past its deadline (it stops there, as before each write); the write is then
      // abandoned (reported indeterminate: it may still commit, behind the check op).
      if (exclusive && !ss->ended && ss->s) {
        using namespace asio::experimental::awaitable_operators;
        asio::steady_timer deadline(ex, g.valid_until());
        auto r = co_await (znode_increment(g, res, *ss->s, token) ||
                           deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
        const bool accepted = r.index() == 1 || std::get<0>(r);
        if (!accepted && !ignores_loss()) {
          res.send("lost", token, "refused by the znode's check op");
          res.send("lost_cause", token, co_await lost_cause_of(g));
          co_return;
        }
      }
    }
    if (!ok(res.send("end", token))) co_await rejected(g, res, token);
  }

  // This contender is idle: report it (with several, once all are), and park with the session
  // open until SIGTERM.
  asio::awaitable<void> go_idle(resource_client& mine) {
    if (cfg.contenders() == 1)
      mine.send("idle", 0);
    else if (--active == 0)
      res.send("idle", 0);
    if (!terminating) co_await parked.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  asio::awaitable<void> run() {
    active = cfg.contenders();
    std::vector<std::unique_ptr<resource_client>> mine;  // one connection per contender, when several
    if (cfg.contenders() > 1)
      for (int i = 1; i <= cfg.contenders(); ++i)
        mine.push_back(std::make_unique<resource_client>(cfg.resource_port, cfg.who + "." + std::to_string(i)));
    if (cfg.recipe == "local-queue") {
      co_await contend_local(mine);
      co_return;
    }
    int done = 0;
    asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
    for (int i = 0; i < cfg.sessions; ++i)
      asio::co_spawn(ex, contend(i, cfg.sessions == 1 ? res : *mine[i]), [&](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
        if (++done == cfg.sessions) all_done.cancel();
      });
    if (cfg.sessions > 1) asio::co_spawn(ex, user_socket_loop(), asio::detached);
    if (cfg.probe) asio::co_spawn(session_executor(), probe_loop(), asio::detached);
    co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  // A user's socket on the same io_context: a ping every 50 ms to the resource, which answers
  // at once; a reply later than 2 s is a stall (its registration lost?). Reopened every 20 pings,
  // so that it gets the descriptor numbers the sessions' reconnects free.
  asio::awaitable<void> user_socket_loop() {
    using namespace asio::experimental::awaitable_operators;
    const asio::ip::tcp::endpoint to{asio::ip::make_address("127.0.0.1"), cfg.resource_port};
    while (!stopping) {
      user_socket.emplace(ex);
      auto [cec] = co_await user_socket->async_connect(to, asio::as_tuple(asio::use_awaitable));
      if (cec) {
        if (stopping) break;
        res.send("user_socket_error", 0, "connect: " + cec.message());
        co_await sleep(100ms);
        continue;
      }
      asio::streambuf in;
      for (int n = 0; n < 20 && !stopping; ++n) {
        std::string line = "ping " + cfg.who + " 0 " + std::to_string(zklock::fault::mono_ns()) + "\n";
        auto [wec, wn] = co_await asio::async_write(*user_socket, asio::buffer(line), asio::as_tuple(asio::use_awaitable));
        if (wec) break;
        const auto sent = std::chrono::steady_clock::now();
        bool reported = false;
        boost::system::error_code rec;
        for (;;) {
          asio::steady_timer t(ex, 2s);
          auto r = co_await (asio::async_read_until(*user_socket, in, '\n', asio::as_tuple(asio::use_awaitable)) ||
                             t.async_wait(asio::as_tuple(asio::use_awaitable)));
          if (r.index() == 0) {
            rec = std::get<0>(std::get<0>(r));
            break;
          }
          if (stopping) break;
          if (!reported) {
            reported = true;
            res.send("user_socket_stall", 0, "no reply for 2000 ms (fd " + std::to_string(user_socket->native_handle()) + ")");
          }
        }
        if (reported && !rec)
          res.send("user_socket_note", 0, "reply after " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - sent).count()) + " ms");
        if (rec || stopping) break;
        in.consume(in.size());
        co_await sleep(50ms);
      }
      boost::system::error_code ignored;
      user_socket->close(ignored);
    }
  }

  // local-queue: one session and one mutex object with a local queue, `coroutines` contenders
  // on it (each reports as WHO.i on its own resource connection); a new session (and mutex)
  // once the old one ended and every contender has left it.
  asio::awaitable<void> contend_local(std::vector<std::unique_ptr<resource_client>>& mine) {
    while (!stopping) {
      auto ss = std::make_shared<session_slot>();
      ss->s.emplace(session_executor(), session_opts());
      live[0] = {ss, &res};
      if (!co_await connect_session(*ss->s, cancel_acquire[0]->slot(), res)) continue;
      zklock::mutex_options mo;
      mo.local_queue = true;
      mo.max_local_handoffs = cfg.max_local_handoffs;
      ss->m.emplace(*ss->s, cfg.path, mo);
      int done = 0;
      asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
      for (int i = 0; i < cfg.coroutines; ++i)
        asio::co_spawn(ex, contend_on(i, ss, cfg.coroutines == 1 ? res : *mine[i]), [&](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
          if (++done == cfg.coroutines) all_done.cancel();
        });
      co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
      if (stopping) {
        res.send("idle", 0);
        if (!terminating) co_await parked.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!ss->ended && ss->s) co_await ss->s->async_close(asio::as_tuple(asio::use_awaitable));
        co_return;
      }
    }
    res.send("idle", 0);
    if (!terminating) co_await parked.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  // One coroutine of a local-queue worker: acquire, hold, release on the shared mutex object
  // until told to stop or its session ends (a local-close fault's closer reports as WHO).
  asio::awaitable<void> contend_on(int index, std::shared_ptr<session_slot> ss, resource_client& mine) {
    asio::cancellation_signal& cancel = *cancel_acquire[index];
    std::mt19937 rng(std::hash<std::string>{}(cfg.who) ^ static_cast<unsigned>(::getpid()) ^ unsigned(index * 7919));
    while (!stopping) {
      if (ss->over()) co_return;
      directive(mine.send("acquire", 0), ss, res);
      auto [aec, g] =
          co_await ss->m->async_acquire(asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
      if (aec) {
        mine.send("acquire_error", 0, aec.message() == "" ? "?" : "'" + aec.message() + "'");
        if (!stopping && !ss->over()) co_await sleep(100ms);
        continue;
      }
      co_await hold(g, mine, ss, res, ss->child_events());
      if (g.owns_lock()) {
        auto [rec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        directive(mine.send("released", g.fencing_token(), rec ? "'" + rec.message() + "'" : "ok"), ss, res);
      } else {
        mine.send("released", 0, std::string("not-owned:") + zklock::to_string(g.status()));
        // A lost guard is kept while its session is suspended (its node cannot be deleted
        // before a reconnect anyway) and, once the session expired, a session timeout more, as
        // a user still busy with it would: the local waiters behind it must fail at the expiry
        // all the same, not when the guard goes (ensemble-gone).
        while (!stopping && !ss->over() && ss->s->state() == zklock::session_state::suspended) co_await sleep(50ms);
        if (!stopping && !ss->ended && ss->s && ss->s->state() == zklock::session_state::expired)
          co_await sleep(cfg.session_timeout);
        g = zklock::lock_guard();
      }
      co_await sleep(std::chrono::milliseconds(rng() % 20));
    }
  }

  asio::awaitable<void> contend(int index, resource_client& res) {
    const std::string who = cfg.sessions == 1 ? cfg.who : cfg.who + "." + std::to_string(index + 1);
    asio::cancellation_signal& cancel = *cancel_acquire[index];
    std::mt19937 rng(std::hash<std::string>{}(who) ^ static_cast<unsigned>(::getpid()));
    std::mt19937_64 mix(cfg.mix_seed + static_cast<std::uint64_t>(index));  // the read/write draws: replayed by the harness's seed
    while (!stopping) {
      auto ss = std::make_shared<session_slot>();
      ss->s.emplace(session_executor(), session_opts());
      live[std::size_t(index)] = {ss, &res};
      if (!co_await connect_session(*ss->s, cancel.slot(), res)) continue;
      // only the recipe's object
      if (cfg.recipe == "shared") ss->sm.emplace(*ss->s, cfg.path);
      else if (cfg.recipe == "semaphore") ss->sem.emplace(*ss->s, cfg.path, cfg.leases);
      else if (cfg.recipe == "election") ss->el.emplace(*ss->s, cfg.path, who);
      else {
        // mutant skip-lock-delay: lock-delay 0 while the run's (the models') is on
        zklock::mutex_options mo;
        mo.lock_delay = std::chrono::milliseconds(mutant("skip-lock-delay") ? 0 : cfg.lock_delay_ms);
        ss->m.emplace(*ss->s, cfg.path, mo);
      }
      while (!stopping) {
        if (ss->over()) break;
        if (own_lock()) {
          co_await own_lock_section(res, *ss);
          if (!cfg.loop) break;
          co_await sleep(std::chrono::milliseconds(rng() % 20));
          continue;
        }
        // mutant read-as-write: takes the read side for a section it reports (and uses) as a writer's
        const bool write_side = static_cast<int>(mix() % 100) < cfg.write_percent || mutant("read-as-write");
        directive(res.send("acquire", 0, cfg.recipe == "shared" ? (write_side ? "write" : "read") : ""), ss, res);
        // (a directive's closer runs after this handler: the objects are still there)
        auto token = asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable));
        std::tuple<boost::system::error_code, zklock::lock_guard> acquired;
        int deadline_ms = 0;  // threads mode: the `||` deadline, when it ended the acquire
        // (no co_await in the arms of ?: — GCC 12.2 runs both arms' operations: here a write
        // acquire and then a read acquire queued behind it on the same session, which waited
        // until cancelled)
        if (cfg.recipe == "shared" && write_side && !mutant("read-as-write"))
          acquired = co_await ss->sm->async_acquire(token);
        else if (cfg.recipe == "shared")
          acquired = co_await ss->sm->async_acquire_shared(token);
        else if (cfg.recipe == "semaphore" && mutant("timeout-as-grant"))
          acquired = co_await ss->sem->async_acquire_for(5ms, token);
        else if (cfg.recipe == "semaphore")
          acquired = co_await ss->sem->async_acquire(token);
        else if (cfg.recipe != "election" && cfg.threads > 1)
          acquired = co_await acquire_with_deadline(*ss->m, deadline_ms);
        else if (cfg.recipe != "election")
          acquired = co_await ss->m->async_acquire(token);
        // election: the leadership's own operations (campaign, fencing_token, valid_until,
        // lost_slot, resign); its lock_guard underneath is what hold() checks, the same calls
        zklock::leadership leading;
        if (cfg.recipe == "election") {
          auto [cec, l] = co_await ss->el->async_campaign(token);
          std::get<0>(acquired) = cec;
          leading = std::move(l);
        }
        auto& [aec, g0] = acquired;
        if (aec && mutant("timeout-as-grant") && aec != asio::error::operation_aborted && !stopping) {
          // a deadline passed: it writes as if it held a lease
          co_await unguarded_section(res, "lease");
          continue;
        }
        if (aec) {
          res.send("acquire_error", 0,
                   (deadline_ms ? "deadline=" + std::to_string(deadline_ms) + " " : std::string()) +
                       (aec.message() == "" ? "?" : "'" + aec.message() + "'"));
          if (!stopping && !ss->over()) co_await sleep(100ms);
          continue;
        }
        zklock::lock_guard& g = cfg.recipe == "election" ? leading.guard() : g0;
        if (cfg.recipe == "election" && (leading.fencing_token() != g.fencing_token() || leading.identity() != who))
          res.send("error", 0, "leadership: token or identity differs from its guard's");
        co_await hold(g, res, ss, res);
        std::string reply;
        if (cfg.recipe == "election" && leading.is_leader()) {
          auto [rec] = co_await leading.async_resign(asio::as_tuple(asio::use_awaitable));
          reply = res.send("released", leading.fencing_token(), rec ? "'" + rec.message() + "'" : "ok");
        } else if (cfg.recipe == "election") {
          res.send("released", 0, std::string("not-owned:") + zklock::to_string(leading.status()));
          leading = zklock::leadership();  // a lost leadership still deletes its node while the session lives
        } else if (g.owns_lock() && mutant("leak-release")) {
          // says it released; its node stays (the guard is kept, never released)
          reply = res.send("released", g.fencing_token(), "ok");
          leaked_guards.push_back(std::move(g));
        } else if (g.owns_lock()) {
          auto [rec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
          reply = res.send("released", g.fencing_token(), rec ? "'" + rec.message() + "'" : "ok");
        } else {
          res.send("released", 0, std::string("not-owned:") + zklock::to_string(g.status()));
          g = zklock::lock_guard();  // a lost guard still deletes its node while the session lives
        }
        directive(reply, ss, res);
        if (!cfg.loop) break;
        co_await sleep(std::chrono::milliseconds(rng() % 20));
      }
      if (stopping || !cfg.loop) {
        if (leak_child_watch && !ss->over()) {
          zklock::watch w;
          auto [gec, kids] = co_await ss->s->async_get_children(cfg.path.substr(0, cfg.path.rfind('/')), w,
                                                                asio::as_tuple(asio::use_awaitable));
          res.send("note", 0, "left a child watch behind: " + (gec ? gec.message() : std::string("set")));
          leaked.push_back(std::move(w));
        }
        co_await go_idle(res);
        if (!ss->ended && ss->s) co_await ss->s->async_close(asio::as_tuple(asio::use_awaitable));
        co_return;
      }
    }
    co_await go_idle(res);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8 || argc > 14) {
    std::cerr << "usage: zklock_fault_worker RESOURCE_PORT CONNECT PATH WHO SESSION_TIMEOUT_MS HOLD_MS loop|hold"
                 " [mutex|election|shared:WRITE_PERCENT:SEED|semaphore:N|local-queue:COROUTINES:HANDOFFS [sessions:N] [threads:N] [lockdelay:MS] [probe] [mutant:NAME]]\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  config c;
  c.resource_port = static_cast<std::uint16_t>(std::stoi(argv[1]));
  c.connect = argv[2];
  c.path = argv[3];
  c.who = argv[4];
  c.session_timeout = std::chrono::milliseconds(std::stoi(argv[5]));
  c.hold_ms = std::stoi(argv[6]);
  c.loop = std::string(argv[7]) == "loop";
  for (int i = 9; i < argc; ++i) {
    std::string opt = argv[i];
    if (opt.rfind("mutant:", 0) == 0) {
      c.mutant = opt.substr(7);
      continue;
    }
    if (opt.rfind("threads:", 0) == 0 && (c.threads = std::atoi(opt.c_str() + 8)) >= 1) continue;
    if (opt.rfind("lockdelay:", 0) == 0 && (c.lock_delay_ms = std::atoi(opt.c_str() + 10)) >= 0) continue;
    if (opt == "probe") {
      c.probe = true;
      continue;
    }
    if (opt.rfind("sessions:", 0) != 0 || (c.sessions = std::atoi(opt.c_str() + 9)) < 1) {
      std::cerr << "zklock_fault_worker: bad option '" << opt << "' (sessions:N, threads:N, lockdelay:MS, probe or mutant:NAME)\n";
      return 2;
    }
  }
  if (argc >= 9) {
    // "shared:30:1234" -> recipe shared, 30 % writes, seed 1234; "semaphore:2" -> 2 leases
    std::string spec = argv[8];
    std::vector<std::string> f;
    for (std::size_t at = 0;;) {
      auto colon = spec.find(':', at);
      f.push_back(spec.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
    c.recipe = f[0];
    if (c.recipe == "shared" && f.size() == 3) {
      c.write_percent = std::stoi(f[1]);
      c.mix_seed = std::stoull(f[2]);
    } else if (c.recipe == "semaphore" && f.size() == 2) {
      c.leases = std::stoi(f[1]);
    } else if (c.recipe == "local-queue" && f.size() == 3) {
      c.coroutines = std::max(1, std::stoi(f[1]));
      c.max_local_handoffs = std::stoi(f[2]);
    } else if ((c.recipe != "mutex" && c.recipe != "election") || f.size() != 1) {
      std::cerr << "zklock_fault_worker: bad recipe '" << spec
                << "' (mutex, election, shared:WRITE_PERCENT:SEED, semaphore:N or local-queue:COROUTINES:HANDOFFS)\n";
      return 2;
    }
  }
  // threads:N: N threads run the io_context; the worker's coroutines and its signal handlers on
  // one strand, each session on a strand of its own
  asio::io_context ioc(c.threads);
  asio::any_io_executor control = c.threads > 1 ? asio::any_io_executor(asio::make_strand(ioc)) : ioc.get_executor();
  worker w(c, control, ioc.get_executor());
  asio::signal_set sigs(ioc, SIGUSR1, SIGTERM, SIGINT);
  std::function<void(boost::system::error_code, int)> on_signal = [&](boost::system::error_code ec, int sig) {
    if (ec) return;
    w.stopping = true;
    w.probe_stop = true;
    for (auto& cancel : w.cancel_acquire) cancel->emit(asio::cancellation_type::terminal);
    w.probe_cancel.emit(asio::cancellation_type::terminal);
    if (sig != SIGUSR1) {
      w.terminating = true;
      w.parked.cancel();
    }
    if (w.user_socket) {
      boost::system::error_code ignored;
      w.user_socket->close(ignored);
    }
    sigs.async_wait(asio::bind_executor(control, on_signal));
  };
  sigs.async_wait(asio::bind_executor(control, on_signal));
  // the harness's fd-exhaust scenario
  fd_exhaustion fds;
  asio::signal_set fd_sigs(ioc, SIGRTMIN + 1, SIGRTMIN + 2);
  std::function<void(boost::system::error_code, int)> on_fd_signal = [&](boost::system::error_code ec, int sig) {
    if (ec) return;
    w.res.send("fds", 0, sig == SIGRTMIN + 1 ? fds.exhaust() : fds.restore());
    fd_sigs.async_wait(asio::bind_executor(control, on_fd_signal));
  };
  fd_sigs.async_wait(asio::bind_executor(control, on_fd_signal));
  // the harness's pause-close scenario
  asio::signal_set close_sigs(ioc, SIGRTMIN + 3, SIGRTMIN + 4);
  std::function<void(boost::system::error_code, int)> on_close_signal = [&](boost::system::error_code ec, int sig) {
    if (ec) return;
    w.close_all(sig == SIGRTMIN + 3);
    close_sigs.async_wait(asio::bind_executor(control, on_close_signal));
  };
  close_sigs.async_wait(asio::bind_executor(control, on_close_signal));
  int status = 1;
  asio::co_spawn(control, w.run(), [&](std::exception_ptr e) {
    status = 0;
    if (e) try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        std::cerr << "zklock_fault_worker " << c.who << ": " << x.what() << "\n";
        status = 1;
      }
    sigs.cancel();
    fd_sigs.cancel();
    close_sigs.cancel();
  });
  std::vector<std::thread> more;
  for (int i = 1; i < c.threads; ++i) more.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : more) t.join();
  return status;
}
