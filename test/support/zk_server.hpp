// Real ZooKeeper servers for tests, from the Debian `zookeeper` package (3.8, Java 17): a
// standalone server or an N-member ensemble on free 127.0.0.1 ports, each with its own temp
// dir /tmp/zklock-test-<test pid>-XXXXXX (zoo.cfg, data/, server.log) and admin.enableServer=false.
// Servers can be stopped, killed, paused (SIGSTOP), resumed and restarted on the same port and
// dataDir.
//
// Cleanup: destructors kill and reap every server and remove its dir (never throwing). If the
// test process dies instead, the kernel kills the servers (PR_SET_PDEATHSIG; servers are always
// forked from a thread that lives as long as the process, so starting one from a short-lived
// thread is fine), an atexit handler covers exit() without unwinding, and creating a fixture
// sweeps the dirs (and any leftover server) of test processes that no longer exist.
//
// Environment overrides: ZKLOCK_TEST_JAVA (java binary), ZKLOCK_TEST_ZK_CLASSPATH.
//
// A shared server: where ZKLOCK_TEST_SHARED_SERVER names a file holding "127.0.0.1:PORT" (ctest
// gives the integration tests the file its fixture test writes: test/support/shared_server.sh), a
// zk_server with default options starts no JVM: it is a chroot of its own (/zklock-test/<pid>-<n>)
// on that server, created by the constructor, and its connect_string() ends with it. The root of a
// shared server is read-only, so a session that left the chroot out fails ("not authenticated"):
// a connect string a test builds of endpoints of its own (a proxy, several) takes connect_via().
// What needs a process of its own (stop, kill, pause, resume, start, restart, pid, log_path,
// data_dir) throws on a shared server: give that test's server `own_process` (or options of
// its own). Server-wide counts of its four-letter words must be restricted to chroot().
#pragma once

#include "four_letter.hpp"  // four_letter(port, word)

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace zklock::test {

/// A setting of test/support/zoo-fixture.cfg ("tickTime", ...): the zoo.cfg settings of the tests'
/// servers, server_options' defaults here and the shared server's (shared_server.sh reads the same
/// file). Throws if the file does not set `key`.
std::string fixture_setting(const std::string& key);

struct server_options {
  int tick_time_ms = std::stoi(fixture_setting("tickTime"));
  int max_session_timeout_ms = std::stoi(fixture_setting("maxSessionTimeout"));
  bool force_sync = fixture_setting("forceSync") == "yes";  // false -> forceSync=no
  std::chrono::milliseconds start_timeout{30000};
  // --- additions ---
  std::uint16_t client_port = 0;    // 0: a free port; otherwise this one (standalone only)
  int init_limit = std::stoi(fixture_setting("initLimit"));  // ticks (ensemble)
  int sync_limit = std::stoi(fixture_setting("syncLimit"));  // ticks (ensemble)
  std::string log_level = "info";   // server.log level: trace, debug, info, warn, error, off
  int container_check_interval_ms = 0;  // >0: how often the server reaps empty containers
                                        // (-Dznode.container.checkIntervalMs; the default is 60 s)
  bool own_process = false;  // a server of its own even where the tests share one (any other
                             // option that is not the default's means one too)

  bool operator==(const server_options&) const = default;
};

/// A free TCP port on 127.0.0.1 (bound and released), below the kernel's ephemeral range where
/// that leaves room: a server started again on its port never finds it taken by an outgoing
/// connection's local port. Another process (a test running in parallel) may take it before our
/// server binds it: zk_server and zk_ensemble then see their server exit with "Address already
/// in use" (port_in_use) and start again on new ports, and they never take another process's
/// server on that port for theirs (it must name our dataDir).
std::uint16_t free_port();

/// A server could not bind its port: it was taken after free_port() chose it.
struct port_in_use : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `n` distinct free ports (all held open while choosing, so they differ from each other).
std::vector<std::uint16_t> free_ports(int n);

class server_process;

/// One standalone server (ZooKeeperServerMain).
class zk_server {
 public:
  // Starts it, waits for "imok" and Mode: standalone; or, with default options where the tests
  // share a server (ZKLOCK_TEST_SHARED_SERVER), creates a chroot of its own on that one.
  explicit zk_server(server_options opts = {});
  ~zk_server();                                  // kills it, removes its dir (shared: nothing)
  zk_server(const zk_server&) = delete;
  zk_server& operator=(const zk_server&) = delete;

  std::string connect_string() const;  // "127.0.0.1:PORT", shared: "127.0.0.1:PORT/zklock-test/..."
  std::string address() const;         // "127.0.0.1:PORT", the chroot left out
  // A connect string of the test's own endpoints ("host:port,..."; proxies to this server, others)
  // for this server's data: `hosts` + chroot(), so it works on the shared server too.
  std::string connect_via(const std::string& hosts) const;
  std::uint16_t port() const;          // the server's, shared too (a proxy's connect string: connect_via)
  bool shared() const;                 // the tests' shared server, under chroot()
  std::string chroot() const;          // "/zklock-test/<pid>-<n>" on a shared server, "" on its own
  pid_t pid() const;     // -1 when not running
  bool running() const;  // false once the process has exited, however that happened
  void stop();           // SIGTERM and wait (SIGKILL after 5 s)
  void kill();           // SIGKILL and reap
  void pause();          // SIGSTOP
  void resume();         // SIGCONT
  void start();          // again on the same port and dataDir; waits until it serves
  void restart();        // stop + start
  bool ruok() const;     // "imok" within 1 s
  std::string four_letter(const std::string& cmd) const;  // 3 s timeout
  std::string mode() const;      // "standalone", or "" when not serving
  std::string log_path() const;  // the server's stdout/stderr (slf4j-simple log)
  std::string data_dir() const;

 private:
  server_process& own(const char* what) const;  // throws on a shared server

  std::unique_ptr<server_process> p_;  // null when shared
  std::uint16_t shared_port_ = 0;
  std::string chroot_;
};

/// Creates `path` (persistent, empty, open to all) with the C client on the server at `connect` (a
/// connect string, its chroot included): "" when it did, otherwise the C client's message for the
/// error ("not authenticated", "node exists", ...).
std::string create_node(const std::string& connect, const std::string& path);

/// How many threads of process `pid` can still run: those whose state (/proc/PID/task/TID/stat)
/// is neither stopped (T, t) nor exited (Z, X). 0 once a SIGSTOP has stopped them all.
int threads_running(pid_t pid);

/// An N-member quorum (QuorumPeerMain, standaloneEnabled=false) on free loopback ports.
class zk_ensemble {
 public:
  // Starts all members and waits until every one serves as leader or follower.
  explicit zk_ensemble(int members = 3, server_options opts = {});
  ~zk_ensemble();
  zk_ensemble(const zk_ensemble&) = delete;
  zk_ensemble& operator=(const zk_ensemble&) = delete;

  std::string connect_string() const;  // "127.0.0.1:p1,127.0.0.1:p2,..."
  int size() const;
  void stop(int i);
  void kill(int i);
  void pause(int i);
  void resume(int i);
  void start(int i);    // waits until the running, unpaused members form a quorum again; a port
                        // taken while the member was down is waited for up to 5 s
  void restart(int i);  // stop + start
  bool ruok(int i) const;
  std::uint16_t port(int i) const;
  std::string four_letter(int i, const std::string& cmd) const;
  // --- additions ---
  std::string connect_string(int i) const;  // one member only
  pid_t pid(int i) const;
  bool running(int i) const;
  std::string mode(int i) const;  // "leader", "follower", or "" when not serving
  int leader() const;             // index of the member that reports Mode: leader, or -1
  std::string log_path(int i) const;
  void wait_quorum();             // as the constructor: running, unpaused members serve
  void start_all();               // starts every member not running, then waits for the quorum

 private:
  std::vector<std::unique_ptr<server_process>> members_;
  server_options opts_;
};

}  // namespace zklock::test
