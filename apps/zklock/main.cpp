// zklock: run a command while holding a ZooKeeper lock or leading an election; list a lock's
// contenders (an election's candidates); print an election's leader.
//
//   zklock exec [options] PATH -- COMMAND [ARGS...]
//   zklock hold [options] PATH
//   zklock elect [options] --id NAME PATH -- COMMAND [ARGS...]
//   zklock leader [options] [--watch] PATH
//   zklock holders [options] PATH
//   zklock revoke [options] [--semaphore N] PATH
//   zklock locks [options] ROOT
//
// Everything runs on one thread: the ZooKeeper session, the lock, the child process (SIGCHLD
// through an asio::signal_set) and the forwarded signals share one io_context. The child is
// started with fork+exec (PR_SET_PDEATHSIG ties it to zklock's life).
// Exit statuses: see apps/zklock/README.md.
//
// The files: this one wires the subcommands together (each in its own file: exec.cpp for exec
// and elect, leader.cpp, holders.cpp, revoke.cpp, locks.cpp); session_setup.* connects; child.* starts
// the command and supervise.* watches it while the lock is held.
#include "child.hpp"
#include "command.hpp"
#include "session_setup.hpp"

#include <zklock/session.hpp>

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace zklock_cli;

namespace {

// The first argument that is neither an option of `app` nor an option's value: the command
// the user meant, when CLI11 found no subcommand.
std::optional<std::string> first_operand(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') return a;
    if (a.find('=') != std::string::npos || (a[1] != '-' && a.size() > 2)) continue;  // value attached
    const CLI::Option* opt = app.get_option_no_throw(a);
    if (opt && opt->get_items_expected_min() > 0) ++i;  // skips its value
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  cli_context ctx;
  ctx.started = steady::now();
  record_inherited_state();
  // stderr may be a pipe whose reader is gone: a failed write must not kill zklock (and with
  // it the command's lock).
  ::signal(SIGPIPE, SIG_IGN);

  // Everything after the first "--" is the command of `exec`, never options of zklock.
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      cli_argc = i;
      ctx.has_dashes = true;
      ctx.after_dashes.assign(argv + i + 1, argv + argc);
      break;
    }

  CLI::App app{"Distributed locks on ZooKeeper from the shell."};
  app.set_version_flag("--version", std::string("zklock ") + ZKLOCK_VERSION);
  app.require_subcommand(1);
  app.footer("Exit statuses: 0..255 the command's (exec, elect), 1 error, 2 usage, 3 nobody leads/holds "
             "(leader, revoke), 75 busy/timed out (or -E N), 76 lock lost while the command ran (or while held), "
             "77 --max-hold ran out, 126 command not executable, 127 command not found, 128+N signal N before "
             "the lock was held, 70 internal error.\n"
             "The session options (-c, --session-timeout, -q, ...) go before or after the command; "
             "given on both sides, the command's own win.");
  // CLI11's own usage errors ("--try excludes --timeout") as zklock's messages.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "zklock: " + std::string(e.what()) + " (zklock --help)\n";
  });
  // The session options before the subcommand, as etcdctl and consul take them.
  add_common(&app, ctx);

  // The subcommands, in the order --help lists them.
  const std::vector<command> commands = {
      add_exec(app, ctx),
      add_hold(app, ctx),
      add_elect(app, ctx),
      add_leader(app, ctx),
      add_holders(app, ctx),
      add_revoke(app, ctx),
      add_locks(app, ctx),
  };

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    bool none = std::none_of(commands.begin(), commands.end(), [](const command& c) { return c.app->parsed(); });
    if (e.get_exit_code() != 0 && none) {
      std::string names;
      for (const auto& c : commands) names += (names.empty() ? "" : ", ") + c.app->get_name();
      if (auto name = first_operand(app, cli_argc, argv)) {
        say("unknown command '" + *name + "' (commands: " + names + "; zklock --help)");
        return exit_usage;
      }
      if (dynamic_cast<const CLI::RequiredError*>(&e)) {
        say("a command is required: " + names + " (zklock --help)");
        return exit_usage;
      }
    }
    return app.exit(e) == 0 ? 0 : exit_usage;
  }
  const command* cmd = nullptr;
  for (const auto& c : commands)
    if (c.app->parsed()) cmd = &c;
  if (!cmd) {  // cannot happen: require_subcommand(1)
    say("internal error: no subcommand");
    return exit_internal;
  }

  auto& common = ctx.common;
  for (auto [name, text, out] : {
           std::tuple{"--session-timeout", &ctx.session_timeout, &common.session_timeout},
           std::tuple{"--connect-timeout", &ctx.connect_timeout, &common.connect_timeout},
       }) {
    if (auto problem = parse_seconds(name, *text, false, *out)) {
      say(*problem);
      return exit_usage;
    }
  }
  if (auto problem = read_digest(ctx.digest_file, common.digest)) {
    say(*problem);
    return exit_usage;
  }
  if (common.acl == "creator" && common.digest.empty()) {
    say("--acl creator: needs credentials (--digest-file or $ZKLOCK_DIGEST)");
    return exit_usage;
  }
  // An explicit --connect "" is an error, not a request for the default.
  if (!app.get_option("--connect")->count() && !cmd->app->get_option("--connect")->count())
    common.connect = default_connect();
  if (auto ec = zklock::validate_connect_string(common.connect)) {
    // (the message quotes the connect string and names its bad entry)
    say(common.connect.empty() ? "--connect: " + ec.message() : ec.message());
    return exit_usage;
  }
  if (int rc = cmd->check()) return rc;
  if (!cmd->takes_command && ctx.has_dashes) {
    say(cmd->app->get_name() + " takes no command");
    return exit_usage;
  }
  if (auto problem = unresolvable_host(common.connect)) {
    say(*problem);
    return exit_error;
  }

  int result = exit_internal;
  try {
    asio::io_context ioc;
    // Installed before anything else so that no termination signal is missed (or kills us);
    // not those the caller ignored.
    asio::signal_set sigs(ioc);
    for (int sig : termination_signals)
      if (!ignored_at_start(sig)) sigs.add(sig);
    asio::co_spawn(ioc, cmd->run(sigs), [&](std::exception_ptr e, int rc) {
      result = rc;
      if (e) {
        result = exit_internal;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          say(std::string("internal error: ") + x.what());
        }
      }
      ioc.stop();
    });
    ioc.run();
  } catch (const std::exception& x) {
    say(std::string("internal error: ") + x.what());
    return exit_internal;
  }
  std::fflush(stdout);
  return result;
}
