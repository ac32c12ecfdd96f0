// What every part of the zklock command shares: its exit statuses, its options, its messages.
#pragma once

#include <zklock/error.hpp>

#include <boost/asio.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace zklock_cli {

namespace asio = boost::asio;
using zklock::error_code;
using steady = std::chrono::steady_clock;

// ---- exit statuses (apps/zklock/README.md) ----
constexpr int exit_error = 1;        // cannot connect, ZooKeeper error
constexpr int exit_usage = 2;        // bad command line
constexpr int exit_nobody = 3;       // leader: nobody leads; revoke: nobody holds
constexpr int exit_internal = 70;    // EX_SOFTWARE: a bug
constexpr int exit_busy = 75;        // EX_TEMPFAIL: --try found it held, --timeout ran out
constexpr int exit_lost = 76;        // the lock was lost while the command ran: it was terminated
constexpr int exit_max_hold = 77;    // --max-hold ran out: the command was terminated, the lock released
constexpr int exit_cannot_exec = 126;  // as the shell: found but not executable
constexpr int exit_not_found = 127;    // as the shell: command not found

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct common_options {
  std::string connect;
  double session_timeout = 10;
  double connect_timeout = 10;
  bool quiet = false;
  bool verbose = false;
  std::string digest;  // "user:password", from $ZKLOCK_DIGEST or --digest-file, never argv
  std::string acl;     // --acl: "open", "creator"; empty: creator with credentials, else open
};

// The command as found before connecting: a missing or non-executable command fails with
// 127/126 without queueing for the lock.
struct resolved_command {
  std::string file;  // what to execve
  int status = 0;    // 0, exit_not_found or exit_cannot_exec
  std::string error;
};

struct exec_options {
  std::string path;
  bool try_once = false;
  bool shared = false;  // the read side of a shared lock
  int semaphore = 0;    // > 0: one of this many leases of PATH
  double timeout = 0;  // 0: wait as long as needed
  double kill_grace = 5;
  double max_hold = 0;  // > 0: release (stopping the command) after this many seconds of holding
  double lock_delay = 0;  // --lock-delay: mutex_options::lock_delay (and the other recipes'), in seconds
  std::string process_tree = "auto";  // --process-tree / $ZKLOCK_PROCESS_TREE: auto, namespace, group
  int conflict_exit_code = 75;  // -E/--conflict-exit-code: the status when --try or --timeout finds it busy
  bool hold = false;  // zklock hold: no command; hold until SIGINT/SIGTERM/SIGHUP
  std::string leader_id;  // elect: campaign as this participant id (instead of taking a lock)
  bool elect() const { return !leader_id.empty(); }
  // What the command runs under, for messages: "lock" or "leadership".
  const char* held() const { return elect() ? "leadership" : "lock"; }
  std::vector<std::string> command;
  resolved_command resolved;
};

// "zklock: MESSAGE" on stderr.
void say(const std::string& s);

std::chrono::milliseconds to_ms(double seconds);

std::string seconds_str(double seconds);

// The length of the well-formed UTF-8 sequence at the start of `s`; 0 when it is not one.
std::size_t utf8_length(std::string_view s);

// Text as one field of an output line: `id` with the bytes that would break the line (control
// characters, a backslash, bytes that are not UTF-8) and those of `also` as \xNN; "-" when empty.
std::string line_field(std::string_view id, std::string_view also = {});

}  // namespace zklock_cli
