#include "zk_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace zklock::test {

namespace {

// zookeeper.jar's manifest Class-Path pulls in its dependencies (jute, netty, metrics, ...).
const char* const default_classpath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar";
const char* const dir_prefix = "zklock-test-";
#ifdef ZKLOCK_TEST_ZK_CDS_ARCHIVE
const char* const cds_archive = ZKLOCK_TEST_ZK_CDS_ARCHIVE;
#else
const char* const cds_archive = "";
#endif

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string java_binary() {
  if (const char* v = std::getenv("ZKLOCK_TEST_JAVA"); v && *v) return v;
  std::string path = env_or("PATH", "/usr/bin:/bin");
  std::istringstream in(path);
  for (std::string d; std::getline(in, d, ':');) {
    if (d.empty()) continue;
    std::string p = d + "/java";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "/usr/bin/java";
}

std::string tail_of(const std::string& path, std::size_t bytes = 4000) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "(no log at " + path + ")";
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

bool pid_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

// --- everything this process started, for the atexit handler -----------------------------------

struct registry_t {
  std::mutex m;
  std::set<pid_t> pids;
  std::set<std::string> dirs;
};

void at_exit_cleanup() noexcept;

registry_t& registry() {
  static registry_t* r = [] {
    auto* p = new registry_t;  // leaked: must outlive static destructors
    std::atexit(at_exit_cleanup);
    return p;
  }();
  return *r;
}

void at_exit_cleanup() noexcept {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  for (pid_t pid : r.pids) {
    ::kill(pid, SIGKILL);
    ::kill(pid, SIGCONT);
    ::waitpid(pid, nullptr, 0);
  }
  r.pids.clear();
  for (auto& d : r.dirs) {
    std::error_code ec;
    fs::remove_all(d, ec);
  }
  r.dirs.clear();
}

void register_pid(pid_t pid) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  r.pids.insert(pid);
}
// false if the pid is not (or no longer) ours: the atexit handler reaped it already.
bool unregister_pid(pid_t pid) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  return r.pids.erase(pid) > 0;
}
bool is_registered(pid_t pid) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  return r.pids.count(pid) > 0;
}

// --- stale dirs of dead test processes --------------------------------------------------------

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Removes <tmp>/zklock-test-<pid>-* whose test process is gone, first killing a server still
// running from it (possible only if PDEATHSIG was lost); the server's cmdline must name the dir.
void sweep_stale_dirs() noexcept {
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    if (name.rfind(dir_prefix, 0) != 0) continue;
    auto rest = name.substr(std::strlen(dir_prefix));
    auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    if (rest.find_first_not_of("0123456789") != dash) continue;
    pid_t owner = static_cast<pid_t>(std::atol(rest.substr(0, dash).c_str()));
    if (owner <= 0 || owner == ::getpid() || pid_exists(owner)) continue;
    try {
      std::string sp = read_file(it->path() / "server.pid");
      pid_t server = static_cast<pid_t>(std::atol(sp.c_str()));
      if (server > 0) {
        std::string cmdline = read_file("/proc/" + std::to_string(server) + "/cmdline");
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        if (cmdline.find(it->path().string() + "/zoo.cfg") != std::string::npos) ::kill(server, SIGKILL);
      }
    } catch (...) {
    }
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

std::string make_temp_dir() {
  sweep_stale_dirs();
  std::string tmpl = (fs::temp_directory_path() / (dir_prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  r.dirs.insert(tmpl);
  return tmpl;
}

void remove_temp_dir(const std::string& dir) noexcept {
  std::error_code ec;
  fs::remove_all(dir, ec);
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  r.dirs.erase(dir);
}

// --- fork/exec --------------------------------------------------------------------------------

// Everything the child needs, prepared before fork: between fork and exec the child of a
// multi-threaded process may only make async-signal-safe calls (no malloc).
struct spawn_request {
  std::string exe;
  std::vector<std::string> args;
  std::string cwd;
  std::string log;
};

pid_t fork_exec(const spawn_request& req) {
  std::vector<char*> argv;
  for (auto& a : req.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int log_fd = ::open(req.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("open " + req.log + ": " + std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  rlimit rl{};
  int max_fd = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                   ? static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 65536))
                   : 65536;
  const char* exec_failed = "zk_server: execv failed\n";
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the thread that forked it (see spawner)
    if (::getppid() != parent) ::_exit(1);
    ::setpgid(0, 0);  // a terminal's Ctrl-C goes to the test only; PDEATHSIG does the rest
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    // No inherited sockets: a client connection or listener of the test must not live on in
    // the JVM (the peer would never see it close).
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
      for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::chdir(req.cwd.c_str()) != 0) ::_exit(126);
    ::execve(req.exe.c_str(), argv.data(), environ);
    (void)!::write(2, exec_failed, std::strlen(exec_failed));
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  register_pid(pid);
  return pid;
}

// PR_SET_PDEATHSIG fires when the *thread* that forked exits. The main thread lives as long as
// the process, so it forks directly; any other thread hands the fork to a helper thread that is
// started on first use and never exits.
class spawner {
 public:
  static pid_t spawn(const spawn_request& req) {
    if (static_cast<pid_t>(::syscall(SYS_gettid)) == ::getpid()) return fork_exec(req);
    return instance().run(req);
  }

 private:
  struct job {
    const spawn_request* req = nullptr;
    pid_t pid = -1;
    std::exception_ptr error;
    bool done = false;
  };

  static spawner& instance() {
    static spawner* s = new spawner;  // leaked, with its thread
    return *s;
  }

  spawner() {
    std::thread([this] {
      sigset_t all;
      ::sigfillset(&all);
      ::pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals are for the test's threads
      for (;;) {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return !queue_.empty(); });
        job* j = queue_.front();
        queue_.pop_front();
        lk.unlock();
        try {
          j->pid = fork_exec(*j->req);
        } catch (...) {
          j->error = std::current_exception();
        }
        lk.lock();
        j->done = true;
        cv_.notify_all();
      }
    }).detach();
  }

  pid_t run(const spawn_request& req) {
    job j;
    j.req = &req;
    std::unique_lock<std::mutex> lk(m_);
    queue_.push_back(&j);
    cv_.notify_all();
    cv_.wait(lk, [&] { return j.done; });
    if (j.error) std::rethrow_exception(j.error);
    return j.pid;
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<job*> queue_;
};

std::string mode_of(const std::string& srvr) {
  auto at = srvr.find("Mode: ");
  if (at == std::string::npos) return {};
  auto end = srvr.find('\n', at);
  return srvr.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
}

int loopback_socket(std::uint16_t port, sockaddr_in& a) {
  a = sockaddr_in{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

// The lowest port of the kernel's ephemeral range (ip_local_port_range), 32768 if unread.
int ephemeral_low() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return in >> low && low > 0 ? low : 32768;
}

}  // namespace

std::vector<std::uint16_t> free_ports(int n) {
  // Chosen at random below the ephemeral range (from 10000, where it leaves 4096 ports or more):
  // the kernel draws an outgoing connection's local port from that range, and a server killed and
  // started again on its own port (a quorum member keeps its ports) would find its port taken by
  // one. Each port is bound to check it is free and held until all are chosen; bind(0) where the
  // range leaves no room or 64 draws found none.
  static constexpr int lowest = 10000;
  const int below = ephemeral_low();
  static std::mt19937 draw(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  static std::mutex draw_mutex;
  std::vector<int> fds;
  std::vector<std::uint16_t> ports;
  auto close_all = [&] {
    for (int fd : fds) ::close(fd);
  };
  for (int i = 0; i < n; ++i) {
    sockaddr_in a{};
    int fd = -1;
    for (int attempt = 0; attempt <= 64; ++attempt) {
      std::uint16_t port = 0;  // the last attempt: any port the kernel gives
      if (attempt < 64 && below - lowest >= 4096) {
        std::lock_guard lock(draw_mutex);
        port = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(lowest, below - 1)(draw));
      }
      fd = loopback_socket(port, a);
      if (fd < 0) {
        close_all();
        throw std::runtime_error(std::string("free_port: socket: ") + std::strerror(errno));
      }
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) break;
      int e = errno;
      ::close(fd);
      fd = -1;
      if (port == 0 || e != EADDRINUSE) {
        close_all();
        throw std::runtime_error(std::string("free_port: bind: ") + std::strerror(e));
      }
    }
    fds.push_back(fd);
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      int e = errno;
      close_all();
      throw std::runtime_error(std::string("free_port: getsockname: ") + std::strerror(e));
    }
    ports.push_back(ntohs(a.sin_port));
  }
  close_all();
  return ports;
}

std::uint16_t free_port() { return free_ports(1).front(); }

std::string fixture_setting(const std::string& key) {
  static const std::map<std::string, std::string> settings = [] {
    std::map<std::string, std::string> kv;
    std::ifstream in(ZKLOCK_TEST_FIXTURE_CFG);
    if (!in) throw std::runtime_error(std::string("cannot read ") + ZKLOCK_TEST_FIXTURE_CFG);
    for (std::string line; std::getline(in, line);) {
      auto eq = line.find('=');
      if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
      kv.emplace(line.substr(0, eq), line.substr(eq + 1));
    }
    return kv;
  }();
  auto it = settings.find(key);
  if (it == settings.end()) throw std::runtime_error(std::string(ZKLOCK_TEST_FIXTURE_CFG) + " sets no " + key);
  return it->second;
}

// One server process (standalone, or a quorum member when myid > 0) with its dir and config.
class server_process {
 public:
  server_process(const server_options& opts, std::uint16_t client_port, const std::string& quorum_cfg, int myid)
      : opts_(opts), port_(client_port), dir_(make_temp_dir()), myid_(myid) {
    try {
      fs::create_directories(dir_ + "/data");
      if (myid_ > 0) std::ofstream(dir_ + "/data/myid") << myid_ << "\n";
      std::ofstream cfg(dir_ + "/zoo.cfg");
      cfg << "tickTime=" << opts.tick_time_ms << "\n"
          << "initLimit=" << opts.init_limit << "\n"
          << "syncLimit=" << opts.sync_limit << "\n"
          << "dataDir=" << dir_ << "/data\n"
          << "clientPort=" << port_ << "\n"
          << "clientPortAddress=127.0.0.1\n"
          << "admin.enableServer=false\n"
          << "4lw.commands.whitelist=*\n"
          << "maxClientCnxns=0\n"
          << "maxSessionTimeout=" << opts.max_session_timeout_ms << "\n"
          << "forceSync=" << (opts.force_sync ? "yes" : "no") << "\n"
          << "preAllocSize=" << fixture_setting("preAllocSize") << "\n"
          << quorum_cfg;
      cfg.close();
      if (!cfg) throw std::runtime_error("cannot write " + dir_ + "/zoo.cfg");

      req_.exe = java_binary();
      req_.cwd = dir_;  // hs_err_pid*.log, if any, lands here
      req_.log = dir_ + "/server.log";
      std::string level = opts.log_level.empty() ? "info" : opts.log_level;
      req_.args = {req_.exe};
      // The tests' servers' JVM flags (test/support/CMakeLists.txt: C1 only, serial GC, ...)
      std::istringstream jvm_flags(ZKLOCK_TEST_SERVER_JVM_FLAGS);
      for (std::string flag; jvm_flags >> flag;) req_.args.push_back(flag);
      req_.args.insert(req_.args.end(), {"-Djava.net.preferIPv4Stack=true",
                                         "-Dzookeeper.admin.enableServer=false",
                                         "-Dorg.slf4j.simpleLogger.defaultLogLevel=" + level,
                                         "-Dorg.slf4j.simpleLogger.showDateTime=true",
                                         "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"});
      // The class archive of test/support/zk_cds_archive.sh, if the build made one: 0.15 s less
      // CPU a start. A JVM that cannot map it ignores it (-Xshare:auto).
      if (::access(cds_archive, R_OK) == 0) req_.args.push_back(std::string("-XX:SharedArchiveFile=") + cds_archive);
      if (opts.container_check_interval_ms > 0)
        req_.args.push_back("-Dznode.container.checkIntervalMs=" + std::to_string(opts.container_check_interval_ms));
      req_.args.insert(req_.args.end(), {"-cp",
                   env_or("ZKLOCK_TEST_ZK_CLASSPATH", default_classpath),
                   myid_ > 0 ? "org.apache.zookeeper.server.quorum.QuorumPeerMain"
                             : "org.apache.zookeeper.server.ZooKeeperServerMain",
                   dir_ + "/zoo.cfg"});
    } catch (...) {
      remove_temp_dir(dir_);
      throw;
    }
  }

  ~server_process() {
    kill();
    remove_temp_dir(dir_);
  }

  void spawn() {
    if (running()) return;
    std::ofstream(req_.log, std::ios::app) << "=== zk_server: starting " << req_.args[req_.args.size() - 2] << " on port "
                                           << port_ << " ===\n";
    pid_ = spawner::spawn(req_);
    paused_ = false;
    std::ofstream(dir_ + "/server.pid") << pid_ << "\n";
  }

  // Waits until the process answers ruok (and, standalone, serves requests). Quorum members
  // answer ruok before they have joined a quorum: zk_ensemble::wait_quorum checks that.
  //
  // Tests run in parallel (ctest -j): another test's server may have taken the port between
  // free_ports() and our JVM's bind. That server answers ruok too, so readiness also requires
  // that the server on the port is ours (its `conf` names our dataDir); ours then exits with
  // "Address already in use", reported as port_in_use so that the caller retries on new ports.
  void wait_ready() {
    auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
    for (;;) {
      if (!running()) {
        if (tail_of(req_.log).find("Address already in use") != std::string::npos)
          throw port_in_use("ZooKeeper (port " + std::to_string(port_) +
                            ") exited while starting: a port was taken by another process; " + describe());
        throw std::runtime_error("ZooKeeper (port " + std::to_string(port_) + ") exited while starting; " + describe());
      }
      if (ruok() && ours() && (myid_ > 0 || mode() == "standalone")) return;
      if (std::chrono::steady_clock::now() >= deadline)
        throw std::runtime_error("ZooKeeper (port " + std::to_string(port_) + ") did not start within " +
                                 std::to_string(opts_.start_timeout.count()) + " ms; " + describe());
      std::this_thread::sleep_for(50ms);
    }
  }

  void start() {
    spawn();
    wait_ready();
  }

  // Never throws.
  void signal_and_reap(int sig, std::chrono::milliseconds grace) noexcept {
    if (pid_ <= 0) return;
    if (!is_registered(pid_)) {  // reaped by the atexit handler
      pid_ = -1;
      return;
    }
    ::kill(pid_, sig);
    if (paused_) ::kill(pid_, SIGCONT);
    paused_ = false;
    auto deadline = std::chrono::steady_clock::now() + grace;
    for (;;) {
      pid_t r = ::waitpid(pid_, nullptr, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    unregister_pid(pid_);
    pid_ = -1;
  }
  void stop() { signal_and_reap(SIGTERM, 5000ms); }
  void kill() { signal_and_reap(SIGKILL, 5000ms); }
  // SIGSTOP, then waits (at most 2 s) until every thread of the JVM has stopped: the kernel stops
  // a multi-threaded process's threads one by one after kill() returns (a thread running on
  // another CPU, of a loaded virtual machine, may still answer a request sent at once).
  void pause() {
    if (!running()) return;
    ::kill(pid_, SIGSTOP);
    paused_ = true;
    auto deadline = std::chrono::steady_clock::now() + 2s;
    while (threads_running(pid_) > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
  }
  void resume() {
    if (running()) ::kill(pid_, SIGCONT), paused_ = false;
  }

  // Reaps the process if it exited by itself.
  bool running() const {
    if (pid_ <= 0) return false;
    if (!is_registered(pid_)) {
      pid_ = -1;
      return false;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      unregister_pid(pid_);
      pid_ = -1;
      paused_ = false;
      return false;
    }
    return true;
  }
  bool paused() const { return running() && paused_; }
  pid_t pid() const { return running() ? pid_ : -1; }
  bool ruok() const { return zklock::test::four_letter(port_, "ruok", 1000ms) == "imok"; }
  // The server answering on our port is this process (and not another test's on a reused port).
  bool ours() const {
    return zklock::test::four_letter(port_, "conf", 1000ms).find("dataDir=" + dir_ + "/data") != std::string::npos;
  }
  std::string four_letter(const std::string& cmd) const { return zklock::test::four_letter(port_, cmd, 3000ms); }
  std::string mode() const { return mode_of(zklock::test::four_letter(port_, "srvr", 1000ms)); }
  std::uint16_t port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string log_path() const { return req_.log; }
  std::string describe() const { return "log " + req_.log + ":\n" + tail_of(req_.log); }

 private:
  server_options opts_;
  std::uint16_t port_;
  std::string dir_;
  int myid_;
  spawn_request req_;
  mutable pid_t pid_ = -1;
  mutable bool paused_ = false;
};

namespace {

// Starts a server again (a restart, a quorum member after a kill; spawned already, this only
// waits) and waits until it is ready. It keeps its ports: one taken while it was down (by a
// short-lived socket) is tried again for up to 5 s.
void start_on_own_ports(server_process& m) {
  m.spawn();
  const auto until = std::chrono::steady_clock::now() + 5s;
  for (;;) {
    try {
      m.wait_ready();
      return;
    } catch (const port_in_use&) {
      if (std::chrono::steady_clock::now() >= until) throw;
      std::this_thread::sleep_for(250ms);
      m.spawn();
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

// --- the tests' shared server ------------------------------------------------------------------

namespace {

// "127.0.0.1:PORT" from the file ZKLOCK_TEST_SHARED_SERVER names; 0 when there is none.
std::uint16_t shared_server_port() {
  const char* file = std::getenv("ZKLOCK_TEST_SHARED_SERVER");
  if (!file || !*file) return 0;
  std::string text = read_file(file);
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return 0;
  int port = std::atoi(text.c_str() + colon + 1);
  return port > 0 && port < 65536 ? static_cast<std::uint16_t>(port) : 0;
}

void discard_log(const char*) {}

// One request at a time on a session of the single-threaded C client, run to its reply here
// (zookeeper_interest, poll, zookeeper_process): the few writes a shared server's chroot needs.
class admin_session {
 public:
  explicit admin_session(const std::string& connect) : where_(connect) {
    zh_ = ::zookeeper_init2(where_.c_str(), nullptr, 10000, nullptr, nullptr, 0, discard_log);
    if (!zh_) throw std::runtime_error("shared ZooKeeper " + where_ + ": zookeeper_init2: " + std::strerror(errno));
  }
  ~admin_session() { ::zookeeper_close(zh_); }
  admin_session(const admin_session&) = delete;
  admin_session& operator=(const admin_session&) = delete;

  int create(const std::string& path, const ACL_vector* acl) {
    reply r;
    check("create " + path, ::zoo_acreate(zh_, path.c_str(), "", 0, acl, 0, on_string, &r));
    return wait(r, "create " + path);
  }
  int set_acl(const std::string& path, ACL_vector* acl) {
    reply r;
    check("setACL " + path, ::zoo_aset_acl(zh_, path.c_str(), -1, acl, on_void, &r));
    return wait(r, "setACL " + path);
  }

 private:
  struct reply {
    bool done = false;
    int rc = 0;
  };
  static void on_string(int rc, const char*, const void* data) {
    auto* r = static_cast<reply*>(const_cast<void*>(data));
    r->rc = rc, r->done = true;
  }
  static void on_void(int rc, const void* data) { on_string(rc, nullptr, data); }

  void check(const std::string& what, int rc) const {
    if (rc != ZOK) throw std::runtime_error("shared ZooKeeper " + where_ + ": " + what + ": " + ::zerror(rc));
  }

  int wait(reply& r, const std::string& what) {
    auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!r.done) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("shared ZooKeeper " + where_ + ": " + what + ": no reply within 15 s");
      int fd = -1, interest = 0;
      timeval tv{};
      if (::zookeeper_interest(zh_, &fd, &interest, &tv) != ZOK) fd = -1;  // it retries the connection
      pollfd p{fd, 0, 0};
      if (interest & ZOOKEEPER_READ) p.events |= POLLIN;
      if (interest & ZOOKEEPER_WRITE) p.events |= POLLOUT;
      long ms = std::clamp<long>(tv.tv_sec * 1000L + tv.tv_usec / 1000, 1, 100);
      int events = 0;
      if (::poll(&p, fd >= 0 ? 1 : 0, static_cast<int>(ms)) > 0) {
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) events |= ZOOKEEPER_READ;
        if (p.revents & POLLOUT) events |= ZOOKEEPER_WRITE;
      }
      ::zookeeper_process(zh_, events);
    }
    return r.rc;
  }

  std::string where_;
  zhandle_t* zh_ = nullptr;
};

const char* const shared_root = "/zklock-test";

// Creates this test's chroot on the shared server, /zklock-test/<pid>-<n>, and makes the server's
// root read-only (a session without the chroot can then create nothing where the other tests'
// would see it).
std::string make_chroot(std::uint16_t port) {
  static std::atomic<int> counter{0};
  admin_session admin("127.0.0.1:" + std::to_string(port));
  // Once the root is read-only, creating the dir again is refused (not authenticated) and so is
  // changing the root's ACL: both mean another test did them.
  int rc = admin.create(shared_root, &ZOO_OPEN_ACL_UNSAFE);
  if (rc != ZOK && rc != ZNODEEXISTS && rc != ZNOAUTH)
    throw std::runtime_error(std::string("shared ZooKeeper: create ") + shared_root + ": " + ::zerror(rc));
  if (int acl = rc == ZNOAUTH ? ZNOAUTH : admin.set_acl("/", &ZOO_READ_ACL_UNSAFE); acl != ZOK && acl != ZNOAUTH)
    throw std::runtime_error(std::string("shared ZooKeeper: setACL /: ") + ::zerror(acl));
  for (;;) {
    std::string path = std::string(shared_root) + "/" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    rc = admin.create(path, &ZOO_OPEN_ACL_UNSAFE);
    if (rc == ZOK) return path;
    if (rc != ZNODEEXISTS) throw std::runtime_error("shared ZooKeeper: create " + path + ": " + ::zerror(rc));
  }
}

}  // namespace

int threads_running(pid_t pid) {
  int n = 0;
  std::error_code ec;  // a process gone has no task dir: none running
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');  // the state follows the command name, "(...) S"
    if (close == std::string::npos || close + 2 >= stat.size()) continue;  // exited meanwhile
    char state = stat[close + 2];
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') ++n;
  }
  return n;
}

std::string create_node(const std::string& connect, const std::string& path) {
  int rc = admin_session(connect).create(path, &ZOO_OPEN_ACL_UNSAFE);
  return rc == ZOK ? "" : ::zerror(rc);
}

zk_server::zk_server(server_options opts) {
  if (opts == server_options{}) {
    if (std::uint16_t port = shared_server_port()) {
      shared_port_ = port;
      chroot_ = make_chroot(port);
      return;
    }
  }
  for (int attempt = 1;; ++attempt) {
    p_ = std::make_unique<server_process>(opts, opts.client_port ? opts.client_port : free_port(), "", 0);
    try {
      p_->start();
      return;
    } catch (const port_in_use&) {
      if (opts.client_port || attempt == 5) throw;  // a port the test chose, or bad luck five times
    }
  }
}
zk_server::~zk_server() = default;
server_process& zk_server::own(const char* what) const {
  if (!p_) {
    std::string msg = std::string("zk_server::") + what + " on the server the tests share (ZKLOCK_TEST_SHARED_SERVER, chroot " +
                      chroot_ + "): mark this test's server private (server_options::own_process = true)";
    std::fprintf(stderr, "%s\n", msg.c_str());  // also when the exception ends in a crash (a coroutine's)
    throw std::logic_error(msg);
  }
  return *p_;
}
std::string zk_server::connect_string() const { return connect_via(address()); }
std::string zk_server::address() const { return "127.0.0.1:" + std::to_string(port()); }
std::string zk_server::connect_via(const std::string& hosts) const { return hosts + chroot_; }
std::uint16_t zk_server::port() const { return p_ ? p_->port() : shared_port_; }
bool zk_server::shared() const { return !p_; }
std::string zk_server::chroot() const { return chroot_; }
pid_t zk_server::pid() const { return own("pid").pid(); }
bool zk_server::running() const { return p_ ? p_->running() : ruok(); }
void zk_server::stop() { own("stop").stop(); }
void zk_server::kill() { own("kill").kill(); }
void zk_server::pause() { own("pause").pause(); }
void zk_server::resume() { own("resume").resume(); }
void zk_server::start() { start_on_own_ports(own("start")); }
void zk_server::restart() {
  own("restart").stop();
  start_on_own_ports(*p_);
}
bool zk_server::ruok() const { return zklock::test::four_letter(port(), "ruok", 1000ms) == "imok"; }
std::string zk_server::four_letter(const std::string& cmd) const {
  return zklock::test::four_letter(port(), cmd, 3000ms);
}
std::string zk_server::mode() const { return mode_of(zklock::test::four_letter(port(), "srvr", 1000ms)); }
std::string zk_server::log_path() const { return own("log_path").log_path(); }
std::string zk_server::data_dir() const { return own("data_dir").dir() + "/data"; }

// ---------------------------------------------------------------------------------------------

zk_ensemble::zk_ensemble(int members, server_options opts) : opts_(opts) {
  if (members < 1) throw std::invalid_argument("zk_ensemble: members < 1");
  for (int attempt = 1;; ++attempt) {
    auto ports = free_ports(3 * members);  // client, quorum, election per member
    std::ostringstream servers;
    for (int i = 0; i < members; ++i)
      servers << "server." << i + 1 << "=127.0.0.1:" << ports[3 * i + 1] << ":" << ports[3 * i + 2] << "\n";
    servers << "standaloneEnabled=false\n";
    members_.clear();  // kills and removes a failed attempt's members
    for (int i = 0; i < members; ++i)
      members_.push_back(std::make_unique<server_process>(opts, ports[3 * i], servers.str(), i + 1));
    try {
      for (auto& m : members_) m->spawn();
      for (auto& m : members_) m->wait_ready();
      break;
    } catch (const port_in_use&) {
      if (attempt == 5) throw;  // a port taken by another test five times: give up
    }
  }
  wait_quorum();
}
zk_ensemble::~zk_ensemble() = default;

void zk_ensemble::wait_quorum() {
  auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  for (;;) {
    bool ok = true;
    int leaders = 0;
    for (auto& m : members_) {
      if (!m->running() || m->paused()) continue;
      auto mode = m->mode();
      if (mode == "leader") ++leaders;
      else if (mode != "follower") ok = false;
    }
    if (ok && leaders == 1) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(50ms);
  }
  std::string msg = "ZooKeeper ensemble did not form a quorum within " + std::to_string(opts_.start_timeout.count()) +
                    " ms";
  for (std::size_t i = 0; i < members_.size(); ++i) {
    auto& m = members_[i];
    msg += "\n--- member " + std::to_string(i) + " (port " + std::to_string(m->port()) + ", " +
           (m->running() ? (m->paused() ? "paused" : "running") : "not running") + ", mode '" + m->mode() + "'), " +
           m->describe();
  }
  throw std::runtime_error(msg);
}

std::string zk_ensemble::connect_string() const {
  std::string s;
  for (auto& m : members_) s += (s.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(m->port());
  return s;
}
std::string zk_ensemble::connect_string(int i) const { return "127.0.0.1:" + std::to_string(port(i)); }
int zk_ensemble::size() const { return static_cast<int>(members_.size()); }
void zk_ensemble::stop(int i) { members_.at(i)->stop(); }
void zk_ensemble::kill(int i) { members_.at(i)->kill(); }
void zk_ensemble::pause(int i) { members_.at(i)->pause(); }
void zk_ensemble::resume(int i) { members_.at(i)->resume(); }
void zk_ensemble::start(int i) {
  start_on_own_ports(*members_.at(i));
  wait_quorum();
}
void zk_ensemble::start_all() {
  // all spawned before any is waited for: one member alone never forms a quorum
  for (auto& m : members_) m->spawn();
  for (auto& m : members_) start_on_own_ports(*m);
  wait_quorum();
}
void zk_ensemble::restart(int i) {
  members_.at(i)->stop();
  start(i);
}
bool zk_ensemble::ruok(int i) const { return members_.at(i)->ruok(); }
std::uint16_t zk_ensemble::port(int i) const { return members_.at(i)->port(); }
std::string zk_ensemble::four_letter(int i, const std::string& cmd) const { return members_.at(i)->four_letter(cmd); }
pid_t zk_ensemble::pid(int i) const { return members_.at(i)->pid(); }
bool zk_ensemble::running(int i) const { return members_.at(i)->running(); }
std::string zk_ensemble::mode(int i) const { return members_.at(i)->mode(); }
int zk_ensemble::leader() const {
  for (std::size_t i = 0; i < members_.size(); ++i)
    if (members_[i]->running() && !members_[i]->paused() && members_[i]->mode() == "leader") return static_cast<int>(i);
  return -1;
}
std::string zk_ensemble::log_path(int i) const { return members_.at(i)->log_path(); }

}  // namespace zklock::test
