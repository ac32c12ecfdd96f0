// zklock: run a command while holding a ZooKeeper lock; list a lock's contenders.
//
//   zklock exec [options] PATH -- COMMAND [ARGS...]
//   zklock holders [options] PATH
//
// Everything runs on one thread: the ZooKeeper session, the lock, the child process (SIGCHLD
// through an asio::signal_set) and the forwarded signals share one io_context. The child is
// started with fork+exec (PR_SET_PDEATHSIG ties it to zklock's life).
// Exit statuses: see apps/zklock/README.md.
#include <zklock/detail/lock_fsm.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

extern char** environ;

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using zklock::error_code;

namespace {

// ---- exit statuses (apps/zklock/README.md) ----
constexpr int exit_error = 1;        // cannot connect, ZooKeeper error
constexpr int exit_usage = 2;        // bad command line
constexpr int exit_internal = 70;    // EX_SOFTWARE: a bug
constexpr int exit_busy = 75;        // EX_TEMPFAIL: --try found it held, --timeout ran out
constexpr int exit_lost = 76;        // the lock was lost while the command ran: it was terminated
constexpr int exit_cannot_exec = 126;  // as the shell: found but not executable
constexpr int exit_not_found = 127;    // as the shell: command not found

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct common_options {
  std::string connect;
  double session_timeout = 10;
  double connect_timeout = 10;
  bool quiet = false;
  bool verbose = false;
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
  double timeout = 0;  // 0: wait as long as needed
  double kill_grace = 5;
  std::vector<std::string> command;
  resolved_command resolved;
};

void say(const std::string& s) { std::fprintf(stderr, "zklock: %s\n", s.c_str()); }

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
}

zklock::session_options make_session_options(const common_options& o) {
  zklock::session_options so;
  so.connect = o.connect;
  so.session_timeout = to_ms(o.session_timeout);
  so.connect_timeout = to_ms(o.connect_timeout);
  so.log_threshold = o.quiet ? zklock::log_level::error : o.verbose ? zklock::log_level::debug : zklock::log_level::warn;
  so.log = [threshold = so.log_threshold](zklock::log_level l, std::string_view m) {
    if (l <= threshold) std::fprintf(stderr, "zklock: [zookeeper] %.*s\n", static_cast<int>(m.size()), m.data());
  };
  return so;
}

// Connects, racing with the termination signals. Returns 0 when connected, else an exit status.
asio::awaitable<int> connect(zklock::session& s, asio::signal_set& sigs) {
  auto r = co_await (s.async_connect(use_tuple) || sigs.async_wait(use_tuple));
  if (r.index() == 1) co_return 128 + std::get<1>(std::get<1>(r));
  if (auto [ec] = std::get<0>(r); ec) {
    say("cannot connect to " + s.options().connect + ": " + ec.message());
    co_return exit_error;
  }
  co_return 0;
}

// ---------------------------------------------------------------------------------------------
// Child process

// File descriptors open when zklock started: they are the caller's and the command inherits
// them. Descriptors zklock opens (the ZooKeeper socket, the reactor's) are kept from it.
std::set<int> inherited_fds;

std::vector<int> open_fds() {
  std::vector<int> fds;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    int self = ::dirfd(d);
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = std::atoi(e->d_name);
      if (fd != self) fds.push_back(fd);
    }
    ::closedir(d);
  }
  return fds;
}

void close_on_exec_own_fds() {
  for (int fd : open_fds())
    if (!inherited_fds.count(fd)) ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

// Signal dispositions zklock started with. A signal the caller ignored (nohup, a background
// job's SIGINT) stays ignored: zklock neither catches nor forwards it, and the command inherits
// SIG_IGN, as with flock(1).
constexpr int termination_signals[] = {SIGINT, SIGTERM, SIGHUP};
bool ignored_at_start[NSIG] = {};

void record_inherited_dispositions() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0) ignored_at_start[sig] = old.sa_handler == SIG_IGN;
  }
}

// Searches $PATH as execvp does (default "/bin:/usr/bin"; an empty entry is the current dir).
resolved_command resolve_command(const std::string& name) {
  auto check = [](const std::string& file) -> int {  // 0, or errno
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (::access(file.c_str(), X_OK) != 0) return errno;
    return 0;
  };
  if (name.empty()) return {{}, exit_not_found, "'': command not found"};
  if (name.find('/') != std::string::npos) {
    int e = check(name);
    if (e == 0) return {name, 0, {}};
    return {{}, e == ENOENT || e == ENOTDIR ? exit_not_found : exit_cannot_exec, name + ": " + std::strerror(e)};
  }
  const char* env = std::getenv("PATH");
  std::string search = env ? env : "/bin:/usr/bin";
  int denied = 0;
  std::size_t start = 0;
  for (;;) {
    auto end = search.find(':', start);
    std::string dir = search.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string file = (dir.empty() ? std::string(".") : dir) + "/" + name;
    int e = check(file);
    if (e == 0) return {file, 0, {}};
    if (e == EACCES || e == EISDIR) denied = e;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (denied) return {{}, exit_cannot_exec, name + ": " + std::strerror(denied)};
  return {{}, exit_not_found, name + ": command not found"};
}

// Starts the command with the caller's signal dispositions and an empty mask, tied to
// zklock's life: PR_SET_PDEATHSIG kills it when zklock dies (even by SIGKILL), so that it
// never runs without the lock. Returns its pid, or -errno when it could not be executed.
pid_t spawn(const resolved_command& rc, const std::vector<std::string>& command) {
  close_on_exec_own_fds();
  // Everything the child needs is prepared here: between fork and exec it makes only
  // async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // As execvp: a file without a #! line (ENOEXEC) runs under /bin/sh.
  std::string sh = "/bin/sh";
  std::vector<char*> sh_argv{sh.data(), const_cast<char*>(rc.file.c_str())};
  sh_argv.insert(sh_argv.end(), argv.begin() + 1, argv.end());
  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) return -errno;

  sigset_t all, old, none;
  ::sigfillset(&all);
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &all, &old);  // no handler of ours runs in the child
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(errpipe[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // zklock may have died before prctl: its death signal is then never sent.
    if (::getppid() != parent) ::_exit(128 + SIGKILL);
    // Caught signals revert to SIG_DFL at exec by themselves; SIGPIPE was ignored by us.
    ::signal(SIGPIPE, ignored_at_start[SIGPIPE] ? SIG_IGN : SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(rc.file.c_str(), argv.data(), environ);
    if (errno == ENOEXEC) ::execve(sh.c_str(), sh_argv.data(), environ);
    int e = errno;
    (void)!::write(errpipe[1], &e, sizeof e);
    ::_exit(exit_cannot_exec);
  }
  int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(errpipe[1]);
  if (pid < 0) {
    ::close(errpipe[0]);
    return -fork_errno;
  }
  int e = 0;
  ssize_t n;
  do n = ::read(errpipe[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  ::close(errpipe[0]);
  if (n == sizeof e) {  // exec failed: reap the child now
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return -e;
  }
  return pid;
}

int status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return exit_internal;
}

// ---------------------------------------------------------------------------------------------
// zklock exec

asio::awaitable<int> run_exec(const common_options& co, const exec_options& o, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  zklock::session s(ex, make_session_options(co));
  if (int rc = co_await connect(s, sigs)) co_return rc;

  // Acquire, racing with the termination signals: a signal cancels the acquire (which removes
  // our node) and zklock exits as the signal would have made it. The acquire's completion is
  // waited for with a bound: its cleanup (after a cancellation or the timeout) needs ZooKeeper,
  // and when ZooKeeper is unreachable the node goes with the session's expiry anyway.
  zklock::mutex m(s, o.path);
  struct acquire_state {
    explicit acquire_state(asio::any_io_executor ex) : done(ex) {}
    asio::cancellation_signal cancel;
    std::optional<std::tuple<error_code, zklock::lock_guard>> result;
    asio::steady_timer done;  // cancelled when the result is in
  };
  auto st = std::make_shared<acquire_state>(ex);
  auto on_acquired = asio::bind_cancellation_slot(st->cancel.slot(), [st](error_code ec, zklock::lock_guard g) {
    st->result.emplace(ec, std::move(g));
    st->done.cancel();
  });
  if (o.try_once)
    m.async_try_acquire(std::move(on_acquired));
  else if (o.timeout > 0)
    m.async_acquire_for(to_ms(o.timeout), std::move(on_acquired));
  else
    m.async_acquire(std::move(on_acquired));

  using steady = std::chrono::steady_clock;
  const auto grace = to_ms(co.session_timeout);
  auto deadline = o.try_once ? steady::now() + grace
                  : o.timeout > 0 ? steady::now() + to_ms(o.timeout) + grace
                                  : steady::time_point::max();
  std::optional<int> signalled;
  while (!st->result) {
    st->done.expires_at(deadline);
    if (!signalled) {
      auto r = co_await (st->done.async_wait(use_tuple) || sigs.async_wait(use_tuple));
      if (r.index() == 1) {
        signalled = std::get<1>(std::get<1>(r));
        st->cancel.emit(asio::cancellation_type::terminal);
        deadline = steady::now() + grace;
        continue;
      }
    } else {
      co_await st->done.async_wait(use_tuple);
    }
    if (!st->result && steady::now() >= deadline) break;
  }
  if (signalled) {
    co_await s.async_close(use_tuple);  // also when a guard came in after all
    co_return 128 + *signalled;
  }
  if (!st->result) {
    st->cancel.emit(asio::cancellation_type::terminal);
    say(o.path + ": no answer from ZooKeeper (unreachable?): giving up");
    co_return o.try_once ? exit_error : exit_busy;
  }
  auto [aec, guard] = std::move(*st->result);
  if (aec) {
    co_await s.async_close(use_tuple);
    if (aec == zklock::errc::lock_busy) {
      say(o.path + ": held by another contender");
      co_return exit_busy;
    }
    if (aec == zklock::errc::lock_timeout) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", o.timeout);
      say(o.path + ": not acquired within " + buf + " s");
      co_return exit_busy;
    }
    say(o.path + ": cannot acquire: " + aec.message());
    co_return exit_error;
  }

  // The command learns which hold it runs under (the fencing token is for its writes).
  ::setenv("ZKLOCK_PATH", o.path.c_str(), 1);
  ::setenv("ZKLOCK_NODE", guard.node_path().c_str(), 1);
  ::setenv("ZKLOCK_FENCING_TOKEN", std::to_string(guard.fencing_token()).c_str(), 1);

  sigs.add(SIGCHLD);  // before the child exists: its exit cannot be missed
  pid_t pid = spawn(o.resolved, o.command);
  if (pid < 0) {
    say(o.command[0] + ": " + std::strerror(-pid));
    co_await guard.async_release(use_tuple);
    co_await s.async_close(use_tuple);
    co_return -pid == ENOENT ? exit_not_found : exit_cannot_exec;
  }

  // Run: forward signals, reap the child, and terminate it if the lock is lost.
  bool lost = false, watch_lost = true;
  std::optional<int> wstatus;
  asio::steady_timer kill_timer(ex);
  while (!wstatus) {
    std::variant<std::tuple<error_code, int>, std::tuple<error_code>> ev;
    if (lost)
      ev = co_await (sigs.async_wait(use_tuple) || kill_timer.async_wait(use_tuple));
    else if (watch_lost)
      ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_lost(use_tuple));
    else
      ev.emplace<0>(co_await sigs.async_wait(use_tuple));
    if (ev.index() == 0) {
      auto [ec, sig] = std::get<0>(ev);
      if (ec) throw boost::system::system_error(ec, "signal wait");
      if (sig == SIGCHLD) {
        int st = 0;
        pid_t r = ::waitpid(pid, &st, WNOHANG);
        if (r == pid) wstatus = st;  // else a stop/continue notification
      } else {
        ::kill(pid, sig);
      }
      continue;
    }
    auto [ec] = std::get<1>(ev);
    if (!lost) {
      if (ec != zklock::errc::lock_lost) {  // cannot happen: we hold the lock until the child exits
        say(o.path + ": unexpected end of the lock-lost wait: " + ec.message());
        watch_lost = false;
        continue;
      }
      lost = true;
      say(o.path + ": lock lost (session expired) while the command ran: terminating pid " + std::to_string(pid));
      ::kill(pid, SIGTERM);
      kill_timer.expires_after(to_ms(o.kill_grace));
    } else if (!ec) {
      say("pid " + std::to_string(pid) + " still running after --kill-grace: SIGKILL");
      ::kill(pid, SIGKILL);
      kill_timer.expires_at(asio::steady_timer::time_point::max());
    }
  }

  int code = status_of(*wstatus);
  if (lost || guard.status() == zklock::lock_status::lost) {
    if (!lost) say(o.path + ": lock lost (session expired) while the command ran");
    code = exit_lost;
  } else {
    // Release, but wait no longer than a session timeout: with ZooKeeper unreachable the
    // release would wait for a reconnection; the session's expiry removes the node anyway.
    bool was_suspended = guard.status() == zklock::lock_status::maybe_lost;
    struct release_state {
      std::optional<error_code> result;
      asio::steady_timer timer;
    };
    auto rs = std::make_shared<release_state>(release_state{{}, asio::steady_timer(ex, to_ms(co.session_timeout))});
    guard.async_release([rs](error_code ec) {
      rs->result = ec;
      rs->timer.cancel();
    });
    co_await rs->timer.async_wait(use_tuple);
    if (!rs->result || *rs->result == zklock::errc::release_pending) {
      say(o.path + ": release not confirmed within the session timeout (ZooKeeper unreachable?): "
                   "the lock node goes when the session expires");
    } else if (*rs->result == zklock::errc::lock_lost && was_suspended) {
      // The connection was down when the command ended and the session has expired since:
      // the command may have run past the loss.
      say(o.path + ": lock lost (session expired) while the connection was down");
      code = exit_lost;
    } else if (*rs->result) {
      say(o.path + ": release: " + rs->result->message());
    }
  }
  co_await s.async_close(use_tuple);
  co_return code;
}

// ---------------------------------------------------------------------------------------------
// zklock holders

asio::awaitable<int> run_holders(const common_options& co, const std::string& path, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  zklock::session s(ex, make_session_options(co));
  if (int rc = co_await connect(s, sigs)) co_return rc;

  auto [ec, children] = co_await s.async_get_children(path, use_tuple);
  if (ec == zklock::zk_errc::no_node) co_return 0;
  if (ec) {
    say(path + ": " + ec.message());
    co_return exit_error;
  }
  auto queue = zklock::detail::queue_order(children.children);
  if (queue.empty()) co_return 0;

  // One round trip for all the stats.
  using exists_op = decltype(s.async_exists(std::string{}, asio::deferred));
  std::vector<exists_op> ops;
  for (const auto& c : queue) ops.push_back(s.async_exists(zklock::join_path(path, c.name), asio::deferred));
  auto [order, ecs, stats] = co_await asio::experimental::make_parallel_group(std::move(ops))
                                 .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  (void)order;
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  int position = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (ecs[i]) {
      say(zklock::join_path(path, queue[i].name) + ": " + ecs[i].message());
      co_return exit_error;
    }
    if (!stats[i]) continue;  // gone since the listing
    double age = std::max<double>(0, static_cast<double>(now_ms - stats[i]->ctime) / 1000.0);
    std::printf("%d %s 0x%" PRIx64 " %.1f\n", position++, queue[i].name.c_str(),
                static_cast<std::uint64_t>(stats[i]->ephemeral_owner), age);
  }
  std::fflush(stdout);
  co_await s.async_close(use_tuple);
  co_return 0;
}

std::string default_connect() {
  const char* env = std::getenv("ZKLOCK_CONNECT");
  return env && *env ? env : "127.0.0.1:2181";
}

void add_common(CLI::App* app, common_options& o) {
  app->add_option("-c,--connect", o.connect, "ZooKeeper hosts: host:port[,host:port...][/chroot]")
      ->default_str("$ZKLOCK_CONNECT, else 127.0.0.1:2181");
  app->add_option("--session-timeout", o.session_timeout,
                  "ZooKeeper session timeout in seconds (the server clamps it to [2, 20] ticks)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--connect-timeout", o.connect_timeout, "give up connecting after this many seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* quiet = app->add_flag("-q,--quiet", o.quiet, "only errors from the ZooKeeper client's log");
  app->add_flag("-v,--verbose", o.verbose, "all of the ZooKeeper client's log")->excludes(quiet);
}

}  // namespace

int main(int argc, char** argv) {
  for (int fd : open_fds()) inherited_fds.insert(fd);
  record_inherited_dispositions();
  // stderr may be a pipe whose reader is gone: a failed write must not kill zklock (and with
  // it the command's lock).
  ::signal(SIGPIPE, SIG_IGN);

  // Everything after the first "--" is the command of `exec`, never options of zklock.
  std::vector<std::string> after_dashes;
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      cli_argc = i;
      after_dashes.assign(argv + i + 1, argv + argc);
      break;
    }

  CLI::App app{"Distributed locks on ZooKeeper from the shell."};
  app.set_version_flag("--version", std::string("zklock ") + ZKLOCK_VERSION);
  app.require_subcommand(1);
  app.footer("Exit statuses: 0..255 the command's (exec), 1 error, 2 usage, 75 busy/timed out, "
             "76 lock lost while the command ran, 70 internal error.");

  common_options common;
  exec_options eo;
  auto* exec = app.add_subcommand(
      "exec", "Run COMMAND while holding the lock PATH: zklock exec [OPTIONS] PATH -- COMMAND [ARGS...]");
  add_common(exec, common);
  auto* try_opt = exec->add_flag("--try", eo.try_once, "fail at once (status 75) if the lock is held");
  exec->add_option("--timeout", eo.timeout, "give up (status 75) if not acquired within SECONDS")
      ->check(CLI::PositiveNumber)
      ->excludes(try_opt);
  exec->add_option("--kill-grace", eo.kill_grace,
                   "when the lock is lost: SECONDS between SIGTERM and SIGKILL to the command")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  exec->add_option("PATH", eo.path, "lock path (the lock dir in ZooKeeper)")->required();
  exec->add_option("COMMAND", eo.command, "command and arguments (after --)");
  exec->footer(
      "The command runs with ZKLOCK_PATH, ZKLOCK_NODE and ZKLOCK_FENCING_TOKEN in its environment.\n"
      "SIGINT, SIGTERM and SIGHUP are passed to it; the lock is released when it exits.\n"
      "Exit status: the command's (128+N if killed by signal N); 1 ZooKeeper error; 2 usage;\n"
      "75 busy (--try) or timed out (--timeout); 76 lock lost while the command ran (it was\n"
      "terminated: SIGTERM, SIGKILL after --kill-grace); 126/127 command not executable/found;\n"
      "70 internal error.");

  std::string holders_path;
  auto* holders = app.add_subcommand("holders", "List the contenders of lock PATH, holder first.");
  add_common(holders, common);
  holders->add_option("PATH", holders_path, "lock path")->required();
  holders->footer(
      "One line per contender in queue order: POSITION (0 = holder) NODE OWNER_SESSION AGE_SECONDS.\n"
      "Exit status: 0 (also for an empty or missing lock dir), 1 ZooKeeper error, 2 usage.");

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : exit_usage;
  }
  if (common.connect.empty()) common.connect = default_connect();
  if (auto ec = zklock::validate_connect_string(common.connect)) {
    say("bad connect string '" + common.connect + "': " + ec.message());
    return exit_usage;
  }
  const std::string& path = exec->parsed() ? eo.path : holders_path;
  if (auto ec = zklock::validate_path(path); ec || path == "/") {
    say("bad lock path '" + path + "': " + (ec ? ec.message() : "the root cannot be a lock"));
    return exit_usage;
  }
  if (exec->parsed()) {
    eo.command.insert(eo.command.end(), after_dashes.begin(), after_dashes.end());
    if (eo.command.empty()) {
      say("exec: no COMMAND (usage: zklock exec [OPTIONS] PATH -- COMMAND [ARGS...])");
      return exit_usage;
    }
    eo.resolved = resolve_command(eo.command[0]);
    if (eo.resolved.status) {
      say(eo.resolved.error);
      return eo.resolved.status;
    }
  } else if (cli_argc != argc) {
    say("holders takes no command");
    return exit_usage;
  }

  int result = exit_internal;
  try {
    asio::io_context ioc;
    // Installed before anything else so that no termination signal is missed (or kills us);
    // not those the caller ignored.
    asio::signal_set sigs(ioc);
    for (int sig : termination_signals)
      if (!ignored_at_start[sig]) sigs.add(sig);
    auto task = exec->parsed() ? run_exec(common, eo, sigs) : run_holders(common, holders_path, sigs);
    asio::co_spawn(ioc, std::move(task), [&](std::exception_ptr e, int rc) {
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
