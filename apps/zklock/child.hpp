// The command's process: found in $PATH before connecting, started with the caller's signal
// dispositions and file descriptors, tied to zklock's life.
#pragma once

#include "common.hpp"

#include <signal.h>
#include <sys/types.h>

#include <string>
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

// Starts the command with the caller's signal dispositions and an empty mask, tied to
// zklock's life: PR_SET_PDEATHSIG kills it when zklock dies (even by SIGKILL), so that it
// never runs without the lock. Returns its pid, or -errno when it could not be executed.
pid_t spawn(const resolved_command& rc, const std::vector<std::string>& command);

// A wait status as the shell reports it: the exit status, or 128+N for a signal N.
int status_of(int wstatus);

}  // namespace zklock_cli
