// zklock holders: who holds lock PATH and who waits, whatever the recipe (a mutex, a shared
// lock's readers and writers, a semaphore's leases and PATH/locks queue, an election's
// candidates), from the walk `zklock locks` makes, held to PATH alone.
#include "command.hpp"
#include "locks.hpp"
#include "session_setup.hpp"

#include <zklock/lock_view.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>

namespace zklock_cli {
namespace {

struct holders_options {
  std::string path;
  bool json = false;
};

asio::awaitable<int> run_holders(const common_options& co, const holders_options& ho, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;

  locks_options lo;
  lo.root = ho.path;
  lo.depth = 0;  // PATH alone (a semaphore's leases and locks are listed with it)
  auto walk = co_await walk_locks(s, lo, sigs);
  co_await s.async_close(use_tuple);
  if (walk.signalled) co_return 128 + walk.signalled;
  auto it = std::find_if(walk.views.begin(), walk.views.end(), [&](const auto& v) { return v.path == ho.path; });
  const auto now = now_ms();
  std::string out;
  if (ho.json) {
    if (it != walk.views.end()) {
      out = view_json(*it, it->holders, now) + "\n";
    } else {  // an empty or missing lock dir
      zklock::lock_dir_view none{ho.path, zklock::lock_dir_kind::exclusive, {}, {}};
      out = view_json(none, {}, now) + "\n";
    }
  } else if (it != walk.views.end()) {
    bool semaphore = walk.semaphore_layouts.count(it->path) > 0;  // names below PATH/leases, PATH/locks
    int position = 0;
    auto line = [&](const zklock::contender& c, int pos) {
      double age = std::max<double>(0, static_cast<double>(now - c.stat.ctime) / 1000.0);
      std::string node = !semaphore ? c.node : (c.kind == zklock::lock_kind::lease ? "leases/" : "locks/") + c.node;
      char head[160];
      std::snprintf(head, sizeof head, "%d %s 0x%" PRIx64 " %.1f %s ", pos, node.c_str(),
                    static_cast<std::uint64_t>(c.stat.ephemeral_owner), age, zklock::to_string(c.kind));
      // the identity last, as one field: the rest of the line
      out += head + line_field(c.identity) + "\n";
    };
    for (const auto& c : it->holders) line(c, 0);
    for (const auto& c : it->waiters) line(c, ++position);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  co_return walk.errors ? exit_error : 0;
}

}  // namespace

command add_holders(CLI::App& app, cli_context& ctx) {
  auto o = std::make_shared<holders_options>();
  auto* holders = app.add_subcommand("holders", "List who holds lock PATH and who waits for it, holders first.");
  add_common(holders, ctx);
  holders->add_flag("--json", o->json,
                    "one JSON object {\"path\", \"kind\", \"holders\": [...], \"waiters\": [...], \"campaigning\": "
                    "[...], \"oldest_wait\"}, as each lock of `zklock locks --json`");
  holders->add_option("PATH", o->path, "lock path (a lock dir, a semaphore's path, an election's path)")->required();
  holders->footer(
      "One line per contender, the holders first, then the waiters in line:\n"
      "  POSITION NODE OWNER AGE KIND IDENTITY\n"
      "POSITION: 0 for each holder (a shared lock's readers, a semaphore's lease holders, an election's\n"
      "leader), then 1, 2... for the waiters (an election's other candidates) in queue order; NODE: the node's\n"
      "name (a semaphore's: leases/NAME or locks/NAME); OWNER: its session id (hex); AGE: seconds since it\n"
      "was created; KIND: exclusive, read, write (shared locks), candidate (elections), lease (semaphores);\n"
      "IDENTITY: who holds or waits (the rest of the line, '-' if unknown).\n"
      "Exit status: 0 (also for an empty or missing lock dir), 1 ZooKeeper error, 2 usage.");
  command c;
  c.app = holders;
  c.check = [o] { return check_lock_path(o->path); };
  c.run = [o, &ctx](asio::signal_set& sigs) { return run_holders(ctx.common, *o, sigs); };
  return c;
}

}  // namespace zklock_cli
