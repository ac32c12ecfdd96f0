// zklock-bench --kind busy-process ("same key, one busy process"): one busy process of
// --coroutines coroutines (or threads) and --others other processes, every one on ONE lock path.
// The variants, one after another in one run, each on its own path:
//   plain   the busy process's coroutines through a plain zklock::mutex (a node each)
//   fair    through a mutex_options::local_queue mutex, max_local_handoffs = 1
//   max8    the same with max_local_handoffs = 8 (--max-local-handoffs)
//   curator Curator's InterProcessMutex, --coroutines threads sharing one client (--curator-cmd)
// The other processes are the same in every variant: zklock-bench --kind busy-other, each one
// session (its own process) taking the lock through a plain mutex again and again, with
// --other-think-us between a release and its next acquire, until the busy process is done.
// Every process logs (CLOCK_MONOTONIC) each acquisition's request, grant and release; this
// parent reads the logs and computes: local handoffs (release -> grant within the busy
// process, the grantee already waiting), cross-process handoffs, the busy process's
// throughput, the other processes' longest wait and the busy process's grants during it
// (the fairness bound, measured), overlaps across all processes (the exclusion oracle), and
// from the server (srvr's zxid, mntr's packets_received) the writes and requests per
// acquisition; a session of its own polls the lock dir for the most nodes at once.
#include "traffic_common.hpp"

#include <four_letter.hpp>  // test/support: the four-letter-word client

#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <sstream>

namespace asio = boost::asio;

namespace zklock_bench {
namespace {

bool exists_file(const std::string& f) {
  struct stat st{};
  return ::stat(f.c_str(), &st) == 0;
}
void touch(const std::string& f) { std::ofstream(f) << "\n"; }

// srvr's Zxid (one per write transaction) and mntr's zk_packets_received
std::pair<long long, long long> server_counters(const std::string& connect) {
  long long zxid = -1, packets = -1;
  std::istringstream s(zklock::test::four_letter(connect, "srvr", std::chrono::seconds(10)));
  for (std::string l; std::getline(s, l);)
    if (l.rfind("Zxid: ", 0) == 0) zxid = std::stoll(l.substr(6), nullptr, 16) & 0xffffffffLL;
  std::istringstream m(zklock::test::four_letter(connect, "mntr", std::chrono::seconds(10)));
  for (std::string l; std::getline(m, l);)
    if (l.rfind("zk_packets_received", 0) == 0) packets = std::stoll(l.substr(l.find('\t') + 1));
  return {zxid, packets};
}

struct acq {
  int proc;  // 0: the busy process; 1..N the others
  std::int64_t req, grant, rel;
  std::string node;  // the other processes' node name (the poller's first sight of it)
};

struct child_log {
  std::vector<acq> acqs;
  long long requests = -1, sessions = 1, violations = 0;
  double cpu_s = 0;
};

// "# key value" header lines, then "req grant rel" per acquisition
child_log read_log(const std::string& file, int proc) {
  child_log l;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream s(line);
    if (line[0] == '#') {
      std::string hash, k;
      double v = 0;
      s >> hash >> k >> v;
      if (k == "requests") l.requests = static_cast<long long>(v);
      if (k == "sessions") l.sessions = static_cast<long long>(v);
      if (k == "violations") l.violations = static_cast<long long>(v);
      if (k == "cpu_s") l.cpu_s = v;
      continue;
    }
    acq a{proc, 0, 0, 0, {}};
    s >> a.req >> a.grant >> a.rel;
    if (!s) continue;
    s >> a.node;
    l.acqs.push_back(a);
  }
  return l;
}

void write_log(const std::string& file, const std::vector<acq>& acqs, long long requests, long long violations,
               double cpu_s) {
  std::ofstream out(file + ".tmp");
  out << "# requests " << requests << "\n# sessions 1\n# violations " << violations << "\n# cpu_s " << cpu_s << "\n";
  for (auto& a : acqs) out << a.req << " " << a.grant << " " << a.rel << " " << a.node << "\n";
  out.close();
  std::rename((file + ".tmp").c_str(), file.c_str());
}

std::unique_ptr<zklock::session> connected_session(asio::io_context& ioc, const std::string& connect) {
  zklock::session_options so;
  so.connect = connect;
  so.session_timeout = std::chrono::seconds(30);
  so.connect_timeout = std::chrono::seconds(60);
  return std::make_unique<zklock::session>(ioc.get_executor(), so);
}

struct child_args {
  std::string connect, path, role, log, ready, go, stop;
  int coroutines = 1000, cycles = 2, max_local_handoffs = 1, hold_us = 0, think_us = 0;
  bool local_queue = false;
};

// A child: the busy process (role busy: coroutines x cycles on one session) or another
// process (role other: one coroutine until the stop file appears). Connects, says ready,
// waits for the go file, runs, writes its log.
int run_child(const child_args& a) {
  asio::io_context ioc(1);
  auto s = connected_session(ioc, a.connect);
  std::vector<acq> acqs;
  long long violations = 0, requests = 0;
  double cpu = 0;
  std::string failure;
  auto fail = [&](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { failure = x.what(); ioc.stop(); }
  };
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    co_await s->async_connect(asio::use_awaitable);
    zklock::mutex_options mo;
    mo.local_queue = a.local_queue;
    mo.max_local_handoffs = a.max_local_handoffs;
    zklock::mutex m(*s, a.path, mo);
    touch(a.ready);
    {
      // polled on the loop (a JVM peer may take seconds to get ready): the session keeps pinging
      asio::steady_timer t(co_await asio::this_coro::executor);
      while (!exists_file(a.go)) {
        t.expires_after(std::chrono::microseconds(500));
        co_await t.async_wait(asio::use_awaitable);
      }
    }
    const auto req0 = s->stats().requests_sent;
    const double cpu0 = cpu_seconds_self();
    auto ex = co_await asio::this_coro::executor;
    int inside = 0, finished = 0;
    const bool busy = a.role == "busy";
    const int n = busy ? a.coroutines : 1;
    for (int i = 0; i < n; ++i)
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(ex);
        for (int k = 0; busy ? k < a.cycles : !exists_file(a.stop); ++k) {
          acq x{0, mono_ns(), 0, 0, {}};
          auto g = co_await m.async_acquire(asio::use_awaitable);
          x.grant = mono_ns();
          if (!busy) x.node = g.node_path().substr(g.node_path().rfind('/') + 1);
          if (++inside != 1) ++violations;
          if (a.hold_us > 0) {
            t.expires_after(std::chrono::microseconds(a.hold_us));
            co_await t.async_wait(asio::use_awaitable);
          }
          --inside;
          x.rel = mono_ns();
          acqs.push_back(x);
          co_await g.async_release(asio::use_awaitable);
          if (!busy && a.think_us > 0) {
            t.expires_after(std::chrono::microseconds(a.think_us));
            co_await t.async_wait(asio::use_awaitable);
          }
        }
        ++finished;
      }, fail);
    asio::steady_timer t(ex);
    while (finished < n) {
      t.expires_after(std::chrono::milliseconds(1));
      co_await t.async_wait(asio::use_awaitable);
    }
    requests = static_cast<long long>(s->stats().requests_sent - req0);
    cpu = cpu_seconds_self() - cpu0;
    co_await s->async_close(asio::use_awaitable);
  }, fail);
  ioc.run();
  if (!failure.empty()) return std::cerr << "zklock-bench busy-process " << a.role << ": " << failure << "\n", 2;
  write_log(a.log, acqs, requests, violations, cpu);
  return 0;
}

pid_t spawn(const std::vector<std::string>& argv) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // tied to the parent's life
    if (::getppid() != parent) ::_exit(127);
    std::vector<char*> v;
    for (auto& s : argv) v.push_back(const_cast<char*>(s.c_str()));
    v.push_back(nullptr);
    ::execvp(v[0], v.data());
    ::_exit(127);
  }
  return pid;
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct variant_result {
  std::string name;
  int max_local_handoffs = 0;
  double local_p50 = NAN, local_p99 = NAN, cross_p50 = NAN, cross_p99 = NAN, busy_throughput = 0, all_throughput = 0;
  double requests_per_acq = NAN, busy_requests_per_acq = NAN, writes_per_acq = NAN, busy_writes_per_acq = NAN;
  double other_wait_max_ms = NAN, other_wait_p99_ms = NAN, busy_cpu_us_per_acq = NAN;
  long long busy_acq = 0, other_acq = 0, most_nodes = 0, max_busy_grants_in_wait = 0, overlaps = 0, violations = 0;
  long long local_handoffs = 0, cross_handoffs = 0;
  long long max_busy_grants_after_seen = -1;  // from the poller's first sight of the other's node
};

struct parent_args {
  std::string connect, path, json, curator_cmd, self;
  int coroutines = 1000, cycles = 2, others = 8, max_local_handoffs = 8, hold_us = 0, think_us = 0;
  std::vector<std::string> variants;
};

// One variant's processes: the other processes, then the busy one (zklock or Curator); its log
// first in `logs`.
struct variant_processes {
  pid_t busy = -1;
  std::vector<pid_t> others;
  std::vector<std::string> logs;
};

variant_processes start_processes(const parent_args& p, const std::string& v, const std::string& path,
                                  const std::string& dir, variant_result& r) {
  variant_processes ps;
  const std::string go = dir + "/go", stop = dir + "/stop";
  auto base = [&](const std::string& role, int i) {
    ps.logs.push_back(dir + "/" + role + std::to_string(i) + ".log");
    return std::vector<std::string>{p.self, "--kind", role == "busy" ? "busy-process" : "busy-other", "--role", role,
                                    "--connect", p.connect, "--path", path, "--log", ps.logs.back(),
                                    "--ready", dir + "/ready-" + role + std::to_string(i), "--go", go, "--stop", stop,
                                    "--hold-us", std::to_string(p.hold_us)};
  };
  for (int i = 1; i <= p.others; ++i) {
    auto args = base("other", i);
    args.insert(args.end(), {"--other-think-us", std::to_string(p.think_us)});
    ps.others.push_back(spawn(args));
  }
  if (v == "curator") {
    ps.logs.insert(ps.logs.begin(), dir + "/busy0.log");
    auto args = split_words(p.curator_cmd);
    args.insert(args.end(), {"--kind", "busy-process", "--connect", p.connect, "--path", path, "--contenders",
                             std::to_string(p.coroutines), "--cycles", std::to_string(p.cycles), "--log",
                             dir + "/busy0.log", "--ready", dir + "/ready-busy0", "--go", go});
    ps.busy = spawn(args);
  } else {
    auto args = base("busy", 0);
    std::rotate(ps.logs.rbegin(), ps.logs.rbegin() + 1, ps.logs.rend());  // the busy log first
    args.insert(args.end(), {"--coroutines", std::to_string(p.coroutines), "--cycles", std::to_string(p.cycles)});
    if (v != "plain") {
      r.max_local_handoffs = v == "fair" ? 1 : p.max_local_handoffs;
      args.insert(args.end(), {"--local-queue", "--max-local-handoffs", std::to_string(r.max_local_handoffs)});
    }
    ps.busy = spawn(args);
  }
  return ps;
}

// What the poller saw while the processes ran.
struct poll_result {
  long long poller_requests = 0;
  std::map<std::string, std::int64_t> first_seen;  // node name -> the poller's first listing showing it
  std::pair<long long, long long> before{}, after{};  // server_counters around the run
  std::string failure;
};

// The poller, a session of its own: waits for every process to be ready, says go, lists the lock
// dir every 5 ms (the most nodes at once, when each node was first seen) until the busy process
// exits, says stop and waits for the others; the server's counters before and after.
poll_result poll_the_run(const parent_args& p, const std::string& path, const std::string& dir,
                         const variant_processes& ps, variant_result& r) {
  poll_result pr;
  asio::io_context ioc(1);
  auto s = connected_session(ioc, p.connect);
  int busy_status = -1;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    co_await s->async_connect(asio::use_awaitable);
    asio::steady_timer t(ioc);
    for (int i = 0; i <= p.others; ++i) {
      const auto ready = dir + (i == 0 ? "/ready-busy0" : "/ready-other" + std::to_string(i));
      for (int k = 0; !exists_file(ready); ++k) {
        if (k > 240000 / 5) throw std::runtime_error("a process of the run did not get ready in 240 s");
        t.expires_after(std::chrono::milliseconds(5));
        co_await t.async_wait(asio::use_awaitable);
      }
    }
    pr.before = server_counters(p.connect);
    const auto req0 = s->stats().requests_sent;
    touch(dir + "/go");
    for (;;) {
      int st = 0;
      if (::waitpid(ps.busy, &st, WNOHANG) == ps.busy) {
        busy_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      auto [ec, c] = co_await s->async_get_children(path, asio::as_tuple(asio::use_awaitable));
      if (!ec) {
        r.most_nodes = std::max<long long>(r.most_nodes, static_cast<long long>(c.children.size()));
        const auto now = mono_ns();
        for (auto& n : c.children) pr.first_seen.emplace(n, now);
      }
      t.expires_after(std::chrono::milliseconds(5));
      co_await t.async_wait(asio::use_awaitable);
    }
    touch(dir + "/stop");
    pr.poller_requests = static_cast<long long>(s->stats().requests_sent - req0);
    for (auto pid : ps.others) {
      int st = 0;
      while (::waitpid(pid, &st, WNOHANG) != pid) {
        t.expires_after(std::chrono::milliseconds(5));
        co_await t.async_wait(asio::use_awaitable);
      }
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) pr.failure = "another process failed";
    }
    pr.after = server_counters(p.connect);
    co_await s->async_close(asio::use_awaitable);
  }, [&](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { pr.failure = x.what(); ioc.stop(); }
  });
  ioc.run();
  if (busy_status != 0 && pr.failure.empty()) pr.failure = "the busy process exited " + std::to_string(busy_status);
  return pr;
}

// Every process's log: the acquisitions of all (sorted by grant), the counts into `r`.
struct run_logs {
  std::vector<acq> all;
  long long other_requests = 0, sessions = 0, busy_requests = -1;
};

run_logs read_logs(const std::vector<std::string>& logs, variant_result& r) {
  run_logs rl;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    auto l = read_log(logs[i], static_cast<int>(i));
    if (i == 0) {
      r.busy_acq = static_cast<long long>(l.acqs.size());
      rl.busy_requests = l.requests;
      r.busy_cpu_us_per_acq = l.cpu_s * 1e6 / std::max<long long>(1, r.busy_acq);
    } else {
      r.other_acq += static_cast<long long>(l.acqs.size());
      rl.other_requests += l.requests;
    }
    rl.sessions += l.sessions;
    r.violations += l.violations;
    rl.all.insert(rl.all.end(), l.acqs.begin(), l.acqs.end());
  }
  std::sort(rl.all.begin(), rl.all.end(), [](const acq& a, const acq& b) { return a.grant < b.grant; });
  return rl;
}

// Overlaps, and the handoffs (release -> the next grant, the grantee already waiting): local
// within the busy process, cross between processes.
void measure_handoffs(const std::vector<acq>& all, variant_result& r) {
  std::vector<double> local, cross;
  for (std::size_t i = 1; i < all.size(); ++i) {
    const auto &a = all[i - 1], &b = all[i];
    if (b.grant < a.rel) ++r.overlaps;  // granted before the previous holder began to release
    if (b.req >= a.rel) continue;       // not waiting: no handoff
    ((a.proc == 0 && b.proc == 0) ? local : cross).push_back((b.grant - a.rel) / 1e3);
  }
  r.local_handoffs = static_cast<long long>(local.size());
  r.cross_handoffs = static_cast<long long>(cross.size());
  r.local_p50 = percentile(local, 50);
  r.local_p99 = percentile(local, 99);
  r.cross_p50 = percentile(cross, 50);
  r.cross_p99 = percentile(cross, 99);
}

// The busy process's throughput, everyone's while it ran, and the fairness bound: the other
// processes' waits and the busy process's grants during each.
void measure_fairness(const std::vector<acq>& all, const std::map<std::string, std::int64_t>& first_seen,
                      variant_result& r) {
  std::int64_t b0 = INT64_MAX, b1 = 0, a0 = INT64_MAX, a1 = 0;
  std::vector<std::int64_t> busy_grants;
  for (auto& x : all) {
    a0 = std::min(a0, x.req), a1 = std::max(a1, x.rel);
    if (x.proc == 0) b0 = std::min(b0, x.req), b1 = std::max(b1, x.rel), busy_grants.push_back(x.grant);
  }
  r.busy_throughput = r.busy_acq / ((b1 - b0) / 1e9);
  // while the busy process ran
  long long in_window = 0;
  for (auto& x : all) in_window += x.grant >= b0 && x.grant <= b1;
  r.all_throughput = in_window / ((b1 - b0) / 1e9);
  std::vector<double> waits;
  for (auto& x : all) {
    if (x.proc == 0 || x.grant > b1) continue;  // the others' acquisitions while the busy process ran
    waits.push_back((x.grant - x.req) / 1e6);
    auto lo = std::upper_bound(busy_grants.begin(), busy_grants.end(), x.req);
    auto hi = std::lower_bound(busy_grants.begin(), busy_grants.end(), x.grant);
    r.max_busy_grants_in_wait = std::max<long long>(r.max_busy_grants_in_wait, hi - lo);
    // the same from when the node was on the server for sure (the poller saw it; a node that
    // lived less than a poll is not counted): excludes the time the other's create took to get there
    if (auto it = first_seen.find(x.node); it != first_seen.end() && it->second < x.grant) {
      auto from = std::upper_bound(busy_grants.begin(), busy_grants.end(), it->second);
      r.max_busy_grants_after_seen = std::max<long long>(r.max_busy_grants_after_seen, std::max<long long>(0, hi - from));
    }
  }
  r.other_wait_max_ms = percentile(waits, 100);
  r.other_wait_p99_ms = percentile(waits, 99);
}

// Writes and requests per acquisition, from the server's counters (less what is not the lock's).
void measure_server_traffic(const poll_result& pr, const run_logs& rl, variant_result& r) {
  const auto& before = pr.before;
  const auto& after = pr.after;
  const long long total = r.busy_acq + r.other_acq;
  if (before.first >= 0 && after.first >= 0) {
    // every session's create and close is a transaction; the lock dir's creation one more
    const long long writes = after.first - before.first - 2 * rl.sessions;
    r.writes_per_acq = static_cast<double>(writes) / std::max<long long>(1, total);
    r.busy_writes_per_acq = static_cast<double>(writes - 2 * r.other_acq) / std::max<long long>(1, r.busy_acq);
  }
  if (before.second >= 0 && after.second >= 0) {
    // the poller's listings and the session handshakes are not the lock's
    const long long packets = after.second - before.second - pr.poller_requests - 2 * rl.sessions;
    r.requests_per_acq = static_cast<double>(packets) / std::max<long long>(1, total);
    r.busy_requests_per_acq = rl.busy_requests >= 0
                                  ? static_cast<double>(rl.busy_requests) / std::max<long long>(1, r.busy_acq)
                                  : static_cast<double>(packets - rl.other_requests) / std::max<long long>(1, r.busy_acq);
  }
}

// One variant: its processes on PATH-<variant>, the poller until they are done, then what their
// logs and the server's counters say.
variant_result run_variant(const parent_args& p, const std::string& v, const std::string& dir) {
  variant_result r;
  r.name = v;
  const std::string path = p.path + "-" + v;
  const auto ps = start_processes(p, v, path, dir, r);
  const auto pr = poll_the_run(p, path, dir, ps, r);
  if (!pr.failure.empty()) {
    for (auto pid : ps.others) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
    throw std::runtime_error(v + ": " + pr.failure);
  }
  const auto rl = read_logs(ps.logs, r);
  measure_handoffs(rl.all, r);
  measure_fairness(rl.all, pr.first_seen, r);
  measure_server_traffic(pr, rl, r);
  return r;
}

}  // namespace

int run_busy_process_kind(int argc, char** argv) {
  CLI::App app{"zklock-bench --kind busy-process"};
  parent_args p;
  child_args c;
  std::string kind, variants = "plain,fair,max8";
  p.connect = "127.0.0.1:2181";
  p.path = "/zklock-bench/busy";
  app.add_option("--kind", kind);
  app.add_option("--connect", p.connect, "ZooKeeper hosts");
  app.add_option("--path", p.path, "lock path (each variant PATH-<variant>)");
  app.add_option("--coroutines,--contenders", p.coroutines, "coroutines (threads for curator) of the busy process");
  app.add_option("--cycles", p.cycles, "acquisitions per coroutine of the busy process");
  app.add_option("--others", p.others, "other processes on the same path (a session each)");
  app.add_option("--other-think-us", p.think_us, "an other process's pause between a release and its next acquire");
  app.add_option("--max-local-handoffs", p.max_local_handoffs, "max_local_handoffs of the max8 variant");
  app.add_option("--hold-us", p.hold_us, "each holder keeps the lock this long (timer)");
  app.add_option("--variants", variants, "plain,fair,max8,curator (curator needs --curator-cmd)");
  app.add_option("--curator-cmd", p.curator_cmd, "the Curator peer's command, e.g. 'sh bench/peers/curator/run.sh'");
  app.add_option("--json", p.json, "also write the result as JSON");
  // a child's own arguments
  app.add_option("--role", c.role)->group("");
  app.add_option("--log", c.log)->group("");
  app.add_option("--ready", c.ready)->group("");
  app.add_option("--go", c.go)->group("");
  app.add_option("--stop", c.stop)->group("");
  app.add_flag("--local-queue", c.local_queue)->group("");
  CLI11_PARSE(app, argc, argv);
  if (!c.role.empty()) {
    c.connect = p.connect, c.path = p.path, c.coroutines = p.coroutines, c.cycles = p.cycles;
    c.max_local_handoffs = p.max_local_handoffs, c.hold_us = p.hold_us, c.think_us = p.think_us;
    return run_child(c);
  }
  p.variants = split_words([&] { auto v = variants; std::replace(v.begin(), v.end(), ',', ' '); return v; }());
  char self[4096];
  auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return std::cerr << "zklock-bench: /proc/self/exe\n", 2;
  p.self.assign(self, static_cast<std::size_t>(n));
  char tmpl[] = "/tmp/zklock-busy-XXXXXX";
  if (!::mkdtemp(tmpl)) return std::cerr << "zklock-bench: mkdtemp\n", 2;
  std::vector<variant_result> results;
  try {
    for (auto& v : p.variants) {
      if (v == "curator" && p.curator_cmd.empty()) continue;
      const std::string dir = std::string(tmpl) + "/" + v;
      ::mkdir(dir.c_str(), 0755);
      std::cerr << "zklock-bench: busy-process, " << v << " (" << p.coroutines << " x " << p.cycles << ", "
                << p.others << " other processes)...\n";
      results.push_back(run_variant(p, v, dir));
      auto& r = results.back();
      std::cerr << "zklock-bench:   " << v << ": busy " << r.busy_throughput << " acq/s, local handoff p50 "
                << r.local_p50 << " us, cross p50 " << r.cross_p50 << " us, others' longest wait "
                << r.other_wait_max_ms << " ms\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "zklock-bench: busy-process: " << e.what() << " (logs in " << tmpl << ")\n";
    return 2;
  }
  std::system(("rm -rf " + std::string(tmpl)).c_str());
  kv_line out;
  out.add("impl", std::string("zklock"));
  out.add("kind", std::string("busy-process"));
  out.add("coroutines", static_cast<long long>(p.coroutines));
  out.add("cycles", static_cast<long long>(p.cycles));
  out.add("others", static_cast<long long>(p.others));
  out.add("other_think_us", static_cast<long long>(p.think_us));
  out.add("hold_us", static_cast<long long>(p.hold_us));
  long long bad = 0;
  const variant_result* plain = nullptr;
  for (auto& r : results)
    if (r.name == "plain") plain = &r;
  for (auto& r : results) {
    const auto k = r.name + "_";
    out.add(k + "max_local_handoffs", static_cast<long long>(r.max_local_handoffs));
    out.add(k + "local_handoff_p50_us", r.local_p50);
    out.add(k + "local_handoff_p99_us", r.local_p99);
    out.add(k + "cross_handoff_p50_us", r.cross_p50);
    out.add(k + "cross_handoff_p99_us", r.cross_p99);
    out.add(k + "busy_throughput", r.busy_throughput);
    out.add(k + "all_throughput", r.all_throughput);
    out.add(k + "busy_acquisitions", r.busy_acq);
    out.add(k + "other_acquisitions", r.other_acq);
    out.add(k + "requests_per_acq", r.requests_per_acq, 3);
    out.add(k + "busy_requests_per_acq", r.busy_requests_per_acq, 3);
    out.add(k + "writes_per_acq", r.writes_per_acq, 3);
    out.add(k + "busy_writes_per_acq", r.busy_writes_per_acq, 3);
    out.add(k + "busy_cpu_us_per_acq", r.busy_cpu_us_per_acq);
    out.add(k + "most_nodes", r.most_nodes);
    out.add(k + "other_wait_max_ms", r.other_wait_max_ms, 2);
    out.add(k + "other_wait_p99_ms", r.other_wait_p99_ms, 2);
    out.add(k + "max_busy_grants_in_wait", r.max_busy_grants_in_wait);
    out.add(k + "max_busy_grants_after_seen", r.max_busy_grants_after_seen);
    out.add(k + "overlaps", r.overlaps);
    if (plain && &r != plain) out.add(k + "throughput_over_plain", r.busy_throughput / plain->busy_throughput, 2);
    bad += r.overlaps + r.violations;
  }
  out.add("violations", bad);
  out.emit(p.json);
  return bad == 0 ? 0 : 1;
}

}  // namespace zklock_bench
