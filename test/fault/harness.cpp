// zklock-faultharness: a fault-injection harness on a real 3-node ZooKeeper ensemble (issue 10
// §1 and the §2 measurements), in the spirit of Jepsen and etcd's functional tester, sized for
// a 2-core machine.
//
// Per run of a scenario: K client processes (zklock_fault_worker: a zklock::mutex, or with
// --recipe a zklock::shared_mutex's read and write sides or a zklock::semaphore's leases; in
// --interop also a Curator InterProcessMutex and a kazoo Lock) contend for one lock path through a TCP proxy each (one
// proxy per client and server, tcp_proxy.hpp, on this process's io_context); a nemesis applies
// the scenario's faults on a seeded random schedule; every holder writes each step of its
// critical section to the fenced resource below; then the faults are healed, the clients told
// to stop (SIGUSR1: go idle, keep the session), the lock dir and the servers' watches
// inspected, the clients ended (SIGTERM), and the checker replays the resource's journal.
//
// The resource (a loopback TCP server on this process's io_context) accepts a write only with a
// fencing token >= the highest it has accepted, and journals every message with its own receive
// time. All times are CLOCK_MONOTONIC, the same clock in every process here.
//
// Run with --help for the options; every run prints its seed and the command that replays it.
#include "resource_client.hpp"
#include "tcp_proxy.hpp"
#include "zk_server.hpp"

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using zklock::fault::mono_ns;

#ifndef ZKLOCK_FAULT_WORKER
#define ZKLOCK_FAULT_WORKER "zklock_fault_worker"
#endif
#ifndef ZKLOCK_FAULT_SOURCE_DIR
#define ZKLOCK_FAULT_SOURCE_DIR "."
#endif
#ifndef ZKLOCK_CLI
#define ZKLOCK_CLI "zklock"
#endif

namespace {

// ---------------------------------------------------------------------------------------------
// options

struct options {
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::vector<std::string> peers;  // --interop: curator, kazoo or both
  bool interop = false;
  std::vector<std::string> scenarios;
  int runs = 1;
  int faults = 1;
  int clients = 3;
  int session_timeout_ms = 3000;
  int hold_ms = 20;
  int stuck_bound_ms = 0;  // 0: 5 session timeouts + 10 s
  std::string work;
  bool keep = false;
  std::string json;
  std::string window;  // zklock, curator, kazoo, all
  int window_runs = 3;
  int window_session_timeout_ms = 6000;
  std::string recipe = "mutex";  // mutex, shared (zklock::shared_mutex), semaphore
  int leases = 2;                // semaphore: max_leases
  int write_percent = 30;        // shared: the share of acquisitions taking the write side
};

const std::vector<std::string> all_scenarios = {
    "none",         "kill-leader",     "kill-follower", "pause-server-short", "pause-server-long",
    "partition-short", "partition-long", "cut",        "pause-client",       "restart-ensemble",
    "long-hold",       "mixed"};
// what "mixed" draws from
const std::vector<std::string> fault_kinds = {
    "kill-leader",     "kill-follower",  "pause-server-short", "pause-server-long", "partition-short",
    "partition-long",  "cut",            "pause-client",       "restart-ensemble"};

void usage() {
  std::cout << R"(usage: zklock-faultharness [options]
  --seed N               replay this seed (default: a new one, printed)
  --scenarios A,B,...    default all: )";
  for (auto& s : all_scenarios) std::cout << s << (&s == &all_scenarios.back() ? "\n" : ",");
  std::cout << R"(  --runs N               runs per scenario (default 1)
  --faults N             faults per run (default 1)
  --clients K            zklock client processes (default 3)
  --interop curator|kazoo|both
                         add a Curator InterProcessMutex and/or a kazoo Lock
                         (extra_lock_patterns=["-lock-"]) client on the same path ("both" puts
                         Curator and kazoo on one path, which they do not share safely: see
                         docs/RELIABILITY.md)
  --recipe mutex|shared|semaphore
                         what the zklock clients take (default mutex): shared is
                         zklock::shared_mutex, each acquisition the write side with probability
                         --writers (seeded), else the read side; semaphore is a lease of
                         zklock::semaphore with --leases. The checker checks that recipe's
                         property (shared: a writer overlaps nobody, readers overlap each other;
                         semaphore: never more than N sections at once)
  --leases N             semaphore: max_leases (default 2)
  --writers PERCENT      shared: write acquisitions in percent (default 30)
  --session-timeout MS   clients' session timeout (default 3000; servers' tickTime is 200 ms)
  --hold-ms MS           critical section length (default 20)
  --stuck-bound MS       a wait for the lock longer than this is a stuck waiter
                         (default 5 session timeouts + 10 s)
  --window zklock|zklock-lib|curator|kazoo|all (or a comma list)
                         instead: measure the partition window (issue 10 §2): holder behind a
                         blackholed proxy, waiter connected directly; window = holder's stop
                         (zklock exec's command exit / the library guard's lost notification /
                         Curator SUSPENDED, LOST / kazoo listener) minus the successor's grant
  --window-runs N        runs per client (default 3)
  --window-session-timeout MS  (default 6000)
  --work DIR             logs and journals here (default: a temp dir, removed unless --keep)
  --keep                 keep the work dir
  --json FILE            write the results as JSON
Exit status: 0 when every invariant held (for zklock clients: no overlap except behind a
paused holder, no stale write accepted, no stuck waiter, no node or watch left, every window
negative), 1 otherwise, 2 on a usage error.
)";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string x; std::getline(in, x, sep);)
    if (!x.empty()) out.push_back(x);
  return out;
}

// ---------------------------------------------------------------------------------------------
// child processes

struct child {
  std::string who, kind;  // kind: zklock, curator, kazoo, exec
  pid_t pid = -1;
  int status = -1;  // wait status once reaped
  bool reaped = false;
};

// fork + exec with PR_SET_PDEATHSIG (SIGKILL): a client never outlives the harness. Called from
// the main thread only (PDEATHSIG follows the forking thread).
pid_t spawn(const std::vector<std::string>& args, const std::string& log, const std::string& cwd = "") {
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

// ---------------------------------------------------------------------------------------------
// the fenced resource

struct record {
  std::string kind, who;
  std::int64_t token = 0;
  std::int64_t t_client = 0, t_recv = 0;
  std::string extra;
  int verdict = 0;  // writes: 1 accepted, -1 rejected; 0 not a write
};

bool is_write(const std::string& k) { return k == "grant" || k == "write" || k == "end"; }

// The side a section holds, from its grant ("... side=read"); peers that do not say are exclusive.
std::string side_of_grant(const std::string& extra) {
  auto at = extra.find("side=");
  if (at == std::string::npos) return "exclusive";
  return extra.substr(at + 5, extra.find(' ', at) == std::string::npos ? std::string::npos : extra.find(' ', at) - at - 5);
}
bool is_reader(const std::string& side) { return side == "read"; }

class resource {
 public:
  // A one-shot action on the next message of `kind` (from anyone): returns text appended to the
  // reply ("HOLD 5000", "HOLD 400 PAUSE"). Runs on the io thread.
  using action = std::function<std::string(const record&)>;

  // How writes are fenced, by recipe:
  //  mutex: a write is accepted with a token >= the highest accepted.
  //  shared: a writer's write with a token >= the highest accepted from anyone (a reader granted
  //    after it makes it stale), a reader's with a token >= the highest accepted from a writer
  //    (readers' sections overlap each other legitimately, their order does not matter).
  //  semaphore: every write is accepted. Leases are not exclusive: N holders hold at once, and a
  //    newer lease's token says nothing about an older one's being gone, so no order of tokens
  //    can tell a stale holder from a live one (docs/RELIABILITY.md).
  explicit resource(asio::io_context& ioc, std::string recipe = "mutex")
      : acceptor_(ioc, {asio::ip::make_address("127.0.0.1"), 0}), recipe_(std::move(recipe)) {
    accept();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  // `only`: the trigger fires on the first message of `kind` for which it returns true.
  void arm(std::string kind, action a, std::function<bool(const record&)> only = nullptr) {
    std::lock_guard lk(m_);
    trigger_kind_ = std::move(kind);
    trigger_ = std::move(a);
    trigger_only_ = std::move(only);
    fired_ = std::nullopt;
  }
  void disarm() {
    std::lock_guard lk(m_);
    trigger_ = nullptr;
  }
  // Waits until the armed trigger fired; returns the record that fired it.
  std::optional<record> wait_fired(std::chrono::milliseconds bound) {
    std::unique_lock lk(m_);
    cv_.wait_for(lk, bound, [&] { return fired_.has_value(); });
    if (!fired_) trigger_ = nullptr;
    return fired_;
  }
  // Waits until pred(journal) holds.
  bool wait_for(std::chrono::milliseconds bound, const std::function<bool(const std::vector<record>&)>& pred) {
    std::unique_lock lk(m_);
    return cv_.wait_for(lk, bound, [&] { return pred(journal_); });
  }
  std::vector<record> journal() {
    std::lock_guard lk(m_);
    return journal_;
  }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      s.set_option(asio::ip::tcp::no_delay(true));
      auto conn = std::make_shared<connection>(std::move(s));
      read(conn);
      accept();
    });
  }
  struct connection {
    explicit connection(asio::ip::tcp::socket s) : sock(std::move(s)) {}
    asio::ip::tcp::socket sock;
    asio::streambuf in;
    std::string out;
  };
  void read(std::shared_ptr<connection> c) {
    asio::async_read_until(c->sock, c->in, '\n', [this, c](boost::system::error_code ec, std::size_t n) {
      if (ec) return;
      std::string line(asio::buffers_begin(c->in.data()), asio::buffers_begin(c->in.data()) + n - 1);
      c->in.consume(n);
      c->out = handle(line) + "\n";
      asio::async_write(c->sock, asio::buffer(c->out), [this, c](boost::system::error_code ec, std::size_t) {
        if (!ec) read(c);
      });
    });
  }
  std::string handle(const std::string& line) {
    record r;
    r.t_recv = mono_ns();
    std::istringstream in(line);
    in >> r.kind >> r.who >> r.token >> r.t_client;
    std::getline(in, r.extra);
    if (!r.extra.empty() && r.extra[0] == ' ') r.extra.erase(0, 1);
    std::string reply = "OK";
    action fire;
    {
      std::lock_guard lk(m_);
      if (r.kind == "grant") reader_[{r.who, r.token}] = is_reader(side_of_grant(r.extra));
      if (is_write(r.kind)) {
        const bool reader = recipe_ == "shared" && reader_[{r.who, r.token}];
        const std::int64_t bar = recipe_ == "semaphore" ? 0 : reader ? highest_writer_ : highest_;
        if (r.token >= bar) {
          highest_ = std::max(highest_, r.token);
          if (!reader) highest_writer_ = std::max(highest_writer_, r.token);
          r.verdict = 1;
        } else {
          r.verdict = -1;
          reply = "REJECT " + std::to_string(bar);
        }
      }
      if (trigger_ && r.kind == trigger_kind_ && r.verdict >= 0 && (!trigger_only_ || trigger_only_(r)))
        std::swap(fire, trigger_);
    }
    if (fire) {
      std::string more = fire(r);
      if (!more.empty()) reply += " " + more;
    }
    std::lock_guard lk(m_);
    if (fire) fired_ = r;
    journal_.push_back(std::move(r));
    cv_.notify_all();
    return reply;
  }

  asio::ip::tcp::acceptor acceptor_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<record> journal_;
  std::string recipe_;
  std::int64_t highest_ = 0;         // the highest token accepted
  std::int64_t highest_writer_ = 0;  // shared: the highest token accepted from a writer
  std::map<std::pair<std::string, std::int64_t>, bool> reader_;  // (who, token) -> a reader's section
  std::string trigger_kind_;
  action trigger_;
  std::function<bool(const record&)> trigger_only_;
  std::optional<record> fired_;
};

// ---------------------------------------------------------------------------------------------
// a lock dir's leftovers, seen by a session of our own (direct to the ensemble)

struct leftovers {
  int nodes = -1;
  std::vector<std::string> node_names;
  int watches = 0;
  std::vector<std::string> watch_lines;
};

int count_nodes(const std::string& connect, const std::string& dir, std::vector<std::string>* names) {
  asio::io_context ioc;
  int n = -1;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        zklock::session_options o;
        o.connect = connect;
        o.session_timeout = 10s;
        zklock::session s{ex, o};
        auto [cec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable));
        if (cec) co_return;
        auto [gec, kids] = co_await s.async_get_children(dir, asio::as_tuple(asio::use_awaitable));
        if (!gec) {
          n = static_cast<int>(kids.children.size());
          if (names) {
            // "name owner=0x<session>": whose node it is
            for (auto& c : kids.children) {
              auto [eec, st] = co_await s.async_exists(dir + "/" + c, asio::as_tuple(asio::use_awaitable));
              std::ostringstream owner;
              if (!eec && st) owner << " owner=0x" << std::hex << st->ephemeral_owner;
              names->push_back(c + owner.str());
            }
          }
        } else if (gec == zklock::zk_errc::no_node) {
          n = 0;
        }
        co_await s.async_close(asio::as_tuple(asio::use_awaitable));
      },
      asio::detached);
  ioc.run_for(20s);
  return n;
}

// `wchp` (path -> sessions) of every serving member: watches on the lock dir or its children.
int count_watches(const zklock::test::zk_ensemble& ens, const std::string& dir, std::vector<std::string>* lines) {
  int n = 0;
  for (int i = 0; i < ens.size(); ++i) {
    std::istringstream in(ens.four_letter(i, "wchp"));
    bool ours = false;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] == '/') {
        ours = line == dir || line.rfind(dir + "/", 0) == 0;
      } else if (ours && line.find("0x") != std::string::npos) {
        ++n;
        if (lines) lines->push_back("server " + std::to_string(i) + ": " + line);
      }
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// the checker

struct run_result {
  std::string scenario;
  int run = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> faults;  // what the nemesis did
  int acquisitions = 0;
  int overlaps = 0;          // real-time overlaps of critical sections, not explained by a pause
  int overlaps_paused = 0;   // overlaps where the earlier holder was paused (SIGSTOP)
  int stale_accepted = 0;    // writes by a holder after a newer holder was granted, accepted
  int stale_rejected = 0;    // the same, rejected by the fencing check
  int writes = 0;
  double max_grant_delay_ms = 0;  // lock free (released) -> next grant
  double max_wait_ms = 0;
  int stuck = 0;
  int nodes_left = -1;
  int watches_left = -1;
  long rss_before_kb = 0, rss_after_kb = 0;  // sum over the zklock clients
  int lost = 0;           // sections ended by a lost lock
  int dead_grants = 0;
  int peer_leftovers = 0;
  int self_pauses = 0;     // holders stopped between their check and their write  // nodes and watches left by Curator / kazoo clients    // guards handed out already past their validity deadline (not used)
  int worker_failures = 0;
  // shared: write sections; reader pairs that overlapped (the read side really shared)
  int write_sections = 0;
  int reader_overlaps = 0;
  // semaphore: most sections at once (holders paused during theirs not counted), grants that
  // made it N, writes that reached the resource while N other sections were open
  int max_concurrent = 0;
  int at_capacity = 0;
  int over_capacity_writes = 0;
  std::vector<std::string> notes;
  std::map<std::string, int> per_kind_overlaps;  // earlier holder's kind -> unexplained overlaps
  bool zklock_ok() const {
    return overlaps == 0 && stale_accepted == 0 && stuck == 0 && nodes_left == 0 && watches_left == 0 &&
           worker_failures == 0;
  }
};

struct pause_interval {
  std::string who;
  std::int64_t from = 0, to = 0;
};

struct section {
  std::string who;
  std::string side = "exclusive";  // exclusive, read, write, lease
  std::int64_t token = 0;
  std::int64_t acquired_at = 0;  // its acquire (the last before the grant)
  std::int64_t start = 0, end = 0;
  bool released_ok = false;
  std::int64_t released_at = 0;
  bool lost = false;
};

// What the recipe lets hold together: the mutex nothing, the shared lock readers, the semaphore
// up to N (capacity) of anything.
struct recipe_rule {
  std::string recipe = "mutex";
  int capacity = 1;
  bool conflict(const section& a, const section& b) const {
    return recipe != "shared" || !is_reader(a.side) || !is_reader(b.side);
  }
};

// The longest wait for a grant while the lock (a lease) was free, for the shared lock and the
// semaphore: from the moment fewer than `capacity` conflicting sections started before this one
// were held (a holder's successful release; or this one's acquire, if later) to its grant.
// Grants that followed a holder's loss (no release seen) are not counted, as for the mutex.
// The semaphore's grants go one at a time through its internal mutex (FIFO): a waiter behind
// another waits for that one's grant too, so its wait counts from the previous grant at the
// earliest.
double max_free_grant_delay_ms(const std::vector<section>& v, const recipe_rule& rule) {
  double worst = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& s = v[i];
    std::int64_t ta = s.acquired_at ? s.acquired_at : s.start;
    if (rule.recipe == "semaphore" && i > 0) ta = std::max(ta, v[i - 1].start);
    struct ev {
      std::int64_t t;
      int d;
      bool tainted;
    };
    std::vector<ev> evs;
    int count = 0;
    for (std::size_t k = 0; k < i; ++k) {
      const auto& o = v[k];
      if (o.who == s.who || !rule.conflict(o, s)) continue;
      const std::int64_t rel = o.released_ok ? o.released_at : o.end;
      if (o.start <= ta && rel > ta) ++count;
      if (o.start > ta) evs.push_back({o.start, +1, false});
      if (rel > ta && rel <= s.start) evs.push_back({rel, -1, !o.released_ok});
    }
    std::sort(evs.begin(), evs.end(), [](auto& a, auto& b) { return a.t < b.t; });
    constexpr std::int64_t held = std::numeric_limits<std::int64_t>::min();
    std::int64_t free_from = count < rule.capacity ? ta : held;
    bool tainted = false;
    for (auto& e : evs) {
      count += e.d;
      if (count >= rule.capacity) {
        free_from = held;
      } else if (free_from == held) {
        free_from = e.t;
        tainted = e.tainted;
      }
    }
    if (free_from != held && !tainted) worst = std::max(worst, (s.start - free_from) / 1e6);
  }
  return worst;
}

void check(run_result& r, const std::vector<record>& j, const std::vector<pause_interval>& pauses,
           const std::map<std::string, std::string>& kind_of, std::int64_t stuck_bound_ns, std::int64_t t_end,
           const recipe_rule& rule = {}) {
  // sections, keyed by holder and token
  std::map<std::pair<std::string, std::int64_t>, section> secs;
  std::map<std::string, std::pair<std::string, std::int64_t>> current;  // who -> its open section
  std::map<std::string, std::int64_t> waiting_since;                    // who -> acquire start
  std::map<std::string, std::int64_t> last_acquire;
  std::vector<std::tuple<std::int64_t, std::int64_t, bool>> grants;  // (time, token, not a reader)
  for (auto& x : j) {
    if (x.kind == "acquire") {
      waiting_since[x.who] = x.t_client;
      last_acquire[x.who] = x.t_client;
    } else if (x.kind == "grant" || x.kind == "dead_grant" || x.kind == "acquire_error" || x.kind == "idle") {
      if (auto it = waiting_since.find(x.who); it != waiting_since.end()) {
        double w = (x.t_client - it->second) / 1e6;
        r.max_wait_ms = std::max(r.max_wait_ms, w);
        if (x.t_client - it->second > stuck_bound_ns) {
          ++r.stuck;
          r.notes.push_back(x.who + " waited " + std::to_string(int(w)) + " ms for the lock");
        }
        waiting_since.erase(it);
      }
    }
    if (x.kind == "dead_grant") {
      ++r.dead_grants;
      r.notes.push_back("dead grant: " + x.who + " got a guard already past its validity deadline (" + x.extra + ")");
    }
    if (x.kind == "grant") {
      ++r.acquisitions;
      auto& s = secs[{x.who, x.token}];
      s.who = x.who;
      s.side = side_of_grant(x.extra);
      if (s.side == "write") ++r.write_sections;
      s.token = x.token;
      if (auto it = last_acquire.find(x.who); it != last_acquire.end()) s.acquired_at = it->second;
      s.start = s.end = x.t_client;
      current[x.who] = {x.who, x.token};
      grants.push_back({x.t_client, x.token, !is_reader(s.side)});
    }
    if (is_write(x.kind)) ++r.writes;
    if (x.kind == "write" || x.kind == "end" || x.kind == "lost") {
      auto it = secs.find({x.who, x.token});
      if (it != secs.end()) {
        it->second.end = std::max(it->second.end, x.t_client);
        if (x.kind == "lost") {
          it->second.lost = true;
          ++r.lost;
        }
      }
    }
    if (x.kind == "released" && x.extra == "ok") {
      auto it = secs.find({x.who, x.token});
      if (it != secs.end()) {
        it->second.released_ok = true;
        it->second.released_at = x.t_client;
      }
    }
  }
  for (auto& [who, since] : waiting_since)
    if (t_end - since > stuck_bound_ns) {
      ++r.stuck;
      r.notes.push_back(who + " still waiting after " + std::to_string((t_end - since) / 1000000) + " ms");
    }
  // stale writes: received after a holder with a higher token was granted (shared: a
  // conflicting holder, i.e. a writer, or anyone for a writer's write). The semaphore has no
  // stale writes by token order: its leases are not exclusive (see the over-capacity writes).
  std::sort(grants.begin(), grants.end());
  for (auto& x : j) {
    if (!is_write(x.kind) || rule.recipe == "semaphore") continue;
    auto sec = secs.find({x.who, x.token});
    const bool by_reader = rule.recipe == "shared" && sec != secs.end() && is_reader(sec->second.side);
    bool stale = false;
    for (auto& [t, tok, excl] : grants) {
      if (t >= x.t_recv) break;
      if (tok > x.token && (excl || !by_reader)) {
        stale = true;
        break;
      }
    }
    if (!stale) continue;
    if (x.verdict > 0) {
      ++r.stale_accepted;
      r.notes.push_back("stale write ACCEPTED: " + x.kind + " by " + x.who + " token " + std::to_string(x.token));
    } else {
      ++r.stale_rejected;
    }
  }
  // overlaps, in grant order
  std::vector<section> v;
  for (auto& [k, s] : secs) v.push_back(s);
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.start < b.start; });
  auto paused_in = [&](const section& s) {
    return std::any_of(pauses.begin(), pauses.end(),
                       [&](auto& p) { return p.who == s.who && p.from <= s.end && p.to >= s.start; });
  };
  // an overlap (an over-capacity grant) not explained by a pause, charged to `whose` kind
  auto violation = [&](const section& whose, std::string note) {
    ++r.overlaps;
    ++r.per_kind_overlaps[kind_of.count(whose.who) ? kind_of.at(whose.who) : "?"];
    r.notes.push_back(std::move(note));
  };
  if (rule.recipe == "semaphore") {
    // at each grant: the sections open then; more than N is a violation unless one of them
    // was paused (its lease expired while it was stopped: the token cannot fence that)
    for (std::size_t b = 0; b < v.size(); ++b) {
      int open = 1, live = 1;
      bool any_paused = paused_in(v[b]);
      for (std::size_t a = 0; a < b; ++a)
        if (v[a].who != v[b].who && v[a].end > v[b].start) {
          ++open;
          if (paused_in(v[a])) any_paused = true;
          else ++live;
        }
      if (!paused_in(v[b])) r.max_concurrent = std::max(r.max_concurrent, live);
      if (live == rule.capacity && !paused_in(v[b])) ++r.at_capacity;
      if (open <= rule.capacity) continue;
      if (any_paused)
        ++r.overlaps_paused;
      else
        violation(v[b], "OVER CAPACITY: " + std::to_string(open) + " sections at once when " + v[b].who +
                            " was granted (token " + std::to_string(v[b].token) + ")");
    }
    // writes that reached the resource while N other holders, none of them paused, were in
    // their sections: a holder whose lease had gone (paused) and that the resource could not
    // refuse
    for (auto& x : j) {
      if (!is_write(x.kind) || x.kind == "grant") continue;
      int others = 0;
      for (auto& s : v)
        if (s.who != x.who && s.start <= x.t_recv && s.end >= x.t_recv && !paused_in(s)) ++others;
      if (others >= rule.capacity) {
        ++r.over_capacity_writes;
        r.notes.push_back("over-capacity write: " + x.kind + " by " + x.who + " token " + std::to_string(x.token) +
                          " with " + std::to_string(others) + " other sections open");
      }
    }
    r.max_grant_delay_ms = max_free_grant_delay_ms(v, rule);
    return;
  }
  // counted per critical section that overlapped a later holder's (shared: a writer's with
  // anyone's, a reader's with a writer's; readers overlapping each other are counted apart)
  for (std::size_t a = 0; a < v.size(); ++a) {
    for (std::size_t b = a + 1; b < v.size() && v[b].start < v[a].end; ++b) {
      if (v[b].who == v[a].who) continue;
      if (!rule.conflict(v[a], v[b])) {
        ++r.reader_overlaps;
        continue;
      }
      if (paused_in(v[a]))
        ++r.overlaps_paused;
      else
        violation(v[a], "OVERLAP: " + v[a].who + " (token " + std::to_string(v[a].token) + ", " +
                            (kind_of.count(v[a].who) ? kind_of.at(v[a].who) : "?") + ", " + v[a].side + ") until +" +
                            std::to_string((v[a].end - v[b].start) / 1000000) + " ms after " + v[b].who + " (" +
                            v[b].side + ") was granted");
      break;
    }
  }
  if (rule.recipe == "shared") {
    r.max_grant_delay_ms = max_free_grant_delay_ms(v, rule);
    return;
  }
  // grant delay while the lock was free: previous holder released -> next grant
  for (std::size_t i = 1; i < v.size(); ++i) {
    auto& prev = v[i - 1];
    if (!prev.released_ok) continue;
    std::int64_t free_from = prev.released_at;
    if (auto it = last_acquire.find(v[i].who); it != last_acquire.end()) {
      // the acquire that led to this grant: the last "acquire" before it
      std::int64_t acq = 0;
      for (auto& x : j)
        if (x.kind == "acquire" && x.who == v[i].who && x.t_client <= v[i].start) acq = x.t_client;
      free_from = std::max(free_from, acq);
    }
    r.max_grant_delay_ms = std::max(r.max_grant_delay_ms, (v[i].start - free_from) / 1e6);
  }
}

// ---------------------------------------------------------------------------------------------
// a run

std::string curator_classpath() {
  const char* jars[] = {"curator-framework", "curator-client", "curator-recipes", "zookeeper", "zookeeper-jute",
                        "guava", "failureaccess", "slf4j-api", "slf4j-nop", "netty-handler", "netty-transport",
                        "netty-common", "netty-buffer", "netty-resolver", "netty-codec",
                        "netty-transport-native-epoll", "netty-transport-native-unix-common", "commons-lang3"};
  std::string cp;
  for (auto j : jars) {
    std::string p = std::string("/usr/share/java/") + j + ".jar";
    if (fs::exists(p)) cp += (cp.empty() ? "" : ":") + p;
  }
  return cp;
}

// Compiles the Curator client into `work`/classes once.
std::string curator_classes(const std::string& work) {
  std::string classes = work + "/classes";
  if (fs::exists(classes + "/CuratorWorker.class")) return classes;
  fs::create_directories(classes);
  // (it warns that sun.misc.Signal, used for SIGUSR1, is internal: kept in its log)
  std::string cmd = "javac -nowarn -cp '" + curator_classpath() + "' -d '" + classes + "' '" +
                    ZKLOCK_FAULT_SOURCE_DIR + "/CuratorWorker.java' > '" + work + "/javac.log' 2>&1";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("javac CuratorWorker.java failed: see " + work + "/javac.log");
  return classes;
}

std::vector<std::string> client_command(const std::string& kind, const options& o, std::uint16_t res_port,
                                        const std::string& connect, const std::string& path, const std::string& who,
                                        const std::string& mode, int session_timeout_ms, const std::string& work,
                                        const std::string& recipe_spec = "") {
  std::vector<std::string> tail = {std::to_string(res_port), connect, path, who, std::to_string(session_timeout_ms),
                                   std::to_string(o.hold_ms), mode};
  if (!recipe_spec.empty()) tail.push_back(recipe_spec);  // zklock_fault_worker only
  std::vector<std::string> cmd;
  if (kind == "zklock" || kind == "zklock-lib") {
    cmd = {ZKLOCK_FAULT_WORKER};
  } else if (kind == "curator") {
    cmd = {"java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
           "-cp", curator_classpath() + ":" + curator_classes(work), "CuratorWorker"};
  } else {
    cmd = {"/usr/bin/python3", std::string(ZKLOCK_FAULT_SOURCE_DIR) + "/kazoo_worker.py"};
  }
  cmd.insert(cmd.end(), tail.begin(), tail.end());
  return cmd;
}

struct harness {
  options o;
  std::string work;
  zklock::test::zk_ensemble* ens = nullptr;
  std::uint64_t base_seed = 0;

  std::int64_t T_ns() const { return std::int64_t(o.session_timeout_ms) * 1000000; }
  std::chrono::milliseconds T(double f) const { return std::chrono::milliseconds(std::int64_t(o.session_timeout_ms * f)); }

  run_result run(const std::string& scenario, int run_index) {
    run_result r;
    r.scenario = scenario;
    r.run = run_index;
    r.seed = base_seed ^ (std::hash<std::string>{}(scenario) * 1000003u) ^ std::uint64_t(run_index);
    std::mt19937_64 rng(r.seed);
    auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
    auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };

    const std::string dir = "/fault/" + scenario + "-" + std::to_string(base_seed % 1000000) + "-" +
                            std::to_string(run_index);
    const std::string run_dir = work + "/" + scenario + "-" + std::to_string(run_index);
    fs::create_directories(run_dir);

    asio::io_context ioc;
    auto guard = asio::make_work_guard(ioc);
    resource res(ioc, o.recipe);
    std::vector<std::string> kinds(o.clients, "zklock");
    for (auto& p : o.peers) kinds.push_back(p);
    const int k = static_cast<int>(kinds.size());
    std::vector<std::vector<std::unique_ptr<zklock::test::tcp_proxy>>> proxies(k);
    std::vector<child> clients(k);
    std::map<std::string, int> index_of;
    std::map<std::string, std::string> kind_of;
    for (int c = 0; c < k; ++c) {
      std::string connect;
      for (int s = 0; s < ens->size(); ++s) {
        proxies[c].push_back(std::make_unique<zklock::test::tcp_proxy>(ioc.get_executor(), ens->port(s)));
        connect += (connect.empty() ? "" : ",") + proxies[c].back()->connect_string();
      }
      clients[c].who = kinds[c] + "-" + std::to_string(c);
      clients[c].kind = kinds[c];
      index_of[clients[c].who] = c;
      kind_of[clients[c].who] = kinds[c];
      // the worker's recipe; the shared lock's read/write draws are seeded by the run's seed
      std::string spec;
      if (o.recipe == "shared")
        spec = "shared:" + std::to_string(o.write_percent) + ":" + std::to_string((r.seed + std::uint64_t(c)) % 1000000007u);
      else if (o.recipe == "semaphore")
        spec = "semaphore:" + std::to_string(o.leases);
      auto cmd = client_command(kinds[c], o, res.port(), connect, dir, clients[c].who, "loop", o.session_timeout_ms, work,
                                spec);
      clients[c].pid = spawn(cmd, run_dir + "/" + clients[c].who + ".log");
    }
    std::thread io([&] { ioc.run(); });
    std::vector<pause_interval> pauses;
    int pause_faults = 0;
    auto on_io = [&](std::function<void()> f) {
      std::promise<void> done;
      asio::post(ioc, [&] {
        f();
        done.set_value();
      });
      done.get_future().wait();
    };
    auto set_blackhole = [&](int c, bool on) {
      on_io([&] {
        for (auto& p : proxies[c]) p->blackhole(on);
      });
    };

    // warm-up: every client granted once (a JVM takes a few seconds to start)
    auto granted_all = [&](const std::vector<record>& j) {
      std::set<std::string> g;
      for (auto& x : j)
        if (x.kind == "grant") g.insert(x.who);
      return static_cast<int>(g.size()) == k;
    };
    if (!res.wait_for(60s, granted_all)) r.notes.push_back("warm-up: not every client was granted within 60 s");
    std::this_thread::sleep_for(300ms);
    for (auto& c : clients)
      if (c.kind == "zklock") r.rss_before_kb += rss_kb(c.pid);

    // the nemesis
    std::function<void(const std::string&)> apply = [&](const std::string& fault) {
      std::ostringstream d;
      d << fault;
      if (fault == "kill-leader" || fault == "kill-follower") {
        int l = ens->leader();
        int victim = l;
        if (fault == "kill-follower" || l < 0) victim = (std::max(l, 0) + 1 + pick(ens->size() - 1)) % ens->size();
        auto down = T(uniform(0.2, 1.0));
        d << " member " << victim << (victim == l ? " (leader)" : " (follower)") << ", down " << down.count() << " ms";
        ens->kill(victim);
        std::this_thread::sleep_for(down);
        ens->start(victim);
      } else if (fault == "pause-server-short" || fault == "pause-server-long") {
        int victim = pick(ens->size());
        auto dur = fault == "pause-server-short" ? T(uniform(0.2, 0.6)) : T(uniform(1.5, 2.0));
        d << " member " << victim << (victim == ens->leader() ? " (leader)" : "") << " for " << dur.count() << " ms";
        ens->pause(victim);
        std::this_thread::sleep_for(dur);
        ens->resume(victim);
        ens->wait_quorum();
      } else if (fault == "partition-short" || fault == "partition-long") {
        bool lng = fault == "partition-long";
        auto dur = lng ? T(uniform(1.5, 2.5)) : T(uniform(0.2, 0.5));
        int hold = static_cast<int>(lng ? 4 * o.session_timeout_ms : dur.count() + o.session_timeout_ms);
        int victim = -1;
        res.arm("grant", [&](const record& x) {
          victim = index_of.count(x.who) ? index_of[x.who] : -1;
          if (victim >= 0)
            for (auto& p : proxies[victim]) p->blackhole(true);  // on the io thread already
          return "HOLD " + std::to_string(hold);
        });
        auto fired = res.wait_fired(T(4) + 10s);
        if (!fired) {
          d << ": no grant to partition";
        } else {
          d << " " << fired->who << " (holding, asked to hold " << hold << " ms) for " << dur.count() << " ms";
          std::this_thread::sleep_for(dur);
          set_blackhole(victim, false);
        }
      } else if (fault == "cut") {
        int how = pick(3);
        if (how == 2) {
          d << ": RST every client's connections while they queue and watch";
          on_io([&] {
            for (auto& ps : proxies)
              for (auto& p : ps) p->reset_all();
          });
        } else {
          std::string kind = how == 0 ? "end" : "acquire";
          auto delay = std::chrono::microseconds(std::int64_t(uniform(0, 3000)));
          d << ": RST a client's connections " << delay.count() << " us after its " << kind
            << (how == 0 ? " (release in flight)" : " (create in flight)");
          res.arm(kind, [&, delay](const record& x) {
            int c = index_of.count(x.who) ? index_of[x.who] : -1;
            if (c >= 0) {
              auto t = std::make_shared<asio::steady_timer>(ioc, delay);
              t->async_wait([&, c, t](boost::system::error_code) {
                for (auto& p : proxies[c]) p->reset_all();
              });
            }
            return std::string();
          });
          auto fired = res.wait_fired(10s);
          d << (fired ? " of " + fired->who : std::string(": never fired"));
          std::this_thread::sleep_for(T(1));
        }
      } else if (fault == "pause-client") {
        // alternately (first this one): the holder stopping itself between its validity check
        // and its write (a GC pause at the worst moment: only the fencing token can stop that
        // write), or SIGSTOP from outside right at the grant
        bool self = pause_faults++ % 2 == 0;
        if (self) ++r.self_pauses;
        auto dur = T(uniform(1.5, 2.5));
        int victim = -1;
        std::int64_t stopped_at = 0;
        // (shared: a writer, whose stale write the fencing check must refuse; a reader's late
        // read is stale only if a writer came in meanwhile)
        res.arm(
            "grant",
            [&, self](const record& x) {
              victim = index_of.count(x.who) ? index_of[x.who] : -1;
              stopped_at = mono_ns();
              if (victim >= 0 && !self) ::kill(clients[victim].pid, SIGSTOP);
              return self ? std::string("HOLD 1000 PAUSE") : std::string("HOLD 1000");
            },
            [&](const record& x) { return o.recipe != "shared" || side_of_grant(x.extra) == "write"; });
        auto fired = res.wait_fired(T(4) + 10s);
        if (!fired || victim < 0) {
          d << ": no grant";
        } else {
          if (self) {
            auto until = std::chrono::steady_clock::now() + 5s;
            while (proc_state(clients[victim].pid) != 'T' && std::chrono::steady_clock::now() < until)
              std::this_thread::sleep_for(1ms);
          }
          d << " " << fired->who << (self ? " (stops itself before a write)" : " (SIGSTOP at its grant)") << " for "
            << dur.count() << " ms";
          std::this_thread::sleep_for(dur);
          ::kill(clients[victim].pid, SIGCONT);
          pauses.push_back({fired->who, stopped_at, mono_ns()});
        }
      } else if (fault == "restart-ensemble") {
        auto down = T(uniform(0.0, 0.3));
        auto t0 = std::chrono::steady_clock::now();
        for (int s = 0; s < ens->size(); ++s) ens->kill(s);
        std::this_thread::sleep_for(down);
        ens->start_all();
        d << ": all killed, down " << down.count() << " ms, serving again after "
          << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
          << " ms";
      } else if (fault == "long-hold") {
        // no fault: a holder keeps the lock 1.5 session timeouts, as a long job would
        int hold = o.session_timeout_ms * 3 / 2;
        res.arm("grant", [hold](const record&) { return "HOLD " + std::to_string(hold); });
        auto fired = res.wait_fired(10s);
        d << (fired ? ": " + fired->who + " holds " + std::to_string(hold) + " ms" : std::string(": no grant"));
        if (fired) std::this_thread::sleep_for(std::chrono::milliseconds(hold + 500));
      } else if (fault == "none") {
        std::this_thread::sleep_for(T(1));
        d << ": no fault for " << o.session_timeout_ms << " ms";
      }
      r.faults.push_back(d.str());
      std::cerr << "  [" << scenario << " #" << run_index << "] " << d.str() << "\n";
    };
    for (int f = 0; f < o.faults; ++f) {
      std::this_thread::sleep_for(std::chrono::milliseconds(int(uniform(200, 1000))));
      apply(scenario == "mixed" ? fault_kinds[pick(int(fault_kinds.size()))] : scenario);
    }

    // heal everything, let it settle, stop the clients
    for (int c = 0; c < k; ++c) {
      set_blackhole(c, false);
      ::kill(clients[c].pid, SIGCONT);
    }
    for (int s = 0; s < ens->size(); ++s)
      if (ens->running(s)) ens->resume(s);
    ens->start_all();
    std::this_thread::sleep_for(1s);
    // t_stop before the signals: a client idle between sections answers at once, possibly
    // before this thread runs again (seen on a loaded machine: an idle report 44 ms before the
    // others', recorded before t_stop, counted that client as stuck)
    const std::int64_t t_stop = mono_ns();
    for (auto& c : clients) ::kill(c.pid, SIGUSR1);
    auto idle_all = [&](const std::vector<record>& j) {
      std::set<std::string> g;
      for (auto& x : j)
        if (x.kind == "idle" && x.t_recv >= t_stop) g.insert(x.who);
      return static_cast<int>(g.size()) == k;
    };
    const std::int64_t stuck_ns =
        o.stuck_bound_ms > 0 ? std::int64_t(o.stuck_bound_ms) * 1000000 : 5 * T_ns() + 10'000'000'000LL;
    if (!res.wait_for(std::chrono::milliseconds(stuck_ns / 1000000), idle_all)) {
      auto j = res.journal();
      for (auto& c : clients) {
        bool idle = std::any_of(j.begin(), j.end(), [&](auto& x) { return x.kind == "idle" && x.who == c.who && x.t_recv >= t_stop; });
        if (!idle) {
          ++r.stuck;
          r.notes.push_back(c.who + " did not stop (no idle report)");
        }
      }
    }
    const std::int64_t t_end = mono_ns();
    // leftovers: a released or lost guard's node is deleted in the background; give it 2 s
    // (the semaphore's nodes are in two dirs: its internal mutex's and its leases')
    const std::vector<std::string> node_dirs =
        o.recipe == "semaphore" ? std::vector<std::string>{dir + "/locks", dir + "/leases"} : std::vector<std::string>{dir};
    leftovers left;
    for (auto until = std::chrono::steady_clock::now() + 2s;;) {
      left.node_names.clear();
      left.watch_lines.clear();
      left.nodes = 0;
      for (auto& d : node_dirs) {
        std::vector<std::string> names;
        int n = count_nodes(ens->connect_string(), d, &names);
        left.nodes = n < 0 || left.nodes < 0 ? -1 : left.nodes + n;
        for (auto& x : names) left.node_names.push_back(d.substr(dir.size()) + (d == dir ? "" : "/") + x);
      }
      left.watches = count_watches(*ens, dir, &left.watch_lines);
      if ((left.nodes == 0 && left.watches == 0) || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(200ms);
    }
    r.nodes_left = left.nodes;
    r.watches_left = left.watches;
    {
      // whose: the clients said their session ids in "hello"
      std::map<std::string, std::string> owner;
      for (auto& x : res.journal())
        if (x.kind == "hello") owner[x.extra] = x.who;
      auto whose = [&](const std::string& line) {
        for (auto& [sid, who] : owner)
          if (line.find(sid) != std::string::npos) return who;
        return std::string("?");
      };
      for (auto& n : left.node_names) {
        auto who = whose(n);
        if (kind_of[who] != "zklock") ++r.peer_leftovers;
        r.notes.push_back("node left: " + dir + (n.rfind('/', 0) == 0 ? "" : "/") + n + " (" + who + ")");
      }
      for (auto& w : left.watch_lines) {
        auto who = whose(w);
        if (kind_of[who] != "zklock") ++r.peer_leftovers;
        r.notes.push_back("watch left: " + w + " (" + who + ")");
      }
    }
    for (auto& c : clients)
      if (c.kind == "zklock") r.rss_after_kb += rss_kb(c.pid);
    for (auto& c : clients) {
      end_child(c, 15s);
      bool ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
      // a JVM ends on SIGTERM with 143 by design
      if (c.kind == "curator" && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 143) ok = true;
      if (!ok) {
        ++r.worker_failures;
        r.notes.push_back(c.who + " ended with wait status " + std::to_string(c.status) + " (log " + run_dir + "/" +
                          c.who + ".log)");
      }
    }
    guard.reset();
    ioc.stop();
    io.join();
    auto j = res.journal();
    {
      std::ofstream out(run_dir + "/journal.tsv");
      for (auto& x : j)
        out << x.t_recv << "\t" << x.t_client << "\t" << x.kind << "\t" << x.who << "\t" << x.token << "\t" << x.verdict
            << "\t" << x.extra << "\n";
    }
    recipe_rule rule;
    rule.recipe = o.recipe;
    rule.capacity = o.recipe == "semaphore" ? o.leases : 1;
    check(r, j, pauses, kind_of, stuck_ns, t_end, rule);
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// §2: the partition window

struct window_result {
  std::string client;
  int run = 0;
  double grant_ms = -1;      // successor's grant, ms after the partition began
  double stop_ms = -1;       // zklock: command exit; else -1
  double suspended_ms = -1;  // Curator / kazoo: SUSPENDED
  double lost_ms = -1;       // zklock library guard lost / Curator LOST / kazoo LOST
  double healed_ms = -1;     // when the partition was healed (kazoo: to see LOST at all)
  std::string note;
};

int wait_pidfd(pid_t pid, std::chrono::milliseconds bound) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return -1;
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, static_cast<int>(bound.count()));
  ::close(fd);
  return r;
}

window_result measure_window(const options& o, zklock::test::zk_ensemble& ens, const std::string& client, int run,
                             const std::string& work) {
  window_result w;
  w.client = client;
  w.run = run;
  const int T = o.window_session_timeout_ms;
  const std::string dir = "/window/" + client + "-" + std::to_string(::getpid()) + "-" + std::to_string(run);
  const std::string run_dir = work + "/window-" + client + "-" + std::to_string(run);
  fs::create_directories(run_dir);
  asio::io_context ioc;
  auto guard = asio::make_work_guard(ioc);
  resource res(ioc);
  std::vector<std::unique_ptr<zklock::test::tcp_proxy>> proxies;
  std::string proxied;
  for (int s = 0; s < ens.size(); ++s) {
    proxies.push_back(std::make_unique<zklock::test::tcp_proxy>(ioc.get_executor(), ens.port(s)));
    proxied += (proxied.empty() ? "" : ",") + proxies.back()->connect_string();
  }
  std::thread io([&] { ioc.run(); });
  child holder, waiter;
  holder.who = "holder";
  waiter.who = "waiter";
  std::string pidfile = run_dir + "/command.pid";
  options oo = o;
  oo.hold_ms = 3600 * 1000;
  if (client == "zklock") {
    // `zklock exec` as a user runs it; the command writes its pid and becomes `sleep`
    holder.pid = spawn({ZKLOCK_CLI, "exec", "-c", proxied, "--session-timeout", std::to_string(T / 1000.0),
                        "--kill-grace", "1", dir, "--", "sh", "-c", "echo $$ > '" + pidfile + "'; exec sleep 3600"},
                       run_dir + "/holder.log");
  } else {
    holder.pid = spawn(client_command(client, oo, res.port(), proxied, dir, "holder", "hold", T, work), run_dir + "/holder.log");
  }
  // the holder holds
  pid_t command = -1;
  auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    if (client == "zklock") {
      std::ifstream in(pidfile);
      if (in >> command && command > 0) break;
    } else if (res.wait_for(100ms, [](auto& j) {
                 return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "grant" && x.who == "holder"; });
               })) {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  // the waiter, directly connected, queues behind it
  waiter.pid = spawn(client_command("zklock", oo, res.port(), ens.connect_string(), dir, "waiter", "hold", T, work),
                     run_dir + "/waiter.log");
  res.wait_for(30s, [](auto& j) {
    return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "acquire" && x.who == "waiter"; });
  });
  std::this_thread::sleep_for(500ms);  // its node is in the queue and its watch set
  const std::int64_t t0 = mono_ns();
  asio::post(ioc, [&] {
    for (auto& p : proxies) p->blackhole(true);
  });
  auto ms = [&](std::int64_t t) { return (t - t0) / 1e6; };
  auto first = [&](const std::string& who, const std::string& kind, const std::string& extra = "") -> std::int64_t {
    for (auto& x : res.journal())
      if (x.who == who && x.kind == kind && (extra.empty() || x.extra.find(extra) != std::string::npos)) return x.t_client;
    return 0;
  };
  if (client == "zklock") {
    if (wait_pidfd(command, std::chrono::milliseconds(3 * T + 10000)) == 1) w.stop_ms = ms(mono_ns());
    reap(holder, std::chrono::milliseconds(3 * T));
    if (holder.reaped && WIFEXITED(holder.status)) w.note += "zklock exited " + std::to_string(WEXITSTATUS(holder.status)) + "; ";
  }
  // The successor's grant: its acquire completed. (A zklock waiter that waited longer than its
  // validity window gets a guard already past its deadline, "dead_grant": the server granted
  // it the lock all the same, which is what the window is measured against.)
  auto is_grant = [](const record& x) { return x.who == "waiter" && (x.kind == "grant" || x.kind == "dead_grant"); };
  bool granted = res.wait_for(std::chrono::milliseconds(3 * T + 10000),
                              [&](auto& j) { return std::any_of(j.begin(), j.end(), is_grant); });
  if (granted)
    for (auto& x : res.journal())
      if (is_grant(x)) {
        w.grant_ms = ms(x.t_client);
        if (x.kind == "dead_grant") w.note += "successor's guard came already past its deadline; ";
        break;
      }
  if (client == "zklock-lib") {
    // the library's own notification: the guard's lost_slot / validity check in the worker
    res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
      return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "lost" && x.who == "holder"; });
    });
    if (auto t = first("holder", "lost")) w.lost_ms = ms(t);
  } else if (client != "zklock") {
    // LOST may come only after the partition heals (kazoo): wait up to 2 T past the grant, heal
    res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
      return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "state" && x.who == "holder" && x.extra == "LOST"; });
    });
    w.healed_ms = ms(mono_ns());
    asio::post(ioc, [&] {
      for (auto& p : proxies) p->blackhole(false);
    });
    res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
      return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "state" && x.who == "holder" && x.extra == "LOST"; });
    });
    if (auto t = first("holder", "state", "SUSPENDED")) w.suspended_ms = ms(t);
    if (auto t = first("holder", "state", "LOST")) w.lost_ms = ms(t);
  }
  end_child(holder, 10s);
  end_child(waiter, 10s);
  if (command > 0) ::kill(command, SIGKILL);  // only if it outlived zklock (it must not)
  guard.reset();
  ioc.stop();
  io.join();
  {
    std::ofstream out(run_dir + "/journal.tsv");
    for (auto& x : res.journal())
      out << x.t_recv << "\t" << x.t_client << "\t" << x.kind << "\t" << x.who << "\t" << x.token << "\t" << x.verdict
          << "\t" << x.extra << "\n";
  }
  return w;
}

std::string fmt(double v, int prec = 0) {
  if (v < -1e17) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      std::cerr << "zklock-faultharness: " << argv[i] << " needs a value\n";
      std::exit(2);
    }
    return argv[++i];
  };
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        usage();
        return 0;
      } else if (a == "--seed") {
        o.seed = std::stoull(need(i));
        o.seed_given = true;
      } else if (a == "--scenarios") {
        o.scenarios = split(need(i), ',');
      } else if (a == "--runs") {
        o.runs = std::stoi(need(i));
      } else if (a == "--faults") {
        o.faults = std::stoi(need(i));
      } else if (a == "--clients") {
        o.clients = std::stoi(need(i));
      } else if (a == "--interop") {
        std::string v = need(i);
        o.peers = v == "both" ? std::vector<std::string>{"curator", "kazoo"} : std::vector<std::string>{v};
        if (v != "both" && v != "curator" && v != "kazoo") {
          std::cerr << "zklock-faultharness: --interop: expected curator, kazoo or both, got '" << v << "'\n";
          return 2;
        }
        o.interop = true;
      } else if (a == "--recipe") {
        o.recipe = need(i);
        if (o.recipe != "mutex" && o.recipe != "shared" && o.recipe != "semaphore") {
          std::cerr << "zklock-faultharness: --recipe: expected mutex, shared or semaphore, got '" << o.recipe << "'\n";
          return 2;
        }
      } else if (a == "--leases") {
        o.leases = std::stoi(need(i));
      } else if (a == "--writers") {
        o.write_percent = std::stoi(need(i));
      } else if (a == "--session-timeout") {
        o.session_timeout_ms = std::stoi(need(i));
      } else if (a == "--hold-ms") {
        o.hold_ms = std::stoi(need(i));
      } else if (a == "--stuck-bound") {
        o.stuck_bound_ms = std::stoi(need(i));
      } else if (a == "--work") {
        o.work = need(i);
      } else if (a == "--keep") {
        o.keep = true;
      } else if (a == "--json") {
        o.json = need(i);
      } else if (a == "--window") {
        o.window = need(i);
      } else if (a == "--window-runs") {
        o.window_runs = std::stoi(need(i));
      } else if (a == "--window-session-timeout") {
        o.window_session_timeout_ms = std::stoi(need(i));
      } else {
        std::cerr << "zklock-faultharness: unknown option '" << a << "' (--help lists them)\n";
        return 2;
      }
    }
  } catch (const std::exception&) {
    std::cerr << "zklock-faultharness: bad number (--help lists the options)\n";
    return 2;
  }
  if (o.scenarios.empty()) o.scenarios = all_scenarios;
  if (o.recipe != "mutex" && (o.interop || !o.window.empty())) {
    std::cerr << "zklock-faultharness: --recipe " << o.recipe << " runs zklock clients only (no --interop, no --window)\n";
    return 2;
  }
  if (o.leases < 1 || o.write_percent < 0 || o.write_percent > 100) {
    std::cerr << "zklock-faultharness: --leases must be >= 1 and --writers 0-100\n";
    return 2;
  }
  for (auto& s : o.scenarios)
    if (std::find(all_scenarios.begin(), all_scenarios.end(), s) == all_scenarios.end()) {
      std::cerr << "zklock-faultharness: unknown scenario '" << s << "'\n";
      return 2;
    }
  if (!o.seed_given) o.seed = std::random_device{}() % 1000000000;
  std::signal(SIGPIPE, SIG_IGN);
  // the workers' SIGCHLD is reaped by us; a stray SIGUSR1 must not kill the harness
  std::signal(SIGUSR1, SIG_IGN);

  bool own_work = o.work.empty();
  std::string work = o.work;
  if (own_work) {
    std::string tmpl = (fs::temp_directory_path() / "zklock-fault-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return 1;
    work = tmpl;
  }
  fs::create_directories(work);
  std::ostringstream replay;
  for (int i = 0; i < argc; ++i)
    if (std::string(argv[i]) != "--seed" && (i == 0 || std::string(argv[i - 1]) != "--seed")) replay << argv[i] << " ";
  replay << "--seed " << o.seed;
  std::cout << "zklock-faultharness: seed " << o.seed << " (replay: " << replay.str() << ")\n"
            << "work dir " << work << (own_work && !o.keep ? " (removed at the end; --keep keeps it)" : "") << "\n"
            << std::flush;

  bool all_ok = true;
  std::ostringstream json;
  try {
    zklock::test::server_options so;
    so.tick_time_ms = 200;
    so.max_session_timeout_ms = 20000;
    so.sync_limit = 5;  // 1 s: a paused or dead leader is noticed well within a session timeout
    so.log_level = "warn";
    auto t_start = std::chrono::steady_clock::now();
    zklock::test::zk_ensemble ens(3, so);
    std::cerr << "ensemble up in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t_start).count()
              << " ms: " << ens.connect_string() << "\n";

    if (!o.window.empty()) {
      std::vector<std::string> which = o.window == "all" ? std::vector<std::string>{"zklock", "zklock-lib", "curator", "kazoo"}
                                                         : split(o.window, ',');
      std::vector<window_result> results;
      for (auto& c : which)
        for (int i = 0; i < o.window_runs; ++i) {
          auto w = measure_window(o, ens, c, i, work);
          std::cerr << "  window " << c << " #" << i << ": grant " << fmt(w.grant_ms) << " stop " << fmt(w.stop_ms)
                    << " suspended " << fmt(w.suspended_ms) << " lost " << fmt(w.lost_ms) << " " << w.note << "\n";
          results.push_back(w);
        }
      std::cout << "\nPartition window (ms after the holder's partition began; window = holder's stop - "
                   "successor's grant; session timeout "
                << o.window_session_timeout_ms << " ms)\n";
      std::cout << "client     run  successor-grant  holder-stop  window  suspended  window  lost    window  healed  note\n";
      json << "{\"seed\":" << o.seed << ",\"session_timeout_ms\":" << o.window_session_timeout_ms << ",\"windows\":[";
      bool first = true;
      for (auto& w : results) {
        auto win = [&](double t) { return t < 0 || w.grant_ms < 0 ? std::string("-") : fmt(t - w.grant_ms); };
        auto at = [](double t) { return t < 0 ? std::string("-") : fmt(t); };  // -1: never seen
        std::cout << std::left << std::setw(11) << w.client << std::setw(5) << w.run << std::setw(17) << at(w.grant_ms)
                  << std::setw(13) << at(w.stop_ms) << std::setw(8) << win(w.stop_ms) << std::setw(11)
                  << at(w.suspended_ms) << std::setw(8) << win(w.suspended_ms) << std::setw(8) << at(w.lost_ms)
                  << std::setw(8) << win(w.lost_ms) << std::setw(8) << at(w.healed_ms) << w.note
                  << (w.healed_ms > 0 && w.lost_ms > w.healed_ms ? "LOST only after the heal" : "") << "\n";
        json << (first ? "" : ",") << "{\"client\":\"" << w.client << "\",\"run\":" << w.run << ",\"grant_ms\":"
             << w.grant_ms << ",\"stop_ms\":" << w.stop_ms << ",\"suspended_ms\":" << w.suspended_ms
             << ",\"lost_ms\":" << w.lost_ms << ",\"healed_ms\":" << w.healed_ms << "}";
        first = false;
        if (w.client == "zklock" && !(w.grant_ms > 0 && w.stop_ms > 0 && w.stop_ms < w.grant_ms)) {
          all_ok = false;
          std::cout << "  FAILED: zklock's command did not stop before the successor's grant\n";
        }
        if (w.client == "zklock-lib" && !(w.grant_ms > 0 && w.lost_ms > 0 && w.lost_ms < w.grant_ms)) {
          all_ok = false;
          std::cout << "  FAILED: zklock's guard was not lost before the successor's grant\n";
        }
      }
      json << "]}\n";
    } else {
      harness h;
      h.o = o;
      h.work = work;
      h.ens = &ens;
      h.base_seed = o.seed;
      std::vector<run_result> results;
      for (auto& s : o.scenarios)
        for (int i = 0; i < o.runs; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          auto r = h.run(s, i);
          std::cerr << "  [" << s << " #" << i << "] " << r.acquisitions << " acquisitions, " << r.overlaps
                    << " overlaps, " << r.overlaps_paused << " behind a paused holder, ";
          if (o.recipe == "shared")
            std::cerr << r.write_sections << " of them writers, " << r.reader_overlaps << " reader overlaps, ";
          if (o.recipe == "semaphore")
            std::cerr << "max " << r.max_concurrent << " at once (" << r.at_capacity << " grants made it "
                      << o.leases << "), " << r.over_capacity_writes << " over-capacity writes, ";
          std::cerr << r.stale_accepted
                    << " stale writes accepted, " << r.stale_rejected << " rejected, nodes left " << r.nodes_left
                    << ", watches left " << r.watches_left << ", "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
                    << " ms\n";
          for (auto& n : r.notes) std::cerr << "    " << n << "\n";
          results.push_back(std::move(r));
        }
      // one row per scenario; the recipe's own columns after acq (shared: write sections, reader
      // overlaps; semaphore: most sections at once, grants that reached N, over-capacity writes)
      std::cout << "\nrecipe " << o.recipe
                << (o.recipe == "semaphore" ? " (" + std::to_string(o.leases) + " leases)"
                    : o.recipe == "shared"  ? " (" + std::to_string(o.write_percent) + " % writers)"
                                            : std::string())
                << "\nscenario            runs  acq   ";
      if (o.recipe == "shared") std::cout << "w-acq  ";
      std::cout << (o.recipe == "semaphore" ? "over-cap  paused-ovc  " : "overlaps  paused-ovl  ");
      if (o.recipe == "shared") std::cout << "reader-ovl  ";
      if (o.recipe == "semaphore") std::cout << "max-conc  at-N  over-cap-wr  ";
      else std::cout << "stale-acc  stale-rej  ";
      std::cout << "max-grant-ms  max-wait-ms  stuck  nodes  watches  lost  dead  rss-kb(before->after)\n";
      std::string peers;
      for (auto& p : o.peers) peers += (peers.empty() ? "\"" : ",\"") + p + "\"";
      json << "{\"seed\":" << o.seed << ",\"clients\":" << o.clients << ",\"peers\":[" << peers << "]"
           << ",\"session_timeout_ms\":" << o.session_timeout_ms << ",\"recipe\":\"" << o.recipe
           << "\",\"leases\":" << o.leases << ",\"write_percent\":" << o.write_percent << ",\"scenarios\":[";
      bool first = true;
      for (auto& s : o.scenarios) {
        run_result t;
        int runs = 0;
        bool ok = true;
        t.nodes_left = t.watches_left = 0;
        for (auto& r : results) {
          if (r.scenario != s) continue;
          ++runs;
          t.acquisitions += r.acquisitions;
          t.overlaps += r.overlaps;
          t.overlaps_paused += r.overlaps_paused;
          t.stale_accepted += r.stale_accepted;
          t.stale_rejected += r.stale_rejected;
          t.max_grant_delay_ms = std::max(t.max_grant_delay_ms, r.max_grant_delay_ms);
          t.max_wait_ms = std::max(t.max_wait_ms, r.max_wait_ms);
          t.stuck += r.stuck;
          t.nodes_left += std::max(r.nodes_left, 0) + (r.nodes_left < 0);
          t.watches_left += std::max(r.watches_left, 0);
          t.lost += r.lost;
          t.dead_grants += r.dead_grants;
          t.write_sections += r.write_sections;
          t.reader_overlaps += r.reader_overlaps;
          t.max_concurrent = std::max(t.max_concurrent, r.max_concurrent);
          t.at_capacity += r.at_capacity;
          t.over_capacity_writes += r.over_capacity_writes;
          t.rss_before_kb = std::max(t.rss_before_kb, r.rss_before_kb);
          t.rss_after_kb = std::max(t.rss_after_kb, r.rss_after_kb);
          t.worker_failures += r.worker_failures;
          // in --interop, overlaps caused by a peer's holder are the peer's behaviour, reported
          int ours = r.overlaps - r.per_kind_overlaps["curator"] - r.per_kind_overlaps["kazoo"];
          int left = r.nodes_left + r.watches_left - r.peer_leftovers;
          bool run_ok = ours == 0 && r.stale_accepted == 0 && r.stuck == 0 && r.nodes_left >= 0 && left == 0 &&
                        r.worker_failures == 0;
          // a holder that stopped right before a write resumed after its successor wrote: that
          // write must have reached the resource and been rejected (the fencing demonstration;
          // shared: the paused holder is a writer. Not for the semaphore: whether its late write
          // finds N others holding is the timing's, and the resource cannot refuse it anyway)
          if (o.recipe != "semaphore" && r.self_pauses > 0 && r.stale_rejected == 0) {
            run_ok = false;
            std::cout << "  " << s << " #" << r.run << ": a paused holder's stale write was never rejected\n";
          }
          ok = ok && run_ok;
        }
        all_ok = all_ok && ok;
        std::cout << std::left << std::setw(20) << s << std::setw(6) << runs << std::setw(6) << t.acquisitions;
        if (o.recipe == "shared") std::cout << std::setw(7) << t.write_sections;
        std::cout << std::setw(10) << t.overlaps << std::setw(12) << t.overlaps_paused;
        if (o.recipe == "shared") std::cout << std::setw(12) << t.reader_overlaps;
        if (o.recipe == "semaphore")
          std::cout << std::setw(10) << t.max_concurrent << std::setw(6) << t.at_capacity << std::setw(13)
                    << t.over_capacity_writes;
        else
          std::cout << std::setw(11) << t.stale_accepted << std::setw(11) << t.stale_rejected;
        std::cout << std::setw(14) << fmt(t.max_grant_delay_ms)
                  << std::setw(13) << fmt(t.max_wait_ms) << std::setw(7) << t.stuck << std::setw(7) << t.nodes_left
                  << std::setw(9) << t.watches_left << std::setw(6) << t.lost << std::setw(6) << t.dead_grants
                  << t.rss_before_kb << "->"
                  << t.rss_after_kb << (ok ? "" : "  FAILED") << "\n";
        json << (first ? "" : ",") << "{\"scenario\":\"" << s << "\",\"runs\":" << runs
             << ",\"acquisitions\":" << t.acquisitions << ",\"overlaps\":" << t.overlaps
             << ",\"overlaps_paused\":" << t.overlaps_paused << ",\"stale_accepted\":" << t.stale_accepted
             << ",\"stale_rejected\":" << t.stale_rejected << ",\"max_grant_delay_ms\":" << t.max_grant_delay_ms
             << ",\"max_wait_ms\":" << t.max_wait_ms << ",\"stuck\":" << t.stuck << ",\"nodes_left\":" << t.nodes_left
             << ",\"watches_left\":" << t.watches_left << ",\"lost\":" << t.lost << ",\"dead_grants\":" << t.dead_grants
             << ",\"rss_before_kb\":" << t.rss_before_kb << ",\"rss_after_kb\":" << t.rss_after_kb
             << ",\"write_sections\":" << t.write_sections << ",\"reader_overlaps\":" << t.reader_overlaps
             << ",\"max_concurrent\":" << t.max_concurrent << ",\"at_capacity\":" << t.at_capacity
             << ",\"over_capacity_writes\":" << t.over_capacity_writes
             << ",\"ok\":" << (ok ? "true" : "false") << "}";
        first = false;
      }
      json << "]}\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "zklock-faultharness: " << e.what() << "\n";
    all_ok = false;
  }
  if (!o.json.empty()) std::ofstream(o.json) << json.str();
  std::cout << (all_ok ? "PASS" : "FAIL") << " (seed " << o.seed << ")\n";
  if (own_work && !o.keep && all_ok) fs::remove_all(work);
  else std::cout << "logs and journals kept in " << work << "\n";
  return all_ok ? 0 : 1;
}
