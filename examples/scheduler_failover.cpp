// Scheduler failover: run several instances; the one holding the lock /scheduler/leader runs
// the "jobs" (one per second), the others wait in the lock's queue. Job numbers are kept in a
// znode, so a new leader continues the numbering. Kill the leader (kill -9): its session
// expires after the session timeout, its lock node goes with it, and the next instance in the
// queue takes over.
//
//   scheduler_failover --connect HOSTS --name X [--session-timeout SECONDS]
//
// Each job is recorded with a transaction that also checks that our lock node still exists: a
// leader whose session has expired (paused, partitioned) cannot record a job any more, even if
// it has not heard of the expiry yet. While the connection is suspended the leader pauses.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using zklock::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// Set on SIGINT/SIGTERM: the session is being closed on purpose, so the failures that follows
// (a read cut short, the lock reported lost) are not news.
bool stopping = false;

struct config {
  std::string connect = "127.0.0.1:2181";
  std::string name;
  double session_timeout = 4;
  double interval = 1;
  std::string lock_path = "/scheduler/leader";
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

// Runs jobs while we hold the lock. Returns when the lock is lost.
asio::awaitable<void> lead(const config& c, zklock::session& zk, zklock::lock_guard& guard) {
  asio::steady_timer tick(co_await asio::this_coro::executor);
  auto next = std::chrono::steady_clock::now();
  bool paused = false;
  for (;;) {
    next += std::chrono::milliseconds(static_cast<long>(c.interval * 1000));
    tick.expires_at(next);
    auto r = co_await (tick.async_wait(use_tuple) || guard.async_wait_lost(use_tuple));
    if (stopping) co_return;
    if (r.index() == 1) {
      say(c, "lost leadership (session expired): stopped running jobs");
      co_return;
    }
    if (guard.status() == zklock::lock_status::maybe_lost) {
      if (!paused) say(c, "connection suspended: pausing jobs until it is back (or the session expires)");
      paused = true;
      continue;
    }
    if (paused) say(c, "connection back: resuming jobs");
    paused = false;

    auto [gec, data] = co_await zk.async_get_data(c.job_path, use_tuple);
    if (stopping) co_return;
    if (gec) {
      say(c, "cannot read %s: %s", c.job_path.c_str(), gec.message().c_str());
      continue;
    }
    long k = parse_job(data.data) + 1;
    // Record job k only if we still hold the lock (our node exists) and nobody recorded one since.
    auto ops = guard.guarded({zklock::multi_op::set_data(c.job_path, std::to_string(k), data.stat.version)});
    auto [mec, res] = co_await zk.async_multi(std::move(ops), use_tuple);
    if (stopping) co_return;
    if (mec && !res.empty() && res[0].ec == zklock::zk_errc::no_node) {
      say(c, "our lock node is gone: not leader any more");
      co_await guard.async_release(use_tuple);
      co_return;
    }
    if (mec) {
      say(c, "job %ld not recorded: %s", k, mec.message().c_str());
      continue;
    }
    say(c, "ran job %ld", k);
  }
}

asio::awaitable<void> run(const config& c, zklock::session& zk) {
  zklock::mutex leader{zk, c.lock_path};
  asio::steady_timer backoff(co_await asio::this_coro::executor);
  while (!stopping) {
    auto st = zk.state();
    if (!zklock::is_connected(st) && st != zklock::session_state::suspended) {
      // first start, or the session expired: a new session (the mutex object stays usable)
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
    say(c, "waiting for leadership");
    auto [ec, guard] = co_await leader.async_acquire(use_tuple);
    if (stopping) co_return;
    if (ec) {
      say(c, "acquire: %s", ec.message().c_str());
      continue;  // e.g. the session expired while waiting: reconnect above
    }
    say(c, "is the leader (fencing token %lld)", static_cast<long long>(guard.fencing_token()));
    co_await lead(c, zk, guard);
  }
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  c.name = "pid" + std::to_string(::getpid());
  CLI::App app{"Scheduler failover: the holder of the lock runs the jobs; the others take over when it dies"};
  app.add_option("--connect", c.connect, "ZooKeeper hosts")->capture_default_str();
  app.add_option("--name", c.name, "this instance's name (default: pid<PID>)");
  app.add_option("--session-timeout", c.session_timeout, "session timeout in seconds: how fast a dead leader is replaced")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--interval", c.interval, "seconds between jobs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lock", c.lock_path, "leader lock path")->capture_default_str();
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
  // Ctrl-C / SIGTERM: close the session, which deletes our lock node at once: the next instance
  // takes over without waiting for the session timeout.
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](error_code ec, int) {
    if (ec) return;
    say(c, "stopping");
    stopping = true;
    zk.async_close([&](error_code) { ioc.stop(); });
  });
  ioc.run();
  return rc;
}
