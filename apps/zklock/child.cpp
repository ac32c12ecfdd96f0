#include "child.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

extern char** environ;

namespace zklock_cli {
namespace {

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

// Signal dispositions zklock started with (see ignored_at_start).
bool ignored_at_start_[NSIG] = {};

}  // namespace

void record_inherited_state() {
  for (int fd : open_fds()) inherited_fds.insert(fd);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0) ignored_at_start_[sig] = old.sa_handler == SIG_IGN;
  }
}

bool ignored_at_start(int sig) { return sig > 0 && sig < NSIG && ignored_at_start_[sig]; }

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

namespace {

// What a child reports through the exec pipe before it dies: which step failed and errno.
struct child_failure {
  int step = 0;  // step_exec, step_namespace
  int error = 0;
};
constexpr int step_exec = 1;       // execve of the command
constexpr int step_namespace = 2;  // setting up the PID (and user) namespace

// Everything a child needs, prepared before it exists: between fork and exec it makes only
// async-signal-safe calls (zklock has threads: the ZooKeeper client's).
struct exec_plan {
  std::vector<char*> argv, sh_argv;
  std::string file, sh = "/bin/sh";
  std::vector<int> own_fds;  // zklock's descriptors: our init closes them (it never execs)
  std::string uid_map, gid_map;  // a user namespace's maps ("ID ID 1": the caller's own ids)
  int errpipe[2] = {-1, -1};
  int lifeline[2] = {-1, -1};  // the write end stays open in zklock only: EOF means zklock is gone
};

void report(int fd, int step, int error) {
  child_failure f{step, error};
  (void)!::write(fd, &f, sizeof f);
}

// The command's own process: the caller's signal dispositions, an empty mask, then exec.
[[noreturn]] void exec_command(const exec_plan& p, const bool (&ignored)[NSIG]) {
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, ignored[sig] ? SIG_IGN : SIG_DFL);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(p.file.c_str(), p.argv.data(), environ);
  if (errno == ENOEXEC) ::execve(p.sh.c_str(), p.sh_argv.data(), environ);
  report(p.errpipe[1], step_exec, errno);
  ::_exit(exit_cannot_exec);
}

// A fork without glibc's fork handlers: the other threads' locks may be held in this copy.
pid_t raw_fork(unsigned long flags = 0) {
  return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
}

bool write_file(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

void no_op_handler(int) {}

// Our init: the first process of the command's PID namespace. When it exits the kernel kills
// every process left in the namespace, and zklock's wait for it returns only after that. It
// starts the command, passes on the signals zklock (or anyone outside) sends it, reaps the
// orphans that the namespace gives it, and exits with the command's status (128+N for a
// signal N, as zklock reports it). A namespace's first process gets no signal it has no
// handler for: it has handlers, and takes the signals with sigwaitinfo (all stay blocked).
[[noreturn]] void run_init(const exec_plan& p, bool user_namespace) {
  ::close(p.errpipe[0]);
  ::close(p.lifeline[1]);
  if (user_namespace && !(write_file("/proc/self/setgroups", "deny") && write_file("/proc/self/uid_map", p.uid_map) &&
                          write_file("/proc/self/gid_map", p.gid_map))) {
    report(p.errpipe[1], step_namespace, errno);
    ::_exit(exit_internal);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // zklock may have died before prctl: its death signal is then never sent.
  pollfd alive{p.lifeline[0], POLLIN, 0};
  if (::poll(&alive, 1, 0) != 0) ::_exit(128 + SIGKILL);
  ::close(p.lifeline[0]);
  for (int fd : p.own_fds)
    if (fd != p.errpipe[1]) ::close(fd);

  bool ignored[NSIG] = {};
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD) continue;
    struct sigaction sa {}, old {};
    sa.sa_handler = no_op_handler;
    ::sigemptyset(&sa.sa_mask);
    if (::sigaction(sig, &sa, &old) == 0) ignored[sig] = old.sa_handler == SIG_IGN;
  }
  // zklock ignores SIGPIPE for itself: the command gets the disposition zklock started with.
  ignored[SIGPIPE] = ignored_at_start_[SIGPIPE];
  const pid_t command = raw_fork();
  if (command == 0) exec_command(p, ignored);
  if (command < 0) {
    report(p.errpipe[1], step_exec, errno);
    ::_exit(exit_cannot_exec);
  }
  ::close(p.errpipe[1]);
  sigset_t all;
  ::sigfillset(&all);
  for (;;) {
    siginfo_t info{};
    int sig = ::sigwaitinfo(&all, &info);
    if (sig < 0) continue;
    if (sig == SIGCHLD) {
      int st = 0;
      for (pid_t r; (r = ::waitpid(-1, &st, WNOHANG)) > 0;)
        if (r == command) ::_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    } else if (info.si_code != SI_KERNEL) {
      // A terminal's signals (SI_KERNEL) reach the command directly: it is in our process group.
      ::kill(command, sig);
    }
  }
}

exec_plan make_plan(const resolved_command& rc, const std::vector<std::string>& command) {
  exec_plan p;
  p.file = rc.file;
  for (const auto& a : command) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  // As execvp: a file without a #! line (ENOEXEC) runs under /bin/sh.
  p.sh_argv = {p.sh.data(), const_cast<char*>(p.file.c_str())};
  p.sh_argv.insert(p.sh_argv.end(), p.argv.begin() + 1, p.argv.end());
  p.uid_map = std::to_string(::geteuid()) + " " + std::to_string(::geteuid()) + " 1";
  p.gid_map = std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1";
  return p;
}

// Reads the exec pipe to its end (the command exec'd, or the child died): the failure, if any.
child_failure read_failure(int fd) {
  child_failure f;
  ssize_t n;
  do n = ::read(fd, &f, sizeof f);
  while (n < 0 && errno == EINTR);
  ::close(fd);
  return n == sizeof f ? f : child_failure{};
}

void reap(pid_t pid) {
  int st;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
}

// The namespace way: clone our init into a new PID namespace (and a new user namespace when
// zklock is not root: creating a PID namespace needs CAP_SYS_ADMIN, which a user namespace
// gives). A started_command with pid -1 and the reason when the kernel refused.
started_command spawn_in_namespace(exec_plan& p) {
  const bool user_namespace = ::geteuid() != 0;
  started_command r;
  r.mode = tree_mode::pid_namespace;
  if (::pipe2(p.errpipe, O_CLOEXEC) != 0 || ::pipe2(p.lifeline, O_CLOEXEC) != 0) {
    r.error = errno;
    r.setup_failed = true;
    return r;
  }
  for (int fd : open_fds())
    if (!inherited_fds.count(fd)) p.own_fds.push_back(fd);
  sigset_t all, old;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);  // no handler of ours runs in the child
  pid_t pid = raw_fork(CLONE_NEWPID | (user_namespace ? CLONE_NEWUSER : 0));
  if (pid == 0) run_init(p, user_namespace);
  int clone_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(p.errpipe[1]);
  ::close(p.lifeline[0]);  // the write end stays open while zklock lives
  if (pid < 0) {
    ::close(p.errpipe[0]);
    ::close(p.lifeline[1]);
    r.error = clone_errno;
    r.setup_failed = true;
    r.note = std::string("the kernel refused a new PID namespace") + (user_namespace ? " in a user namespace" : "") +
             ": " + std::strerror(clone_errno);
    return r;
  }
  auto f = read_failure(p.errpipe[0]);
  if (f.step) {
    reap(pid);
    ::close(p.lifeline[1]);
    r.error = f.error;
    r.setup_failed = f.step == step_namespace;
    if (r.setup_failed) r.note = std::string("cannot map our user into the new user namespace: ") + std::strerror(f.error);
    return r;
  }
  r.pid = pid;
  return r;
}

// The fallback: the command leads a process group of its own, zklock is the subreaper of its
// descendants (those that leave the group or double-fork stay ours), and kill_descendants
// finds them all.
started_command spawn_in_group(exec_plan& p) {
  started_command r;
  r.mode = tree_mode::process_group;
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 || ::pipe2(p.errpipe, O_CLOEXEC) != 0) {
    r.error = errno;
    r.setup_failed = true;
    return r;
  }
  // In a terminal's foreground the command stays in our group: a group of its own would be in
  // the background there (stopped by SIGTTIN when it reads the terminal).
  const bool foreground = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  sigset_t all, old;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p.errpipe[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // zklock may have died before prctl: its death signal is then never sent.
    if (::getppid() != parent) ::_exit(128 + SIGKILL);
    if (!foreground) ::setpgid(0, 0);
    bool ignored[NSIG] = {};
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction old_sa {};
      if (::sigaction(sig, nullptr, &old_sa) == 0) ignored[sig] = old_sa.sa_handler == SIG_IGN;
    }
    ignored[SIGPIPE] = ignored_at_start_[SIGPIPE];
    exec_command(p, ignored);
  }
  int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(p.errpipe[1]);
  if (pid < 0) {
    ::close(p.errpipe[0]);
    r.error = fork_errno;
    return r;
  }
  if (!foreground) ::setpgid(pid, pid);  // also here: whichever runs first
  auto f = read_failure(p.errpipe[0]);
  if (f.step) {
    reap(pid);
    r.error = f.error;
    return r;
  }
  r.pid = pid;
  r.group = !foreground;
  return r;
}

// Every process below zklock, from the parent links in /proc (a process that has left the
// tree's group, or double-forked, is still below us: we are its subreaper).
std::vector<pid_t> descendants() {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end) continue;
      char path[64];
      std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
      std::FILE* f = std::fopen(path, "r");
      if (!f) continue;
      char buf[512] = {};
      std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[n] = 0;
      // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, the last ')' ends it
      const char* close = std::strrchr(buf, ')');
      char state = 0;
      long ppid = 0;
      if (close && std::sscanf(close + 1, " %c %ld", &state, &ppid) == 2 && state != 'Z')
        children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
    }
    ::closedir(d);
  }
  std::vector<pid_t> found, todo{::getpid()};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) {
      found.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return found;
}

}  // namespace

const char* to_string(tree_mode m) {
  switch (m) {
    case tree_mode::automatic: return "auto";
    case tree_mode::pid_namespace: return "namespace";
    case tree_mode::process_group: return "group";
  }
  return "?";
}

std::optional<tree_mode> parse_tree_mode(std::string_view s) {
  if (s == "auto") return tree_mode::automatic;
  if (s == "namespace") return tree_mode::pid_namespace;
  if (s == "group") return tree_mode::process_group;
  return std::nullopt;
}

started_command spawn(const resolved_command& rc, const std::vector<std::string>& command, tree_mode mode) {
  close_on_exec_own_fds();
  exec_plan p = make_plan(rc, command);
  std::string note;
  if (mode != tree_mode::process_group) {
    auto r = spawn_in_namespace(p);
    if (!r.setup_failed || mode == tree_mode::pid_namespace) return r;
    note = r.note;
  }
  auto r = spawn_in_group(p);
  r.note = note;
  return r;
}

void signal_descendants(int sig) {
  for (pid_t pid : descendants()) ::kill(pid, sig);
}

void kill_descendants() {
  // Until none is left: a process may fork while we kill. Ours (the orphans we adopted) are
  // reaped; the others' parents are among them and die too.
  for (int round = 0; round < 200; ++round) {
    int st;
    while (::waitpid(-1, &st, WNOHANG) > 0) {}
    auto d = descendants();
    if (d.empty()) return;
    for (pid_t pid : d) ::kill(pid, SIGKILL);
    ::usleep(5000);
  }
}

int status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return exit_internal;
}

}  // namespace zklock_cli
