// zklock: run a command while holding a ZooKeeper lock or leading an election; list a lock's
// contenders (an election's candidates); print an election's leader.
//
//   zklock exec [options] PATH -- COMMAND [ARGS...]
//   zklock elect [options] --id NAME PATH -- COMMAND [ARGS...]
//   zklock leader [options] [--watch] PATH
//   zklock holders [options] PATH
//   zklock revoke [options] [--semaphore N] PATH
//
// Everything runs on one thread: the ZooKeeper session, the lock, the child process (SIGCHLD
// through an asio::signal_set) and the forwarded signals share one io_context. The child is
// started with fork+exec (PR_SET_PDEATHSIG ties it to zklock's life).
// Exit statuses: see apps/zklock/README.md.
#include "locks.hpp"

#include <zklock/election.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/revoke.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>

#include <dirent.h>
#include <netdb.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <variant>
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
  std::string digest;  // "user:password", from $ZKLOCK_DIGEST or --digest-file, never argv
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
  std::string leader_id;  // elect: campaign as this participant id (instead of taking a lock)
  std::vector<std::string> command;
  resolved_command resolved;
};

void say(const std::string& s) { std::fprintf(stderr, "zklock: %s\n", s.c_str()); }

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
}

std::string seconds_str(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// The C client's log
//
// By default its routine chatter while a server is unreachable (a "Connection refused" line and
// a "Delaying connection" line every few hundred ms, "Exceeded deadline by") is kept at debug
// level: zklock reports each unreachable server once in a line of its own, and counts the
// attempts for the message when it gives up. -v shows every line, -q only errors.

struct zk_log {
  zklock::log_level show = zklock::log_level::warn;
  struct server_failures {
    int attempts = 0;
    std::string reason;
    std::string last_line;  // the C client logs some failures twice
  };
  std::map<std::string, server_failures> failures;  // by "host:port"

  static std::string_view between(std::string_view m, std::string_view before, std::string_view after) {
    auto i = m.find(before);
    if (i == std::string_view::npos) return {};
    i += before.size();
    auto j = m.find(after, i);
    return j == std::string_view::npos ? std::string_view{} : m.substr(i, j - i);
  }

  void operator()(zklock::log_level level, std::string_view m) {
    while (!m.empty() && std::isspace(static_cast<unsigned char>(m.back()))) m.remove_suffix(1);
    // "Socket HOST:PORT zk retcode=-4, errno=111(Connection refused): ..."
    if (auto server = between(m, "Socket ", " zk retcode="); !server.empty()) {
      auto& f = failures[std::string(server)];
      if (f.last_line != m) {
        f.last_line = std::string(m);
        if (++f.attempts == 1 && show >= zklock::log_level::warn && show < zklock::log_level::debug)
          say(std::string(server) + ": " + std::string(between(m, "(", ")")) + " (retrying; -v shows each attempt)");
        f.reason = std::string(between(m, "(", ")"));
      }
      level = zklock::log_level::debug;
    } else if (m.find("Delaying connection after exhaustively trying") != std::string_view::npos ||
               m.find("Exceeded deadline by") != std::string_view::npos) {
      level = zklock::log_level::debug;
    }
    if (level <= show) std::fprintf(stderr, "zklock: [zookeeper] %.*s\n", static_cast<int>(m.size()), m.data());
  }

  // For the message when connecting fails: what each server answered, and how often we tried.
  std::string failure_summary() const {
    std::string r;
    for (const auto& [server, f] : failures)
      r += (r.empty() ? " (" : "; ") + server + ": " + f.reason + ", " + std::to_string(f.attempts) +
           (f.attempts == 1 ? " attempt" : " attempts");
    return r.empty() ? r : r + ")";
  }
};

zklock::session_options make_session_options(const common_options& o, const std::shared_ptr<zk_log>& log) {
  zklock::session_options so;
  so.connect = o.connect;
  so.session_timeout = to_ms(o.session_timeout);
  so.connect_timeout = to_ms(o.connect_timeout);
  so.digest_auth = o.digest;
  log->show = o.quiet ? zklock::log_level::error : o.verbose ? zklock::log_level::debug : zklock::log_level::warn;
  so.log_threshold = zklock::log_level::debug;  // zk_log filters: it needs the info lines too
  so.summarize_client_log = false;              // zk_log summarises, with counts for its messages
  so.log = [log](zklock::log_level l, std::string_view m) { (*log)(l, m); };
  return so;
}


using steady = std::chrono::steady_clock;

// Connects, racing with the termination signals and `deadline` (--timeout). Returns 0 when
// connected, else an exit status.
asio::awaitable<int> connect(zklock::session& s, asio::signal_set& sigs, const common_options& co, const zk_log& log,
                             steady::time_point deadline = steady::time_point::max()) {
  asio::steady_timer limit(s.get_executor(), deadline);
  auto r = co_await (s.async_connect(use_tuple) || sigs.async_wait(use_tuple) || limit.async_wait(use_tuple));
  if (r.index() == 1) co_return 128 + std::get<1>(std::get<1>(r));
  if (r.index() == 2) {
    say("cannot connect to " + s.options().connect + " within --timeout" + log.failure_summary());
    co_return exit_error;
  }
  if (auto [ec] = std::get<0>(r); ec) {
    say("cannot connect to " + s.options().connect + ": " + ec.message() + log.failure_summary());
    co_return exit_error;
  }
  if (auto t = s.negotiated_timeout(); t != to_ms(co.session_timeout) && !co.quiet)
    say("note: the server set the session timeout to " + seconds_str(t.count() / 1000.0) + " s (asked for " +
        seconds_str(co.session_timeout) + " s)");
  co_return 0;
}

// ---------------------------------------------------------------------------------------------
// The command line

constexpr double max_seconds = 2147483;  // the session timeout goes to the C client in int ms

// "--timeout: expected a number of seconds > 0, got 'abc'"; nullopt when `text` is fine.
std::optional<std::string> parse_seconds(const std::string& name, const std::string& text, bool zero_ok, double& out) {
  char* end = nullptr;
  double v = NAN;
  if (!text.empty() && !std::isspace(static_cast<unsigned char>(text[0]))) v = std::strtod(text.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(v) || (zero_ok ? v < 0 : v <= 0))
    return name + ": expected a number of seconds " + (zero_ok ? ">= 0" : "> 0") + ", got '" + text + "'";
  if (v > max_seconds) return name + ": at most " + std::to_string(static_cast<long>(max_seconds)) + " seconds, got '" + text + "'";
  out = v;
  return std::nullopt;
}

bool valid_host_name(std::string_view h) {
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':';
  });
}

// host:port entries of a connect string (without the chroot).
std::vector<std::string_view> connect_entries(std::string_view connect) {
  std::vector<std::string_view> r;
  std::string_view hosts = connect.substr(0, connect.find('/'));
  for (std::size_t start = 0;;) {
    auto end = hosts.find(',', start);
    r.push_back(hosts.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return r;
}

// Which part of a connect string the library rejected, for the message.
std::string connect_problem(std::string_view connect, zklock::error_code ec) {
  auto slash = connect.find('/');
  if (slash != std::string_view::npos)
    if (auto pec = zklock::validate_path(connect.substr(slash)))
      return "chroot '" + std::string(connect.substr(slash)) + "': " + pec.message();
  if (slash == 0) return "no host:port before the chroot";
  for (auto hp : connect_entries(connect)) {
    std::string e(hp);
    if (hp.empty()) return "empty host:port entry (stray ',')";
    auto colon = hp.rfind(':');
    if (colon == std::string_view::npos || (hp.front() == '[' && hp.back() == ']'))
      return "'" + e + "' has no port (expected host:port)";
    auto host = hp.substr(0, colon), port = hp.substr(colon + 1);
    if (host.empty()) return "'" + e + "' has no host";
    if (!valid_host_name(host)) return "host '" + std::string(host) + "' is not a host name or address";
    unsigned value = 0;
    auto [p, pec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || pec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535)
      return "port '" + std::string(port) + "' of '" + e + "' is not a number in 1..65535";
  }
  return ec.message();
}

// The C client reports a host it cannot resolve as errno ENOENT ("No such file or
// directory"), after a log line: resolve them first, for a message that names the host.
std::optional<std::string> unresolvable_host(std::string_view connect) {
  for (auto hp : connect_entries(connect)) {
    std::string host(hp.substr(0, hp.rfind(':')));
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0)
      return "cannot resolve host '" + host + "'" + (connect_entries(connect).size() > 1 ? " of '" + std::string(connect) + "'" : std::string()) +
             ": " + (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
  }
  return std::nullopt;
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

asio::awaitable<int> run_exec(const common_options& co, const exec_options& o, asio::signal_set& sigs,
                              steady::time_point started) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  // --timeout bounds the time from zklock's start to the command's: connecting and queueing.
  const auto deadline = o.timeout > 0 ? started + to_ms(o.timeout) : steady::time_point::max();
  if (int rc = co_await connect(s, sigs, co, *log, deadline)) co_return rc;

  // Acquire, racing with the termination signals and --timeout. When zklock gives up it closes
  // the session, which removes our node: no separate delete to wait for (and none that could
  // hang while ZooKeeper is unreachable: the node then goes with the session's expiry).
  struct acquire_state {
    explicit acquire_state(asio::any_io_executor ex) : done(ex) {}
    std::optional<std::tuple<error_code, zklock::lock_guard>> result;
    asio::steady_timer done;  // cancelled when the result is in
  };
  auto st = std::make_shared<acquire_state>(ex);
  auto on_acquired = [st](error_code ec, zklock::lock_guard g) {
    st->result.emplace(ec, std::move(g));
    st->done.cancel();
  };
  // (the lock objects may go: a pending acquire keeps what it needs)
  if (!o.leader_id.empty()) {
    // elect: the leadership's guard is supervised like a lock's
    zklock::election e(s, o.path, o.leader_id);
    e.async_campaign([on_acquired](error_code ec, zklock::leadership l) mutable {
      on_acquired(ec, std::move(l.guard()));
    });
  } else if (o.semaphore > 0) {
    zklock::semaphore m(s, o.path, o.semaphore);
    if (o.try_once)
      m.async_try_acquire(std::move(on_acquired));
    else
      m.async_acquire(std::move(on_acquired));
  } else if (o.shared) {
    zklock::shared_mutex m(s, o.path);
    if (o.try_once)
      m.async_try_acquire_shared(std::move(on_acquired));
    else
      m.async_acquire_shared(std::move(on_acquired));
  } else {
    zklock::mutex m(s, o.path);
    if (o.try_once)
      m.async_try_acquire(std::move(on_acquired));
    else
      m.async_acquire(std::move(on_acquired));
  }

  // --try waits for one answer, for at most a session timeout.
  const auto give_up = o.try_once ? steady::now() + s.negotiated_timeout() : deadline;
  std::optional<int> signalled;
  while (!st->result && !signalled && steady::now() < give_up) {
    st->done.expires_at(give_up);
    auto r = co_await (st->done.async_wait(use_tuple) || sigs.async_wait(use_tuple));
    if (r.index() == 1) signalled = std::get<1>(std::get<1>(r));
  }
  if (signalled || !st->result) {
    co_await s.async_close(use_tuple);  // also when a guard came in after all
    if (signalled) co_return 128 + *signalled;
    if (o.try_once) {
      say(o.path + ": no answer from ZooKeeper (unreachable?): giving up");
      co_return exit_error;
    }
    say(o.path + ": not acquired within " + seconds_str(o.timeout) + " s");
    co_return exit_busy;
  }
  auto [aec, guard] = std::move(*st->result);
  if (aec) {
    co_await s.async_close(use_tuple);
    if (aec == zklock::errc::lock_busy) {
      say(o.path + ": held by another contender");
      co_return exit_busy;
    }
    say(o.path + ": cannot acquire: " + aec.message());
    co_return exit_error;
  }

  // The command learns which hold it runs under (the fencing token is for its writes).
  ::setenv("ZKLOCK_PATH", o.path.c_str(), 1);
  ::setenv("ZKLOCK_NODE", guard.node_path().c_str(), 1);
  ::setenv("ZKLOCK_FENCING_TOKEN", std::to_string(guard.fencing_token()).c_str(), 1);
  if (!o.leader_id.empty()) ::setenv("ZKLOCK_LEADER_ID", o.leader_id.c_str(), 1);

  sigs.add(SIGCHLD);  // before the child exists: its exit cannot be missed
  pid_t pid = spawn(o.resolved, o.command);
  if (pid < 0) {
    say(o.command[0] + ": " + std::strerror(-pid));
    co_await s.async_close(use_tuple);  // removes our node
    co_return -pid == ENOENT ? exit_not_found : exit_cannot_exec;
  }

  // Run: forward signals, reap the child, and stop it before the lock can be lost. The lock's
  // validity deadline (the server cannot expire our session before it) is kept ahead by the
  // library while ZooKeeper answers. If it answers no more, async_wait_deadline(grace)
  // completes `grace` before the deadline: the command gets SIGTERM then, and SIGKILL when the
  // guard turns lost (at the deadline), so it is gone before any successor can be granted; a
  // reply that moves the deadline on meanwhile spares it. The grace is at most 2/5 of the
  // session timeout (a healthy session keeps the deadline more than half a timeout ahead).
  // A loss seen first (the session expired, our node deleted) gets SIGTERM and, after
  // --kill-grace, SIGKILL.
  const auto grace = std::min<std::chrono::milliseconds>(to_ms(o.kill_grace), s.negotiated_timeout() * 2 / 5);
  enum class watch {
    deadline,   // the deadline is far: wait for it to come within the grace (or a loss)
    loss,       // SIGTERM sent grace before the deadline: SIGKILL when the guard turns lost
    kill_timer, // SIGTERM sent on a loss: SIGKILL after --kill-grace
    none,       // SIGKILL sent (or nothing to watch): only signals and the child's exit
  } next = watch::deadline;
  bool lost = false;  // the command was terminated for the lock's sake: exit 76
  std::optional<int> wstatus;
  asio::steady_timer kill_timer(ex);
  auto sigkill = [&] {
    say("pid " + std::to_string(pid) + " still running at the deadline: SIGKILL");
    ::kill(pid, SIGKILL);
    next = watch::none;
  };
  while (!wstatus) {
    // index 0: a signal; index 1: what `next` watches
    std::variant<std::tuple<error_code, int>, std::tuple<error_code>> ev;
    switch (next) {
      case watch::deadline:
        ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_deadline(grace, use_tuple));
        break;
      case watch::loss:
        ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_lost(use_tuple));
        break;
      case watch::kill_timer:
        ev = co_await (sigs.async_wait(use_tuple) || kill_timer.async_wait(use_tuple));
        break;
      case watch::none:
        ev.emplace<0>(co_await sigs.async_wait(use_tuple));
        break;
    }
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
    if (next == watch::loss || next == watch::kill_timer) {
      sigkill();
    } else if (!ec) {
      lost = true;
      char left[32];
      std::snprintf(left, sizeof left, "%.2f",
                    std::max(0.0, std::chrono::duration<double>(guard.valid_until() - steady::now()).count()));
      say(o.path + ": no reply from ZooKeeper: the lock may be lost in " + left +
          " s (its validity deadline): terminating pid " + std::to_string(pid) + ", SIGKILL at the deadline");
      ::kill(pid, SIGTERM);
      next = watch::loss;
    } else if (ec == zklock::errc::lock_lost) {
      lost = true;
      say(o.path + ": lock lost (" +
          (s.state() == zklock::session_state::expired || s.state() == zklock::session_state::closed
               ? std::string("session expired")
               : std::string("no reply from ZooKeeper before its validity deadline, or our node was deleted")) +
          ") while the command ran: terminating pid " + std::to_string(pid));
      ::kill(pid, SIGTERM);
      kill_timer.expires_after(to_ms(o.kill_grace));
      next = watch::kill_timer;
    } else {  // cannot happen: we hold the lock until the child exits
      say(o.path + ": unexpected end of the lock's supervision: " + ec.message());
      next = watch::none;
    }
  }

  int code = status_of(*wstatus);
  if (lost || guard.status() == zklock::lock_status::lost) {
    if (!lost) say(o.path + ": lock lost (session expired) while the command ran");
    code = exit_lost;
  } else if (guard.status() == zklock::lock_status::held && zklock::is_connected(s.state())) {
    // Closing the session (below) deletes our node: the next contender gets the lock from
    // that, without a separate delete to wait for.
  } else {
    // Release, but wait no longer than a session timeout: with ZooKeeper unreachable the
    // release would wait for a reconnection; the session's expiry removes the node anyway.
    bool was_suspended = guard.status() == zklock::lock_status::maybe_lost;
    struct release_state {
      std::optional<error_code> result;
      asio::steady_timer timer;
    };
    auto rs = std::make_shared<release_state>(release_state{{}, asio::steady_timer(ex, s.negotiated_timeout())});
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
  // The identity last, as one field: the rest of the line ("-": none); bytes that would
  // break the line (control characters, a backslash) as \xNN.
  auto identity_field = [](const std::string& id) {
    if (id.empty()) return std::string("-");
    std::string r;
    for (unsigned char ch : id) {
      if (ch < 0x20 || ch == 0x7f || ch == '\\') {
        char esc[5];
        std::snprintf(esc, sizeof esc, "\\x%02x", ch);
        r += esc;
      } else {
        r += static_cast<char>(ch);
      }
    }
    return r;
  };
  int position = 0;
  for (const auto& c : queue) {
    double age = std::max<double>(0, static_cast<double>(now_ms - c.stat.ctime) / 1000.0);
    std::printf("%d %s 0x%" PRIx64 " %.1f %s %s\n", position++, c.node.c_str(),
                static_cast<std::uint64_t>(c.stat.ephemeral_owner), age, zklock::to_string(c.kind),
                identity_field(c.identity).c_str());
  }
  std::fflush(stdout);
  co_await s.async_close(use_tuple);
  co_return 0;
}

// ---------------------------------------------------------------------------------------------
// zklock revoke: Curator's revocation request ("__REVOKE__") to each current holder of PATH

asio::awaitable<int> run_revoke(const common_options& co, std::string path, int max_leases,  // path: by value (a temporary at the call)
                                asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;
  auto [ec, nodes] = co_await zklock::async_revoke_holders(s, path, max_leases, use_tuple);
  for (const auto& n : nodes) std::printf("%s\n", n.c_str());
  std::fflush(stdout);
  if (ec) say(path + ": " + ec.message());
  co_await s.async_close(use_tuple);
  co_return ec || nodes.empty() ? exit_error : 0;
}

// ---------------------------------------------------------------------------------------------
// zklock leader

asio::awaitable<int> run_leader(const common_options& co, const std::string& path, bool watch,
                                asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;
  zklock::election e(s, path, {});  // an observer: never campaigns
  auto print = [](const std::optional<zklock::leader_info>& l) {
    std::printf("%s\n", l ? l->identity.c_str() : "-");
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
    co_await s.async_close(use_tuple);
    co_return leader ? 0 : exit_error;
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

asio::awaitable<int> run_locks_command(const common_options& co, const zklock_cli::locks_options& o, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;
  int rc = co_await zklock_cli::run_locks(s, o, sigs);
  co_await s.async_close(use_tuple);
  co_return rc;
}

std::string default_connect() {
  const char* env = std::getenv("ZKLOCK_CONNECT");
  return env && *env ? env : "127.0.0.1:2181";
}

// Numeric options are taken as text and checked after parsing, for messages that say what is
// expected (CLI11's own are about ranges of doubles).
struct option_texts {
  std::string session_timeout = "10", connect_timeout = "10", timeout, kill_grace = "5";
  std::string digest_file;
  std::string semaphore;
};

// Digest credentials from --digest-file (first line) or $ZKLOCK_DIGEST, which is then removed
// from the environment: the command does not inherit the password.
std::optional<std::string> read_digest(const std::string& file, std::string& digest) {
  std::string source = "$ZKLOCK_DIGEST";
  if (!file.empty()) {
    source = "--digest-file " + file;
    std::FILE* f = std::fopen(file.c_str(), "r");
    if (!f) return source + ": " + std::strerror(errno);
    char buf[1024] = {};
    if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
    std::fclose(f);
    digest = buf;
    while (!digest.empty() && (digest.back() == '\n' || digest.back() == '\r')) digest.pop_back();
  } else if (const char* env = std::getenv("ZKLOCK_DIGEST")) {
    digest = env;
  }
  ::unsetenv("ZKLOCK_DIGEST");
  if (!digest.empty() && (digest.find(':') == std::string::npos || digest.front() == ':'))
    return source + ": expected USER:PASSWORD";
  return std::nullopt;
}

void add_common(CLI::App* app, common_options& o, option_texts& t) {
  app->add_option("-c,--connect", o.connect, "ZooKeeper hosts: host:port[,host:port...][/chroot]")
      ->default_str("$ZKLOCK_CONNECT, else 127.0.0.1:2181");
  app->add_option("--session-timeout", t.session_timeout,
                  "ZooKeeper session timeout in seconds (the server clamps it to [2, 20] ticks; "
                  "zklock says so when it does)")
      ->type_name("SECONDS")
      ->capture_default_str();
  app->add_option("--connect-timeout", t.connect_timeout, "give up connecting after this many seconds")
      ->type_name("SECONDS")
      ->capture_default_str();
  app->add_option("--digest-file", t.digest_file,
                  "read digest credentials USER:PASSWORD from this file (else $ZKLOCK_DIGEST); "
                  "never on the command line, where other users can read them")
      ->type_name("PATH");
  auto* quiet = app->add_flag("-q,--quiet", o.quiet, "only errors");
  app->add_flag("-v,--verbose", o.verbose, "all of the ZooKeeper client's log")->excludes(quiet);
}

}  // namespace

int main(int argc, char** argv) {
  const auto started = steady::now();
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
  option_texts texts;
  auto* exec = app.add_subcommand(
      "exec", "Run COMMAND while holding the lock PATH: zklock exec [OPTIONS] PATH -- COMMAND [ARGS...]");
  add_common(exec, common, texts);
  auto* try_opt = exec->add_flag("--try", eo.try_once, "fail at once (status 75) if the lock is held");
  exec->add_flag("--shared", eo.shared,
                 "take the read side of a shared (read/write) lock on PATH: commands run with --shared "
                 "run together; plain ones (and Curator/kazoo write locks) run alone");
  exec->add_option("--semaphore", texts.semaphore,
                   "take one of N leases of PATH (zklock::semaphore, Curator's InterProcessSemaphoreV2 "
                   "layout: PATH/locks, PATH/leases): at most N commands run at once")
      ->type_name("N")
      ->excludes("--shared");
  exec->add_option("--timeout", texts.timeout,
                   "give up if the command has not started SECONDS after zklock did (connecting and "
                   "waiting for the lock): status 75 (1 if ZooKeeper was not reached); > 0, use --try "
                   "not to wait")
      ->type_name("SECONDS")
      ->excludes(try_opt);
  exec->add_option("--kill-grace", texts.kill_grace,
                   "SECONDS between SIGTERM and SIGKILL to the command when the lock may be lost "
                   "(before the validity deadline: at most 2/5 of the session timeout)")
      ->type_name("SECONDS")
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

  exec_options elo;  // elect: exec's options, with the participant id
  auto* elect = app.add_subcommand(
      "elect", "Run COMMAND while leading the election PATH: zklock elect [OPTIONS] --id NAME PATH -- COMMAND [ARGS...]");
  add_common(elect, common, texts);
  elect->add_option("--id", elo.leader_id, "participant id (the node's data; Curator LeaderLatch's id)")->required();
  elect->add_option("--timeout", texts.timeout,
                    "give up if the command has not started SECONDS after zklock did (connecting and "
                    "campaigning): status 75")
      ->type_name("SECONDS");
  elect->add_option("--kill-grace", texts.kill_grace,
                    "SECONDS between SIGTERM and SIGKILL to the command when leadership may be lost "
                    "(before the leader-until deadline: at most 2/5 of the session timeout)")
      ->type_name("SECONDS")
      ->capture_default_str();
  elect->add_option("PATH", elo.path, "election path (Curator LeaderLatch's latch path)")->required();
  elect->add_option("COMMAND", elo.command, "command and arguments (after --)");
  elect->footer(
      "Campaigns as NAME; once leading, runs the command with ZKLOCK_LEADER_ID, ZKLOCK_FENCING_TOKEN,\n"
      "ZKLOCK_PATH and ZKLOCK_NODE in its environment, and resigns when it exits.\n"
      "Exit status: the command's (128+N if killed by signal N); 1 ZooKeeper error; 2 usage;\n"
      "75 timed out (--timeout); 76 leadership lost while the command ran (it was terminated:\n"
      "SIGTERM, SIGKILL after --kill-grace, before anyone else can lead); 126/127; 70.");

  std::string leader_path;
  bool leader_watch = false;
  auto* leader = app.add_subcommand("leader", "Print the leader of election PATH.");
  add_common(leader, common, texts);
  leader->add_flag("--watch", leader_watch, "print the leader, then a line per change ('-': no leader) until interrupted");
  leader->add_option("PATH", leader_path, "election path")->required();
  leader->footer("Prints the leader's id. Exit status: 0, 1 no leader (nothing printed) or ZooKeeper error, 2 usage.");

  std::string holders_path;
  auto* holders = app.add_subcommand("holders", "List the contenders of lock PATH, holder first.");
  add_common(holders, common, texts);
  holders->add_option("PATH", holders_path, "lock path")->required();
  holders->footer(
      "One line per contender in queue order: POSITION (0 = holder) NODE OWNER_SESSION AGE_SECONDS.\n"
      "Exit status: 0 (also for an empty or missing lock dir), 1 ZooKeeper error, 2 usage.");

  std::string revoke_path, revoke_semaphore;
  auto* revoke = app.add_subcommand(
      "revoke", "Ask the holder(s) of lock PATH to release it (Curator's revocation: \"__REVOKE__\" in their nodes).");
  add_common(revoke, common, texts);
  revoke->add_option("--semaphore", revoke_semaphore,
                     "PATH is a semaphore of N leases (as exec --semaphore): ask the lease holders in PATH/leases")
      ->type_name("N");
  revoke->add_option("PATH", revoke_path, "lock path")->required();
  revoke->footer(
      "Writes \"__REVOKE__\" into the node of each current holder (by the lock's grant rule: the head,\n"
      "or every reader that holds) and prints each node written. Revocation is cooperative: holders\n"
      "that listen (lock_guard::async_wait_revoked, Curator's makeRevocable) decide whether to release.\n"
      "Exit status: 0 asked, 1 nobody holds (nothing printed) or ZooKeeper error, 2 usage.");

  zklock_cli::locks_options locks_opts;
  std::string locks_depth, locks_limit, locks_older;
  auto* locks = app.add_subcommand("locks", "List every lock under ROOT: holders, waiters, deadlocks.");
  add_common(locks, common, texts);
  locks->add_option("--depth", locks_depth, "levels below ROOT to walk")->type_name("N");
  locks->add_option("--limit", locks_limit, "directories to list at most")->type_name("N");
  locks->add_option("--older-than", locks_older, "only holders held longer than SECONDS")->type_name("SECONDS");
  locks->add_flag("--json", locks_opts.json, "one JSON object {\"locks\": [...], \"deadlocks\": [...]}");
  locks->add_option("ROOT", locks_opts.root, "where to look")->required();

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : exit_usage;
  }
  // elect runs exec's code with a participant id
  if (elect->parsed()) {
    eo = std::move(elo);
    if (eo.leader_id.empty()) {
      say("--id: expected a participant id, got ''");
      return exit_usage;
    }
  }
  auto* run_sub = exec->parsed() ? exec : elect->parsed() ? elect : nullptr;
  for (auto [name, text, zero_ok, out] : {
           std::tuple{"--session-timeout", &texts.session_timeout, false, &common.session_timeout},
           std::tuple{"--connect-timeout", &texts.connect_timeout, false, &common.connect_timeout},
           std::tuple{"--timeout", &texts.timeout, false, &eo.timeout},
           std::tuple{"--kill-grace", &texts.kill_grace, true, &eo.kill_grace},
       }) {
    if (name == std::string_view("--timeout") && (!run_sub || !run_sub->get_option("--timeout")->count())) continue;
    if (auto problem = parse_seconds(name, *text, zero_ok, *out)) {
      say(*problem);
      return exit_usage;
    }
  }
  if (exec->get_option("--semaphore")->count()) {
    const auto& t = texts.semaphore;
    auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), eo.semaphore);
    if (err != std::errc() || end != t.data() + t.size() || eo.semaphore < 1) {
      say("--semaphore: expected a whole number of leases >= 1, got '" + t + "'");
      return exit_usage;
    }
  }
  if (auto problem = read_digest(texts.digest_file, common.digest)) {
    say(*problem);
    return exit_usage;
  }
  // An explicit --connect "" is an error, not a request for the default.
  int revoke_leases = 1;
  if (revoke->parsed() && revoke->get_option("--semaphore")->count()) {
    const auto& t = revoke_semaphore;
    auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), revoke_leases);
    if (err != std::errc() || end != t.data() + t.size() || revoke_leases < 1) {
      say("--semaphore: expected a whole number of leases >= 1, got '" + t + "'");
      return exit_usage;
    }
  }
  if (locks->parsed()) {
    locks_opts.verbose = common.verbose;
    if (auto problem = zklock_cli::parse_locks_options(locks_depth, locks_limit, locks_older, locks_opts)) {
      say(*problem);
      return exit_usage;
    }
    if (auto ec = zklock::validate_path(locks_opts.root)) {
      say("bad path '" + locks_opts.root + "': " + ec.message());
      return exit_usage;
    }
  }
  auto* sub = run_sub ? run_sub : locks->parsed() ? locks : leader->parsed() ? leader : revoke->parsed() ? revoke : holders;
  if (!sub->get_option("--connect")->count()) common.connect = default_connect();
  if (auto ec = zklock::validate_connect_string(common.connect)) {
    if (common.connect.empty())
      say("--connect: " + ec.message());
    else
      say("bad connect string '" + common.connect + "': " + connect_problem(common.connect, ec));
    return exit_usage;
  }
  const std::string& path = run_sub ? eo.path : leader->parsed() ? leader_path : revoke->parsed() ? revoke_path : holders_path;
  if (auto ec = zklock::validate_lock_path(path); ec && !locks->parsed()) {
    say("bad lock path '" + path + "': " + ec.message());
    return exit_usage;
  }
  if (run_sub) {
    eo.command.insert(eo.command.end(), after_dashes.begin(), after_dashes.end());
    if (eo.command.empty()) {
      say(exec->parsed() ? "exec: no COMMAND (usage: zklock exec [OPTIONS] PATH -- COMMAND [ARGS...])"
                         : "elect: no COMMAND (usage: zklock elect [OPTIONS] --id NAME PATH -- COMMAND [ARGS...])");
      return exit_usage;
    }
    eo.resolved = resolve_command(eo.command[0]);
    if (eo.resolved.status) {
      say(eo.resolved.error);
      return eo.resolved.status;
    }
  } else if (cli_argc != argc) {
    say(std::string(leader->parsed() ? "leader" : revoke->parsed() ? "revoke" : "holders") + " takes no command");
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
      if (!ignored_at_start[sig]) sigs.add(sig);
    auto task = locks->parsed()    ? run_locks_command(common, locks_opts, sigs)
                : run_sub          ? run_exec(common, eo, sigs, started)
                : leader->parsed() ? run_leader(common, leader_path, leader_watch, sigs)
                : revoke->parsed() ? run_revoke(common,
                                                // a semaphore's leases are in PATH/leases
                                                revoke->get_option("--semaphore")->count() ? zklock::join_path(revoke_path, "leases") : revoke_path,
                                                revoke_leases, sigs)
                                   : run_holders(common, holders_path, sigs);
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
