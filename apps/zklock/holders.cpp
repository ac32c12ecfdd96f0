// zklock holders: the contenders of a lock, holder first.
#include "command.hpp"
#include "session_setup.hpp"

#include <zklock/mutex.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>

namespace zklock_cli {
namespace {

asio::awaitable<int> run_holders(const common_options& co, const std::string& path, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;

  zklock::mutex lock(s, path);
  auto [ec, queue] = co_await lock.async_contenders(use_tuple);
  if (ec) {
    say(path + ": " + ec.message());
    co_return exit_error;
  }
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  int position = 0;
  for (const auto& c : queue) {
    double age = std::max<double>(0, static_cast<double>(now_ms - c.stat.ctime) / 1000.0);
    // the identity last, as one field: the rest of the line
    std::printf("%d %s 0x%" PRIx64 " %.1f %s %s\n", position++, c.node.c_str(),
                static_cast<std::uint64_t>(c.stat.ephemeral_owner), age, zklock::to_string(c.kind),
                line_field(c.identity).c_str());
  }
  std::fflush(stdout);
  co_await s.async_close(use_tuple);
  co_return 0;
}

}  // namespace

command add_holders(CLI::App& app, cli_context& ctx) {
  auto path = std::make_shared<std::string>();
  auto* holders = app.add_subcommand("holders", "List the contenders of lock PATH, holder first.");
  add_common(holders, ctx);
  holders->add_option("PATH", *path, "lock path")->required();
  holders->footer(
      "One line per contender in queue order, the holder first:\n"
      "  POSITION NODE OWNER AGE KIND IDENTITY\n"
      "POSITION: 0 for the holder, 1 for the next in line...; NODE: the lock node's name; OWNER: its\n"
      "session id (hex); AGE: seconds since it was created; KIND: exclusive, read, write (shared\n"
      "locks), candidate (elections), lease (semaphores); IDENTITY: who holds or waits (the rest of\n"
      "the line, '-' if unknown).\n"
      "Exit status: 0 (also for an empty or missing lock dir), 1 ZooKeeper error, 2 usage.");
  command c;
  c.app = holders;
  c.check = [path] { return check_lock_path(*path); };
  c.run = [path, &ctx](asio::signal_set& sigs) { return run_holders(ctx.common, *path, sigs); };
  return c;
}

}  // namespace zklock_cli
