// Scheduler failover on zklock::election: run several instances; each campaigns in the election
// /scheduler/leader with its name as identity, and the leader runs the "jobs" (one per second)
// while the others wait in the queue. Job numbers are kept in a znode, so a new leader continues
// the numbering.
//
//   scheduler_failover --connect HOSTS --name X [--session-timeout SECONDS] [--resign-after N]
//
// - The leader's work is bound to leadership::lost_slot(): when leadership is lost (session
//   expired, the leader-until deadline passed without a reply from the server) the job timer
//   is cancelled through Asio's cancellation, before anyone else can lead.
// - Each job is recorded with a guarded transaction (leadership::guarded(): a check of our
//   election node first): a leader that has lost its session cannot record a job, even if it
//   has not heard of it yet.
// - A job starts only if it can finish before leadership::valid_until() (the leader-until
//   deadline); while the connection is suspended the deadline stops moving and the leader pauses.
// - SIGTERM / Ctrl-C resigns (the next candidate leads at once, on one watch event) and exits;
//   kill -9 leaves the node until the server expires the session (session timeout + a tick).
// - After losing leadership, or after --resign-after N jobs, the instance campaigns again on
//   the same election object (it queues last).
#include <zklock/election.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace asio = boost::asio;
using zklock::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// Set on SIGINT/SIGTERM: we are resigning and closing the session on purpose, so the failures
// that follow (a read cut short, leadership reported lost) are not news.
bool stopping = false;
// The leadership being exercised, for the signal handler to resign (nullptr while campaigning).
zklock::leadership* leading = nullptr;

// How long a job may take at most (a read and a transaction): a job starts only when the
// leader-until deadline is at least this far ahead. A quarter of the session timeout: while the
// server answers, the deadline stays more than half the timeout ahead (zklock refreshes it every
// third of the timeout; the validity margin is a tenth).
std::chrono::milliseconds job_budget(const zklock::session& zk) { return zk.negotiated_timeout() / 4; }

struct config {
  std::string connect = "127.0.0.1:2181";
  std::string name;
  double session_timeout = 4;
  double interval = 1;
  int resign_after = 0;
  std::string election_path = "/scheduler/leader";
  std::string job_path = "/scheduler/last_job";
};

template <class... Args>
void say(const config& c, const char* fmt, Args... args) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  char ts[32];
  std::strftime(ts, sizeof ts, "%H:%M:%S", std::localtime(&t));
  std::printf("%s.%03d instance %s ", ts, static_cast<int>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000),
              c.name.c_str());
  std::printf(fmt, args...);
  std::printf("\n");
  std::fflush(stdout);
}

long parse_job(const std::string& s) {
  long v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

asio::awaitable<void> create_if_missing(zklock::session& zk, std::string path, std::string data) {
  auto [ec, r] = co_await zk.async_create(path, std::move(data), zklock::create_mode::persistent, use_tuple);
  if (ec && ec != zklock::zk_errc::node_exists) throw boost::system::system_error(ec, "create " + path);
}

enum class term_end { lost, resigned, stopping };

// Runs jobs while we lead. Returns when leadership is lost, after --resign-after jobs (resigned),
// or when stopping.
asio::awaitable<term_end> lead(const config& c, zklock::session& zk, zklock::leadership& l) {
  asio::steady_timer tick(co_await asio::this_coro::executor);
  auto next = std::chrono::steady_clock::now();
  bool paused = false;
  int jobs = 0;
  for (;;) {
    next += std::chrono::milliseconds(static_cast<long>(c.interval * 1000));
    tick.expires_at(next);
    // The leader's work is bound to the leadership: losing it cancels the wait at once.
    auto [ec] = co_await tick.async_wait(asio::bind_cancellation_slot(l.lost_slot(), use_tuple));
    if (stopping) co_return term_end::stopping;
    if (ec == asio::error::operation_aborted || !l.is_leader()) {
      say(c, "lost leadership: stopped running jobs");
      co_return term_end::lost;
    }
    // Start a job only if it can finish before the leader-until deadline. While the connection
    // is suspended the deadline does not move; if it comes back in time we resume. (A decision
    // taken before each job, so a look at valid_until(); work that runs on with no such points,
    // like zklock elect's command, waits on leadership::async_wait_deadline(lead) instead.)
    if (l.status() == zklock::lock_status::maybe_lost || std::chrono::steady_clock::now() + job_budget(zk) > l.valid_until()) {
      if (!paused) say(c, "connection suspended: pausing jobs until it is back (or leadership is lost)");
      paused = true;
      continue;
    }
    if (paused) say(c, "connection back: resuming jobs");
    paused = false;

    auto [gec, data] = co_await zk.async_get_data(c.job_path, use_tuple);
    if (stopping) co_return term_end::stopping;
    if (gec) {
      say(c, "cannot read %s: %s", c.job_path.c_str(), gec.message().c_str());
      continue;
    }
    long k = parse_job(data.data) + 1;
    // Record job k only while we lead (check of our election node) and nobody recorded one since.
    auto ops = l.guarded({zklock::multi_op::set_data(c.job_path, std::to_string(k), data.stat.version)});
    auto [mec, res] = co_await zk.async_multi(std::move(ops), use_tuple);
    if (stopping) co_return term_end::stopping;
    if (mec && !res.empty() && res[0].ec == zklock::zk_errc::no_node) {
      say(c, "our election node is gone: not leader any more");
      co_await l.async_resign(use_tuple);
      co_return term_end::lost;
    }
    if (mec) {
      say(c, "job %ld not recorded: %s", k, mec.message().c_str());
      continue;
    }
    say(c, "ran job %ld", k);
    if (c.resign_after > 0 && ++jobs >= c.resign_after) {
      auto [rec] = co_await l.async_resign(use_tuple);
      if (stopping) co_return term_end::stopping;
      say(c, "resigned after %d jobs%s", jobs, rec ? (": " + rec.message()).c_str() : "");
      co_return term_end::resigned;
    }
  }
}

asio::awaitable<void> run(const config& c, zklock::session& zk) {
  zklock::election election{zk, c.election_path, c.name};
  asio::steady_timer backoff(co_await asio::this_coro::executor);
  while (!stopping) {
    auto st = zk.state();
    if (!zklock::is_connected(st) && st != zklock::session_state::suspended) {
      // first start, or the session expired: a new session (the election object stays usable)
      auto [ec] = co_await zk.async_connect(use_tuple);
      if (stopping) co_return;
      if (ec) {
        say(c, "cannot connect: %s; retrying", ec.message().c_str());
        backoff.expires_after(std::chrono::seconds(1));
        co_await backoff.async_wait(use_tuple);
        continue;
      }
      say(c, "connected, session 0x%llx", static_cast<unsigned long long>(zk.session_id()));
      co_await create_if_missing(zk, "/scheduler", "");
      co_await create_if_missing(zk, c.job_path, "0");
    }
    say(c, "campaigning");
    auto [ec, l] = co_await election.async_campaign(use_tuple);
    if (stopping) co_return;
    if (ec) {
      say(c, "campaign: %s", ec.message().c_str());
      continue;  // e.g. the session expired while campaigning: reconnect above
    }
    say(c, "is the leader (fencing token %lld)", static_cast<long long>(l.fencing_token()));
    leading = &l;
    auto end = co_await lead(c, zk, l);
    leading = nullptr;
    if (end == term_end::stopping) co_return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  c.name = "pid" + std::to_string(::getpid());
  CLI::App app{"Scheduler failover: the leader of an election runs the jobs; another takes over when it resigns or dies"};
  app.add_option("--connect", c.connect, "ZooKeeper hosts")->capture_default_str();
  app.add_option("--name", c.name, "this instance's name, its identity in the election (default: pid<PID>)");
  app.add_option("--session-timeout", c.session_timeout, "session timeout in seconds: how fast a dead leader is replaced")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--interval", c.interval, "seconds between jobs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--resign-after", c.resign_after, "resign after this many jobs and campaign again (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--election,--lock", c.election_path, "election path")->capture_default_str();
  app.add_option("--job-node", c.job_path, "znode holding the last job number")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  asio::io_context ioc;  // one thread
  zklock::session zk{ioc.get_executor(),
                     {.connect = c.connect,
                      .session_timeout = std::chrono::milliseconds(static_cast<long>(c.session_timeout * 1000))}};
  int rc = 0;
  asio::co_spawn(ioc, run(c, zk), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      say(c, "error: %s", x.what());
    }
    rc = 1;
    ioc.stop();
  });
  // Ctrl-C / SIGTERM: resign (our node is deleted: the next candidate leads at once, without
  // waiting for the session timeout), then close the session.
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](error_code ec, int) {
    if (ec) return;
    say(c, "stopping");
    stopping = true;
    auto close = [&] { zk.async_close([&](error_code) { ioc.stop(); }); };
    if (leading && leading->is_leader()) return leading->async_resign([close](error_code) { close(); });
    close();
  });
  ioc.run();
  return rc;
}
