#include "processes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

#ifndef ZKLOCK_FAULT_WORKER
#define ZKLOCK_FAULT_WORKER "zklock_fault_worker"
#endif
#ifndef ZKLOCK_FAULT_SOURCE_DIR
#define ZKLOCK_FAULT_SOURCE_DIR "."
#endif
#ifndef ZKLOCK_JAVA_PEERS
#define ZKLOCK_JAVA_PEERS "java_peers.args"  // the harness's build names the build's (CMakeLists.txt)
#endif

using namespace std::chrono_literals;

namespace zklock::fault {

pid_t spawn(const std::vector<std::string>& args, const std::string& log, const std::string& cwd) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::setpgid(0, 0);
    ::dup2(null_fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  ::close(null_fd);
  if (pid < 0) throw std::runtime_error("fork failed");
  return pid;
}

child::child(child&& o) noexcept
    : who(std::move(o.who)), kind(std::move(o.kind)), pid(std::exchange(o.pid, -1)), status(o.status), reaped(o.reaped) {}

child::~child() {
  if (reaped || pid <= 0) return;
  ::kill(pid, SIGKILL);
  reap(*this, std::chrono::milliseconds(5000));
}

bool reap(child& c, std::chrono::milliseconds wait) {
  if (c.reaped || c.pid <= 0) return true;
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(c.pid, &st, WNOHANG);
    if (r == c.pid) {
      c.status = st;
      c.reaped = true;
      return true;
    }
    if (r < 0) {
      c.reaped = true;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

void end_child(child& c, std::chrono::milliseconds grace) {
  if (c.reaped || c.pid <= 0) return;
  ::kill(c.pid, SIGCONT);
  ::kill(c.pid, SIGTERM);
  if (!reap(c, grace)) {
    ::kill(c.pid, SIGKILL);
    reap(c, 5000ms);
  }
}

char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto rp = s.rfind(')');
  return rp == std::string::npos || rp + 2 >= s.size() ? '?' : s[rp + 2];
}

long rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}


int wait_pidfd(pid_t pid, std::chrono::milliseconds bound) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return -1;
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, static_cast<int>(bound.count()));
  ::close(fd);
  return r;
}

std::vector<std::string> client_command(const std::string& kind, const options& o, std::uint16_t res_port,
                                        const std::string& connect, const std::string& path, const std::string& who,
                                        const std::string& mode, int session_timeout_ms,
                                        const std::vector<std::string>& worker_args) {
  std::vector<std::string> tail = {std::to_string(res_port), connect, path, who, std::to_string(session_timeout_ms),
                                   std::to_string(o.hold_ms), mode};
  tail.insert(tail.end(), worker_args.begin(), worker_args.end());  // zklock_fault_worker only
  std::vector<std::string> cmd;
  if (kind == "zklock" || kind == "zklock-lib") {
    cmd = {ZKLOCK_FAULT_WORKER};
  } else if (kind == "curator") {
    // compiled by the build, with the tests' other Java peers (test/support/java_peers.py: the
    // argument file has their JVM flags and classpath)
    cmd = {"java", "-Xmx128m", std::string("@") + ZKLOCK_JAVA_PEERS, "CuratorWorker"};
  } else {
    cmd = {"/usr/bin/python3", std::string(ZKLOCK_FAULT_SOURCE_DIR) + "/kazoo_worker.py"};
  }
  cmd.insert(cmd.end(), tail.begin(), tail.end());
  return cmd;
}

}  // namespace zklock::fault
