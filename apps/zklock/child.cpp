#include "child.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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
    ::signal(SIGPIPE, ignored_at_start_[SIGPIPE] ? SIG_IGN : SIG_DFL);
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

}  // namespace zklock_cli
