// zklock leader: the leader of an election, once or at each change.
#include "command.hpp"
#include "session_setup.hpp"

#include <zklock/election.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <cstdio>
#include <memory>
#include <optional>

#include <chrono>
#include <ctime>

namespace zklock_cli {
namespace {

using namespace asio::experimental::awaitable_operators;

asio::awaitable<int> run_leader(const common_options& co, const std::string& path, bool watch,
                                asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;
  zklock::election e(s, path, {});  // an observer: never campaigns
  // --watch: "TIME LEADER", TIME when zklock saw it (UTC, ISO 8601 with milliseconds)
  auto print = [](const std::optional<zklock::leader_info>& l) {
    auto now = std::chrono::system_clock::now();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char stamp[40];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::printf("%s.%03dZ %s\n", stamp, static_cast<int>(ms % 1000), l ? l->identity.c_str() : "-");
    std::fflush(stdout);
  };
  auto [ec, leader] = co_await e.async_leader(use_tuple);
  if (ec) {
    say(path + ": " + ec.message());
    co_await s.async_close(use_tuple);
    co_return exit_error;
  }
  if (!watch) {
    if (leader) std::printf("%s\n", leader->identity.c_str());
    else if (!co.quiet) say(path + ": nobody leads");
    co_await s.async_close(use_tuple);
    co_return leader ? 0 : exit_nobody;
  }
  // --watch: the current leader ("-": none), then a line per change, until interrupted.
  print(leader);
  for (;;) {
    auto r = co_await (e.async_observe(leader, use_tuple) || sigs.async_wait(use_tuple));
    if (r.index() == 1) break;
    auto [oec, now] = std::get<0>(r);
    if (oec) {
      say(path + ": " + oec.message());
      co_await s.async_close(use_tuple);
      co_return exit_error;
    }
    print(now);
    leader = std::move(now);
  }
  co_await s.async_close(use_tuple);
  co_return 0;
}

struct leader_state {
  std::string path;
  bool watch = false;
};

}  // namespace

command add_leader(CLI::App& app, cli_context& ctx) {
  auto st = std::make_shared<leader_state>();
  auto* leader = app.add_subcommand("leader", "Print the leader of election PATH.");
  add_common(leader, ctx);
  leader->add_flag("--watch", st->watch,
                   "print the leader, then a line per change, each as TIME LEADER (TIME: when zklock saw it, UTC, "
                   "2026-12-01T20:41:03.125Z; LEADER '-': nobody leads) until interrupted");
  leader->add_option("PATH", st->path, "election path")->required();
  leader->footer(
      "Prints the leader's id. Exit status: 0; 3 nobody leads (nothing printed, a line on stderr);\n"
      "1 ZooKeeper error; 2 usage. With --watch: 0 when interrupted.");
  command c;
  c.app = leader;
  c.check = [st] { return check_lock_path(st->path); };
  c.run = [st, &ctx](asio::signal_set& sigs) { return run_leader(ctx.common, st->path, st->watch, sigs); };
  return c;
}

}  // namespace zklock_cli
