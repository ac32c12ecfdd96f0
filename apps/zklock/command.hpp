// The subcommands of zklock: each is defined in its own file by an add_<name> function that adds
// it to the command line; main.cpp (the wiring) runs the one that was parsed.
#pragma once

#include "common.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zklock_cli {

// What every subcommand shares: the options of the session, and what main found on the
// command line around the subcommand's own options.
struct cli_context {
  common_options common;
  // Numeric options are taken as text and checked after parsing, for messages that say what is
  // expected (CLI11's own are about ranges of doubles).
  std::string session_timeout = "10", connect_timeout = "10";
  std::string digest_file;
  steady::time_point started;            // zklock's start (exec --timeout counts from it)
  std::vector<std::string> after_dashes;  // everything after the first "--"
  bool has_dashes = false;                // a "--" was given
};

struct command {
  CLI::App* app = nullptr;
  bool takes_command = false;  // what follows "--" is its COMMAND (else "takes no command")
  // After parsing, before connecting: 0 to go on, else the exit status (a message said why).
  std::function<int()> check = [] { return 0; };
  // Runs the command on the io_context of `sigs` (the termination signals zklock catches).
  std::function<asio::awaitable<int>(asio::signal_set& sigs)> run;
};

// -c/--connect, --session-timeout, --connect-timeout, --digest-file, -q, -v.
void add_common(CLI::App* app, cli_context& ctx);

// "--timeout: expected a number of seconds > 0, got 'abc'"; nullopt when `text` is fine.
std::optional<std::string> parse_seconds(const std::string& name, const std::string& text, bool zero_ok, double& out);

// --semaphore N: 0, or exit_usage after saying what was expected.
int parse_leases(const std::string& text, int& out);

// A lock path as the library takes it: 0, or exit_usage after saying what is wrong.
int check_lock_path(const std::string& path);

command add_exec(CLI::App& app, cli_context& ctx);
command add_elect(CLI::App& app, cli_context& ctx);
command add_leader(CLI::App& app, cli_context& ctx);
command add_holders(CLI::App& app, cli_context& ctx);
command add_hold(CLI::App& app, cli_context& ctx);  // exec.cpp
command add_revoke(CLI::App& app, cli_context& ctx);
command add_locks(CLI::App& app, cli_context& ctx);  // locks.cpp

}  // namespace zklock_cli
