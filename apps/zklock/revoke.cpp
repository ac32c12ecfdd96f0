// zklock revoke: Curator's revocation request ("__REVOKE__") to each current holder of a lock.
#include "command.hpp"
#include "session_setup.hpp"

#include <zklock/path.hpp>
#include <zklock/revoke.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <cstdio>
#include <memory>

namespace zklock_cli {
namespace {

using namespace asio::experimental::awaitable_operators;

// force_after: seconds, 0 for none.
asio::awaitable<int> run_revoke(const common_options& co, std::string path, int max_leases,  // path: by value (a temporary at the call)
                                double force_after, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;
  zklock::revoke_options ro;
  ro.max_leases = max_leases;
  if (force_after > 0) ro.force_after = to_ms(force_after);
  // A signal while --force-after waits: nothing is deleted.
  auto r = co_await (zklock::async_revoke_holders(s, path, ro, use_tuple) || sigs.async_wait(use_tuple));
  if (r.index() == 1) {
    co_await s.async_close(use_tuple);
    co_return 128 + std::get<1>(std::get<1>(r));
  }
  auto [ec, result] = std::get<0>(std::move(r));
  const auto& nodes = result.asked;
  for (const auto& n : nodes) std::printf("%s\n", n.c_str());
  std::fflush(stdout);
  if (!co.quiet)
    for (const auto& n : result.deleted)
      say(n + ": still held " + seconds_str(force_after) + " s after the request: deleted (--force-after)");
  if (ec) say(path + ": " + ec.message());
  else if (nodes.empty() && !co.quiet) say(path + ": nobody holds the lock");
  co_await s.async_close(use_tuple);
  co_return ec ? exit_error : nodes.empty() ? exit_nobody : 0;
}

struct revoke_state {
  std::string path, semaphore, force_after;
  int leases = 1;
  double force_seconds = 0;
};

}  // namespace

command add_revoke(CLI::App& app, cli_context& ctx) {
  auto st = std::make_shared<revoke_state>();
  auto* revoke = app.add_subcommand(
      "revoke", "Ask the holder(s) of lock PATH to release it (Curator's revocation: \"__REVOKE__\" in their nodes).");
  add_common(revoke, ctx);
  revoke->add_option("--semaphore", st->semaphore,
                     "PATH is a semaphore of N leases (as exec --semaphore): ask the lease holders in PATH/leases")
      ->type_name("N");
  revoke->add_option("--force-after", st->force_after,
                     "delete the node of each holder that still holds SECONDS after the request (needs the "
                     "DELETE permission on the lock dir); its hold ends as at a session expiry: the next "
                     "waiter is granted")
      ->type_name("SECONDS");
  revoke->add_option("PATH", st->path, "lock path")->required();
  revoke->footer(
      "Writes \"__REVOKE__\" into the node of each current holder (by the lock's grant rule: the head,\n"
      "or every reader that holds) and prints each node written. Revocation is cooperative: holders\n"
      "that listen (lock_guard::async_wait_revoked, Curator's makeRevocable) decide whether to release;\n"
      "with --force-after, the nodes of those still holding after SECONDS are deleted (said on stderr).\n"
      "Exit status: 0 asked; 3 nobody holds (nothing printed, a line on stderr); 1 ZooKeeper error;\n"
      "2 usage.");
  command c;
  c.app = revoke;
  c.check = [revoke, st] {
    if (revoke->get_option("--semaphore")->count())
      if (int rc = parse_leases(st->semaphore, st->leases)) return rc;
    if (revoke->get_option("--force-after")->count())
      if (auto problem = parse_seconds("--force-after", st->force_after, false, st->force_seconds)) {
        say(*problem);
        return exit_usage;
      }
    return check_lock_path(st->path);
  };
  c.run = [revoke, st, &ctx](asio::signal_set& sigs) {
    // a semaphore's leases are in PATH/leases
    return run_revoke(ctx.common,
                      revoke->get_option("--semaphore")->count() ? zklock::join_path(st->path, "leases") : st->path,
                      st->leases, st->force_seconds, sigs);
  };
  return c;
}

}  // namespace zklock_cli
