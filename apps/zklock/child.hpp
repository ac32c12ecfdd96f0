// The command's process: found in $PATH before connecting, started with the caller's signal
// dispositions and file descriptors, tied to zklock's life.
#pragma once

#include "common.hpp"

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock_cli {

// Signals zklock passes on to the command (and that end a wait for the lock).
inline constexpr int termination_signals[] = {SIGINT, SIGTERM, SIGHUP};

// Records what zklock started with: its open file descriptors (the caller's: the command
// inherits them) and the dispositions of the termination signals and SIGPIPE. Called first.
void record_inherited_state();

// Whether `sig` was ignored when zklock started (nohup, a background job's SIGINT): such a
// signal stays ignored, zklock neither catches nor forwards it, and the command inherits SIG_IGN.
bool ignored_at_start(int sig);

// Searches $PATH as execvp does (default "/bin:/usr/bin"; an empty entry is the current dir).
resolved_command resolve_command(const std::string& name);

// How the command's whole process tree (what it starts in the background too) is stopped with
// the lock (--process-tree, $ZKLOCK_PROCESS_TREE).
enum class tree_mode {
  automatic,      // a PID namespace where the kernel allows one, else a process group
  pid_namespace,  // its own PID namespace, our init first: the kernel kills the rest with it
  process_group,  // a process group, zklock the subreaper: zklock kills every descendant
};
const char* to_string(tree_mode m);
std::optional<tree_mode> parse_tree_mode(std::string_view s);

struct started_command {
  pid_t pid = -1;  // what zklock signals and waits for: our init (PID namespace) or the command
  tree_mode mode = tree_mode::process_group;  // what is in use
  bool group = false;       // process_group: the command leads a group of its own (pid)
  int error = 0;            // pid -1: errno (of exec, or of setting up `mode`)
  bool setup_failed = false;  // pid -1: the namespace or the group could not be set up
  std::string note;         // automatic: why the PID namespace is not used
};

// Starts the command with the caller's signal dispositions and an empty mask, tied to
// zklock's life: PR_SET_PDEATHSIG kills it (in a PID namespace: our init, and with it the
// whole namespace) when zklock dies, even by SIGKILL, so that it never runs without the lock.
started_command spawn(const resolved_command& rc, const std::vector<std::string>& command, tree_mode mode);

// Process-group mode: `sig` to every descendant of zklock (one pass, nothing reaped).
void signal_descendants(int sig);
// Process-group mode, once the command has been reaped: SIGKILL to every descendant of
// zklock, reaping the orphans, until none is left.
void kill_descendants();

// A wait status as the shell reports it: the exit status, or 128+N for a signal N.
int status_of(int wstatus);

}  // namespace zklock_cli
