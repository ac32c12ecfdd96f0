#include "run.hpp"

#include "history.hpp"
#include "io_thread.hpp"
#include "lockdir.hpp"
#include "models.hpp"
#include "nemesis.hpp"
#include "processes.hpp"
#include "resource.hpp"
#include "tcp_proxy.hpp"

#include <boost/asio.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace zklock::fault {

run_result harness::run(const std::string& scenario, int run_index) {
  run_result r;
  r.scenario = scenario;
  r.run = run_index;
  r.seed = base_seed ^ (std::hash<std::string>{}(scenario) * 1000003u) ^ std::uint64_t(run_index);
  std::mt19937_64 rng(r.seed);
  const std::int64_t T_ns = std::int64_t(o.session_timeout_ms) * 1000000;

  const std::string dir = "/fault/" + prefix + scenario + "-" + std::to_string(base_seed % 1000000) + "-" +
                          std::to_string(run_index);
  const std::string run_dir = work + "/" + prefix + scenario + "-" + std::to_string(run_index);
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
  const std::vector<std::string> extra = worker_options(scenario);
  // the members' watches before this run's clients (its leftover check compares with them)
  const std::vector<member_watch_answers> watches_before = ask_watches(*ens);
  int sessions = 1;  // contenders per zklock worker ("sessions:N"; local-queue: its coroutines)
  for (auto& x : extra)
    if (x.rfind("sessions:", 0) == 0) sessions = std::stoi(x.substr(9));
  if (o.recipe == "local-queue") sessions = o.coroutines;
  for (int c = 0; c < k; ++c) {
    std::string connect;
    if (direct_connections(scenario)) {
      connect = ens->connect_string();
    } else {
      for (int s = 0; s < ens->size(); ++s) {
        proxies[c].push_back(std::make_unique<zklock::test::tcp_proxy>(ioc.get_executor(), ens->port(s)));
        connect += (connect.empty() ? "" : ",") + proxies[c].back()->connect_string();
      }
    }
    clients[c].who = kinds[c] + "-" + std::to_string(c);
    clients[c].kind = kinds[c];
    index_of[clients[c].who] = c;
    kind_of[clients[c].who] = kinds[c];
    if (kinds[c] == "zklock" && sessions > 1)
      for (int i = 1; i <= sessions; ++i) kind_of[clients[c].who + "." + std::to_string(i)] = kinds[c];
    // the worker's recipe; the shared lock's read/write draws are seeded by the run's seed
    std::string spec;
    if (o.recipe == "shared")
      spec = "shared:" + std::to_string(o.write_percent) + ":" + std::to_string((r.seed + std::uint64_t(c)) % 1000000007u);
    else if (o.recipe == "semaphore")
      spec = "semaphore:" + std::to_string(o.leases);
    else if (o.recipe == "election")
      spec = "election";
    else if (o.recipe == "local-queue")
      spec = "local-queue:" + std::to_string(o.coroutines) + ":" + std::to_string(o.max_local_handoffs);
    std::vector<std::string> worker_args;
    if (!spec.empty() || !extra.empty()) worker_args.push_back(spec.empty() ? "mutex" : spec);
    worker_args.insert(worker_args.end(), extra.begin(), extra.end());
    if (!o.mutant.empty() || o.threads > 1 || o.lock_delay_ms > 0) {
      if (worker_args.empty()) worker_args.push_back("mutex");
      if (o.lock_delay_ms > 0) worker_args.push_back("lockdelay:" + std::to_string(o.lock_delay_ms));
      if (!o.mutant.empty()) worker_args.push_back("mutant:" + o.mutant);
      if (o.threads > 1) worker_args.push_back("threads:" + std::to_string(o.threads));
    }
    auto cmd = client_command(kinds[c], o, res.port(), connect, dir, clients[c].who, "loop", o.session_timeout_ms,
                              kinds[c] == "zklock" ? worker_args : std::vector<std::string>{});
    clients[c].pid = spawn(cmd, run_dir + "/" + clients[c].who + ".log");
  }
  const std::int64_t t_spawned = mono_ns();
  io_thread io(ioc);
  std::vector<pause_interval> pauses;
  run_env env{o, *ens, ioc, res, proxies, clients, index_of, pauses, r, rng, dir, {}, {}, {}};
  nemesis nem(env);

  // warm-up: every client granted once (a JVM takes a few seconds to start)
  auto granted_all = [&](const std::vector<record>& j) {
    std::set<std::string> g;
    for (auto& x : j)
      if (x.kind == "grant") g.insert(process_of(x.who));
    return static_cast<int>(g.size()) == k;
  };
  if (!res.wait_for(60s, granted_all)) r.notes.push_back("warm-up: not every client was granted within 60 s");
  const bool short_waits = o.waits == "short";
  std::this_thread::sleep_for(short_waits ? 100ms : 300ms);
  for (auto& c : clients)
    if (c.kind == "zklock") r.rss_before_kb += rss_kb(c.pid);

  const std::int64_t t_warm = mono_ns();
  // the nemesis
  std::int64_t t_fault = 0;
  for (int f = 0; f < o.faults; ++f) {
    // (one draw either way: a seed's faults are the same with both)
    const double lead_in = nem.uniform(0, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(int(short_waits ? 100 + 300 * lead_in : 200 + 800 * lead_in)));
    if (f == 0) t_fault = mono_ns();
    auto d = nem.apply(scenario == "mixed" ? fault_kinds[nem.pick(int(fault_kinds.size()))] : scenario);
    r.faults.push_back(d);
    std::cerr << "  [" << scenario << " #" << run_index << "] " << d << "\n";
  }

  // heal everything, let it settle, stop the clients
  nem.heal();
  const std::int64_t t_heal = mono_ns();
  const auto healed = std::chrono::steady_clock::now();
  if (short_waits) {
    // every client granted again after the heal (its liveness shown by each), at least 250 ms
    auto granted_again = [&](const std::vector<record>& j) {
      std::set<std::string> g;
      for (auto& x : j)
        if (x.kind == "grant" && x.t_recv >= t_heal) g.insert(process_of(x.who));
      return static_cast<int>(g.size()) == k;
    };
    const auto bound = std::chrono::milliseconds(o.session_timeout_ms + 1000);
    if (!res.wait_for(bound, granted_again))
      r.notes.push_back("settle: not every client was granted within " + std::to_string(bound.count()) +
                        " ms of the heal");
    std::this_thread::sleep_until(healed + 250ms);
  } else {
    std::this_thread::sleep_for(1s);
  }
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
      o.stuck_bound_ms > 0 ? std::int64_t(o.stuck_bound_ms) * 1000000 : 5 * T_ns + 10'000'000'000LL;
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
  for (auto& x : res.journal())
    if (x.kind == "grant") ++(x.t_recv < t_fault ? r.grants_before : x.t_recv < t_heal ? r.grants_during : r.grants_after);
  // leftovers: a released or lost guard's node is deleted in the background, a stopped
  // acquire's watches removed (an acquire cancelled, its cleanup going on behind; a grant gone
  // ahead of its removal); give it 2 s, and at least two looks: one look (the lock dir listed
  // by a session of the harness's, each member's wchs and mntr) may take longer than that
  // itself on a loaded machine, the more so on members restarted moments before (0.3-0.7 s a
  // mntr at a load average of 18). A look that a member did not answer (its counts unsaid
  // within the four-letter word's 3 s, or "not currently serving requests") or in which the
  // lock dir could not be listed says nothing yet: the 2 s run from the next look, while the
  // check is under 15 s old (a member restarted moments before, slow or electing again).
  // (the semaphore's nodes are in two dirs: its internal mutex's and its leases')
  const std::vector<std::string> node_dirs =
      o.recipe == "semaphore" ? std::vector<std::string>{dir + "/locks", dir + "/leases"} : std::vector<std::string>{dir};
  leftovers left;
  const auto check_began = std::chrono::steady_clock::now();
  int looks = 0;
  for (auto until = check_began + 2s;;) {
    ++looks;
    left.node_names.clear();
    left.watch_notes.clear();
    left.nodes = 0;
    for (auto& d : node_dirs) {
      std::vector<std::string> names;
      int n = count_nodes(ens->connect_string(), d, &names);
      left.nodes = n < 0 || left.nodes < 0 ? -1 : left.nodes + n;
      for (auto& x : names) left.node_names.push_back(d.substr(dir.size()) + (d == dir ? "" : "/") + x);
    }
    int silent = 0;
    left.watches = count_watches(*ens, dir, watches_before, &left.watch_notes, &silent);
    if (left.nodes == 0 && left.watches == 0) break;
    const auto now = std::chrono::steady_clock::now();
    if (silent > 0 || left.nodes < 0) until = std::min(now + 2s, check_began + 15s);
    if (now >= until && looks >= 2) break;
    std::this_thread::sleep_for(200ms);
  }
  r.nodes_left = left.nodes;
  r.watches_left = left.watches;
  if (left.nodes != 0 || left.watches != 0)
    r.notes.push_back("leftovers: still there at the last of " + std::to_string(looks) + " looks, " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - check_began)
                                         .count()) +
                      " ms after the first began");
  {
    // whose: the clients said their session ids in "hello"; a line may name several sessions
    // (child watches: those connected to the member)
    std::map<std::string, std::string> owner;
    for (auto& x : res.journal())
      if (x.kind == "hello") owner[x.extra] = x.who;
    auto whose = [&](const std::string& line) {
      std::vector<std::string> names;
      for (auto& [sid, who] : owner)
        for (auto at = line.find(sid); at != std::string::npos; at = line.find(sid, at + 1))
          if (!std::isxdigit(static_cast<unsigned char>(line[at + sid.size()]))) {
            names.push_back(who);
            break;
          }
      return names;
    };
    // a peer's (Curator's, kazoo's) leftovers are reported, not failed: those that only peers can
    // hold (a session no client said hello with is a peer's new session where there are peers)
    auto report = [&](const std::string& what, int count) {
      auto names = whose(what);
      bool peers_only = names.empty() ? !o.peers.empty() : true;
      std::string list;
      for (auto& who : names) {
        peers_only = peers_only && kind_of[who] != "zklock";
        list += (list.empty() ? "" : " or ") + who;
      }
      if (peers_only) r.peer_leftovers += count;
      r.notes.push_back(what + " (" + (list.empty() ? "?" : list) + ")");
    };
    for (auto& n : left.node_names) report("node left: " + dir + (n.rfind('/', 0) == 0 ? "" : "/") + n, 1);
    for (auto& w : left.watch_notes) report("watch left: " + w.what, w.count);
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
  {
    const std::int64_t t_ended = mono_ns();
    auto ms = [](std::int64_t a, std::int64_t b) { return std::to_string((b - a) / 1000000); };
    r.phases = "warm-up " + ms(t_spawned, t_warm) + ", before the fault " + ms(t_warm, t_fault) + ", fault " +
               ms(t_fault, t_heal) + ", settle " + ms(t_heal, t_stop) + ", stop " + ms(t_stop, t_end) +
               ", leftovers and exits " + ms(t_end, t_ended) + " ms";
  }
  guard.reset();
  io.stop();
  auto j = res.journal();
  write_journal(run_dir + "/journal.tsv", j);
  recipe_rule rule;
  rule.recipe = o.recipe;
  rule.capacity = o.recipe == "semaphore" ? o.leases : 1;
  if (o.recipe == "local-queue") rule.max_local_handoffs = o.max_local_handoffs;
  check(r, j, pauses, kind_of, stuck_ns, t_end, rule, env.deletions);
  fault_bounds bounds;
  bounds.session_timeout_ns = T_ns;
  check_fault_rules(r, j, env.outages, env.deletions, bounds, t_end);
  // the history, checked against the recipe's models (models.hpp)
  history_run hr;
  hr.scenario = scenario;
  hr.run = run_index;
  hr.seed = r.seed;
  hr.recipe = o.recipe;
  hr.capacity = rule.capacity;
  hr.max_local_handoffs = rule.max_local_handoffs;
  hr.session_timeout_ns = T_ns;
  hr.heal_ns = t_heal;
  hr.end_ns = t_end;
  hr.mutant = o.mutant;
  hr.lock_delay_ns = std::int64_t(o.lock_delay_ms) * 1000000;
  history h = history_of(j, hr);
  for (auto& p : pauses) h.pauses.push_back({p.who, p.from, p.to ? p.to : t_end});
  write_history(run_dir + "/history.jsonl", h);
  if (!o.history.empty()) {
    fs::create_directories(o.history);
    write_history(o.history + "/" + prefix + scenario + "-" + std::to_string(run_index) + ".jsonl", h);
  }
  for (auto& v : check_models(h)) {
    ++r.model_violations;
    if (r.model_violations <= 5) r.notes.push_back("MODEL " + v.rule + ": " + v.what);
    if (r.first_violation.empty()) r.first_violation = v.rule;
  }
  if (r.model_violations > 5) r.notes.push_back("MODEL: " + std::to_string(r.model_violations - 5) + " more violations");
  for (auto& w : h.writes)
    if (w.resource == "znode" && w.outcome == "ok") ++r.znode_writes;
  return r;
}
}  // namespace zklock::fault
