// The fixture itself: servers start, pause, resume, restart, die, form quorums, and leave
// nothing behind (no process, no temp dir).

#include <catch2/catch.hpp>

#include "zk_server.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace zklock::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

bool gone(pid_t pid) { return pid > 0 && ::kill(pid, 0) == -1 && errno == ESRCH; }

std::string our_prefix() { return "zklock-test-" + std::to_string(::getpid()) + "-"; }

// Temp dirs of this test process.
int our_dirs() {
  int n = 0;
  for (auto& e : fs::directory_iterator(fs::temp_directory_path()))
    if (e.path().filename().string().rfind(our_prefix(), 0) == 0) ++n;
  return n;
}

// Processes (of anyone) whose command line names one of our temp dirs.
int our_processes() {
  int n = 0;
  for (auto& e : fs::directory_iterator("/proc")) {
    auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(our_prefix()) != std::string::npos) ++n;
  }
  return n;
}

// Whether process `pid` has `file` mapped (/proc/PID/maps names each mapped file).
bool maps_file(pid_t pid, const std::string& file) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(in, line);)
    if (line.size() >= file.size() && line.compare(line.size() - file.size(), file.size(), file) == 0) return true;
  return false;
}

void expect_nothing_left() {
  CHECK(our_processes() == 0);
  CHECK(our_dirs() == 0);
}

// key -> value of a zoo.cfg's "key=value" lines (a later line of a key wins, as in the server)
std::map<std::string, std::string> zoo_cfg(const fs::path& file) {
  std::map<std::string, std::string> kv;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (!line.empty() && line[0] != '#' && eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

// Each setting of zoo-fixture.cfg is in the server's zoo.cfg `file`, with the same value.
void expect_fixture_settings(const fs::path& file) {
  auto fixture = zoo_cfg(ZKLOCK_TEST_FIXTURE_CFG), server = zoo_cfg(file);
  REQUIRE(fixture.size() >= 6);
  for (const auto& [key, value] : fixture) {
    INFO(file.string() << ": " << key);
    CHECK(server[key] == value);
  }
}

}  // namespace

TEST_CASE("standalone server: maps the class archive; ruok, pause, resume, restart, kill -9, start", "[fixture]") {
  std::vector<pid_t> pids;
  std::string data;
  {
    auto t0 = clock_type::now();
    zk_server s;
    std::fprintf(stderr, "standalone server up in %.2f s\n", seconds_since(t0));
    pids.push_back(s.pid());
    data = s.data_dir();
    CHECK(fs::is_directory(data));
    CHECK(s.running());
    CHECK(s.ruok());
    CHECK(s.mode() == "standalone");
    CHECK(s.connect_string() == "127.0.0.1:" + std::to_string(s.port()));
    CHECK(s.four_letter("mntr").find("zk_server_state\tstandalone") != std::string::npos);
    expect_fixture_settings(fs::path(data).parent_path() / "zoo.cfg");  // server_options' defaults
    // the build's class archive of the server's classes (zk_cds_archive.sh): a JVM that cannot
    // map it starts without it, silently, on more CPU
    INFO("class archive " << ZKLOCK_TEST_ZK_CDS_ARCHIVE);
    CHECK(fs::exists(ZKLOCK_TEST_ZK_CDS_ARCHIVE));
    CHECK(maps_file(s.pid(), ZKLOCK_TEST_ZK_CDS_ARCHIVE));

    s.pause();
    CHECK(threads_running(s.pid()) == 0);  // pause() returns once every thread of the JVM stopped
    auto t1 = clock_type::now();
    CHECK_FALSE(s.ruok());
    CHECK(seconds_since(t1) < 2.0);
    CHECK(s.running());
    s.resume();
    CHECK(s.ruok());

    auto port = s.port();
    t0 = clock_type::now();
    s.restart();
    std::fprintf(stderr, "standalone restart (SIGTERM + start) in %.2f s\n", seconds_since(t0));
    CHECK(s.port() == port);
    CHECK(s.ruok());
    CHECK(s.pid() != pids.front());
    CHECK(gone(pids.front()));
    pids.push_back(s.pid());

    s.kill();
    CHECK_FALSE(s.running());
    CHECK(s.pid() == -1);
    CHECK_FALSE(s.ruok());
    CHECK(gone(pids.back()));
    s.start();
    CHECK(s.ruok());
    CHECK(s.port() == port);
    pids.push_back(s.pid());

    // A paused server can still be stopped.
    s.pause();
    s.stop();
    CHECK_FALSE(s.running());
    s.start();
    pids.push_back(s.pid());

    // Dying on its own is noticed.
    ::kill(s.pid(), SIGKILL);
    auto deadline = clock_type::now() + 5s;
    while (s.running() && clock_type::now() < deadline) std::this_thread::sleep_for(10ms);
    CHECK_FALSE(s.running());
    s.start();
    CHECK(s.ruok());
    pids.push_back(s.pid());

    // Its port taken while it was down (by a socket that goes away): the start is tried again on
    // the same port. The socket is closed only once the server's log shows its bind refused.
    s.kill();
    {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      int taken = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      REQUIRE(taken >= 0);
      int on = 1;  // past the killed server's connections in TIME_WAIT
      ::setsockopt(taken, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
      REQUIRE(::bind(taken, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
      REQUIRE(::listen(taken, 1) == 0);  // listening: the server's bind is refused, reuse or not
      std::atomic<bool> refused{false};
      std::thread release([&] {
        for (auto until = clock_type::now() + 20s; clock_type::now() < until && !refused; std::this_thread::sleep_for(20ms)) {
          std::ifstream log(s.log_path());
          std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
          refused = text.find("Address already in use") != std::string::npos;
        }
        ::close(taken);
      });
      bool started = false;
      try {
        s.start();
        started = true;
      } catch (const std::exception& e) {
        INFO(e.what());
        CHECK(false);
      }
      release.join();
      CHECK(refused);
      CHECK(started);
    }
    CHECK(s.ruok());
    CHECK(s.port() == port);
    pids.push_back(s.pid());
  }
  for (pid_t p : pids) CHECK(gone(p));
  CHECK_FALSE(fs::exists(data));
  expect_nothing_left();
}

TEST_CASE("free ports are chosen below the kernel's ephemeral range, where it leaves room", "[fixture]") {
  // an outgoing connection's local port is drawn from that range: a server started again on its
  // own port must not find it taken by one
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  REQUIRE(range >> low);
  INFO("ephemeral range from " << low);
  if (low - 10000 < 4096) return;  // no room below it: bind(0)'s ports, in it
  auto ports = free_ports(20);
  std::set<std::uint16_t> distinct(ports.begin(), ports.end());
  CHECK(distinct.size() == ports.size());
  for (auto p : ports) {
    CHECK(p >= 10000);
    CHECK(p < low);
  }
  CHECK(free_port() < low);
}

TEST_CASE("3-node ensemble keeps a quorum when one member dies", "[fixture]") {
  std::vector<pid_t> pids;
  {
    auto t0 = clock_type::now();
    zk_ensemble e(3);
    std::fprintf(stderr, "3-node ensemble up in %.2f s\n", seconds_since(t0));
    REQUIRE(e.size() == 3);
    std::string cs;
    for (int i = 0; i < 3; ++i) {
      CHECK(e.ruok(i));
      CHECK((e.mode(i) == "leader" || e.mode(i) == "follower"));
      cs += (i ? "," : "") + e.connect_string(i);
      pids.push_back(e.pid(i));
    }
    CHECK(e.connect_string() == cs);
    int leader = e.leader();
    REQUIRE(leader >= 0);

    // Kill the leader: the other two answer and elect a new one.
    e.kill(leader);
    CHECK_FALSE(e.running(leader));
    CHECK_FALSE(e.ruok(leader));
    t0 = clock_type::now();
    e.wait_quorum();
    std::fprintf(stderr, "re-election after leader kill in %.2f s\n", seconds_since(t0));
    for (int i = 0; i < 3; ++i) {
      if (i == leader) continue;
      CHECK(e.ruok(i));
      CHECK((e.mode(i) == "leader" || e.mode(i) == "follower"));
    }
    CHECK(e.leader() >= 0);
    CHECK(e.leader() != leader);

    t0 = clock_type::now();
    e.start(leader);
    std::fprintf(stderr, "member rejoin in %.2f s\n", seconds_since(t0));
    CHECK(e.ruok(leader));
    CHECK(e.mode(leader) == "follower");
    pids.push_back(e.pid(leader));

    // Members run QuorumPeerMain and really are an ensemble.
    CHECK(e.four_letter(e.leader(), "mntr").find("zk_synced_followers\t2") != std::string::npos);

    int follower = (e.leader() + 1) % 3;
    e.restart(follower);
    CHECK(e.mode(follower) == "follower");
    pids.push_back(e.pid(follower));
  }
  for (pid_t p : pids) CHECK(gone(p));
  expect_nothing_left();
}

TEST_CASE("a failed start throws with the server's log and cleans up", "[fixture]") {
  // Hold the port so that the server cannot bind it.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  server_options o;
  o.client_port = ntohs(a.sin_port);
  o.start_timeout = 20s;
  std::string what;
  try {
    zk_server s(o);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  ::close(fd);
  INFO(what);
  CHECK(what.find("exited while starting") != std::string::npos);
  CHECK(what.find("Address already in use") != std::string::npos);
  expect_nothing_left();
}

TEST_CASE("a port taken by another test's server is never mistaken for ours", "[fixture]") {
  // ctest runs tests in parallel: a server of another test may answer on the port ours was given.
  // It answers ruok; ours must not be declared up on its answer (it fails to bind and exits).
  zk_server other;
  server_options o;
  o.client_port = other.port();
  o.start_timeout = 20s;
  bool started = false;
  bool port_taken = false;
  try {
    zk_server s(o);
    started = true;
  } catch (const port_in_use&) {
    port_taken = true;
  } catch (const std::runtime_error& e) {
    INFO(e.what());
  }
  CHECK_FALSE(started);
  CHECK(port_taken);
  CHECK(other.ruok());
}

TEST_CASE("servers outlive the thread that started them and inherit no descriptors", "[fixture]") {
  // A socket without CLOEXEC must not leak into the JVM.
  int leak = ::socket(AF_INET, SOCK_STREAM, 0);
  struct stat st {};
  REQUIRE(::fstat(leak, &st) == 0);
  std::string leaked = "socket:[" + std::to_string(st.st_ino) + "]";
  {
    std::unique_ptr<zk_server> s;
    std::thread([&] { s = std::make_unique<zk_server>(); }).join();
    std::this_thread::sleep_for(300ms);
    REQUIRE(s->running());
    CHECK(s->ruok());
    int found = 0;
    for (auto& e : fs::directory_iterator("/proc/" + std::to_string(s->pid()) + "/fd")) {
      std::error_code ec;
      if (fs::read_symlink(e.path(), ec).string() == leaked) ++found;
    }
    CHECK(found == 0);
    std::thread([&] { s->restart(); }).join();
    std::this_thread::sleep_for(300ms);
    CHECK(s->ruok());
  }
  ::close(leak);
  expect_nothing_left();
}

TEST_CASE("dirs left by dead test processes are swept", "[fixture]") {
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  REQUIRE(dead > 0);
  ::waitpid(dead, nullptr, 0);
  auto stale = fs::temp_directory_path() / ("zklock-test-" + std::to_string(dead) + "-selftest");
  fs::create_directories(stale / "data");
  std::ofstream(stale / "server.pid") << "1\n";  // pid 1 is not a server of that dir: not killed
  {
    zk_server s;
    CHECK_FALSE(fs::exists(stale));
  }
  expect_nothing_left();
}

TEST_CASE("a shared server (shared_server.sh's, zoo-fixture.cfg's settings): a chroot per zk_server with default "
          "options, a read-only root, no process calls",
          "[fixture]") {
  server_options own;
  own.own_process = true;
  // the one the tests of a ctest run share, started as their fixture starts it (its watchdog
  // stops it if this process dies: the script's parent, as ctest is the fixture's)
  auto file = fs::temp_directory_path() / (our_prefix() + "shared-connect");
  auto shared_server_sh = [&](const std::string& cmd) {
    return std::system(("exec env 'ZK_SERVER_JAVA_OPTS=" ZKLOCK_TEST_SERVER_JAVA_OPTS "' bash " ZKLOCK_TEST_SHARED_SERVER_SCRIPT
                        " " + cmd + " " + file.string()).c_str());
  };
  REQUIRE(shared_server_sh("start") == 0);
  struct stop_at_end {
    decltype(shared_server_sh)& stop;
    ~stop_at_end() { stop("stop"); }
  } stopper{shared_server_sh};
  std::string connect;
  std::ifstream(file) >> connect;
  std::string dir;
  std::ifstream(file.string() + ".dir") >> dir;
  expect_fixture_settings(fs::path(dir) / "server" / "zoo.cfg");  // a default zk_server's
  struct environment {
    explicit environment(const fs::path& f) { ::setenv("ZKLOCK_TEST_SHARED_SERVER", f.c_str(), 1); }
    ~environment() { ::unsetenv("ZKLOCK_TEST_SHARED_SERVER"); }
  } env(file);
  {
    zk_server a, b;
    REQUIRE(a.shared());
    REQUIRE(b.shared());
    CHECK(a.address() == connect);
    CHECK(a.chroot().rfind("/zklock-test/" + std::to_string(::getpid()) + "-", 0) == 0);
    CHECK(a.chroot() != b.chroot());
    CHECK(a.connect_string() == connect + a.chroot());
    CHECK(a.connect_via("127.0.0.1:1,127.0.0.1:2") == "127.0.0.1:1,127.0.0.1:2" + a.chroot());
    CHECK(create_node(a.connect_string(), "/inside") == "");  // the chroot exists
    CHECK(create_node(connect, "/outside") == "not authenticated");
    CHECK(a.running());
    CHECK(a.ruok());
    CHECK(a.mode() == "standalone");
    CHECK(a.four_letter("srvr").find("Mode: standalone") != std::string::npos);
    using Catch::Matchers::Contains;
    const auto private_only = Contains("mark this test's server private");
    CHECK_THROWS_WITH(a.stop(), private_only);
    CHECK_THROWS_WITH(a.kill(), private_only);
    CHECK_THROWS_WITH(a.pause(), private_only);
    CHECK_THROWS_WITH(a.resume(), private_only);
    CHECK_THROWS_WITH(a.start(), private_only);
    CHECK_THROWS_WITH(a.restart(), private_only);
    CHECK_THROWS_WITH(a.pid(), private_only);
    CHECK_THROWS_WITH(a.log_path(), private_only);
    CHECK_THROWS_WITH(a.data_dir(), private_only);
    CHECK(a.ruok());

    // own_process, or any option that is not the default's: a server of its own
    zk_server mine(own);
    CHECK_FALSE(mine.shared());
    CHECK(mine.chroot().empty());
    CHECK(mine.port() != a.port());
    CHECK(mine.pid() > 0);
    CHECK(mine.connect_via("127.0.0.1:1") == "127.0.0.1:1");
    server_options slower;
    slower.tick_time_ms = 300;
    zk_server other(slower);
    CHECK_FALSE(other.shared());
    CHECK(other.port() != a.port());
  }
  // the variable naming a file that is not there: a server of its own
  fs::rename(file, file.string() + ".away");
  {
    zk_server s;
    CHECK_FALSE(s.shared());
    CHECK(s.connect_string() == "127.0.0.1:" + std::to_string(s.port()));
  }
  fs::rename(file.string() + ".away", file);
  CHECK(zk_server().ruok());  // the shared server still serves
}
