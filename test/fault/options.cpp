#include "options.hpp"

#include "mutants.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <sstream>

namespace zklock::fault {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string x; std::getline(in, x, sep);)
    if (!x.empty()) out.push_back(x);
  return out;
}

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

int usage_error(const std::string& what) {
  std::cerr << "zklock-faultharness: " << what << "\n";
  return 2;
}

}  // namespace

int parse_options(int argc, char** argv, options& o) {
  CLI::App app{"zklock-faultharness: a fault-injection harness on a real 3-node ZooKeeper ensemble "
               "(docs/RELIABILITY.md)."};
  app.name("zklock-faultharness");
  // as the hand-written parser did: an option given twice takes the last value
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string scenarios, interop, window;
  app.add_option("--seed", o.seed, "replay this seed (default: a new one, printed)");
  app.add_option("--scenarios", scenarios,
                 "A,B,... default all: " + joined(all_scenarios) + "; run only when named: " +
                     joined(extra_scenarios) + "; \"every\": both lists, in that order");
  std::string except;
  app.add_option("--except", except,
                 "A,B,...: leave these scenarios out (with \"--scenarios every\": every fault but a known failure, "
                 "run apart)");
  app.add_option("--runs", o.runs, "runs per scenario (default 1)");
  app.add_option("--faults", o.faults, "faults per run (default 1)");
  app.add_option("--clients", o.clients, "zklock client processes (default 3)");
  app.add_option("--interop", interop,
                 "curator|kazoo|both: add a Curator InterProcessMutex and/or a kazoo Lock "
                 "(extra_lock_patterns=[\"-lock-\"]) client on the same path (\"both\" puts Curator and kazoo "
                 "on one path, which they do not share safely: see docs/RELIABILITY.md)");
  auto* recipe = app.add_option_group("Recipe", "what the zklock clients take, and its parameters");
  recipe->add_option("--recipe", o.recipe,
                 "mutex|shared|semaphore|election|local-queue: what the zklock clients take (default mutex): "
                 "election is a candidate of zklock::election (leads, writes fenced, resigns; leaders must not "
                 "overlap); local-queue is --coroutines coroutines per process on one zklock::mutex with "
                 "mutex_options::local_queue (overlaps within and across processes, the fairness bound); shared is "
                 "zklock::shared_mutex, each acquisition the write side with probability --writers (seeded), "
                 "else the read side; semaphore is a lease of zklock::semaphore with --leases. The checker "
                 "checks that recipe's property (shared: a writer overlaps nobody, readers overlap each other; "
                 "semaphore: never more than N sections at once)");
  recipe->add_option("--leases", o.leases, "semaphore: max_leases (default 2)");
  recipe->add_option("--writers", o.write_percent, "shared: write acquisitions in percent (default 30)");
  recipe->add_option("--coroutines", o.coroutines, "local-queue: coroutines per process on one mutex object (default 8)");
  recipe->add_option("--max-local-handoffs", o.max_local_handoffs,
                 "local-queue: mutex_options::max_local_handoffs, also the fairness bound checked (default 1)");
  app.add_option("--session-timeout", o.session_timeout_ms,
                 "MS: clients' session timeout (default 3000; servers' tickTime is 200 ms)");
  app.add_option("--hold-ms", o.hold_ms, "MS: critical section length (default 20)");
  app.add_option("--waits", o.waits,
                 "long|short: a run's waits around its faults (default long): long waits 300 ms after the warm-up "
                 "(every client granted once), 200-1000 ms before each fault and 1000 ms after the heal; short "
                 "100 ms, 100-400 ms, and after the heal until every client was granted again (at least 250 ms, "
                 "at most a session timeout + 1000 ms). The seeded draws are the same (the faults' targets and "
                 "timings of a seed do not change)")
      ->check(CLI::IsMember({"long", "short"}));
  app.add_option("--stuck-bound", o.stuck_bound_ms,
                 "MS: a wait for the lock longer than this is a stuck waiter (default 5 session timeouts + 10 s)");
  auto* partition = app.add_option_group("Partition window", "instead of the fault scenarios");
  partition->add_option("--window", window,
                 "zklock|zklock-lib|zklock-election|curator|curator-latch|kazoo|all (or a comma list): instead, "
                 "measure the "
                 "partition window: holder behind a blackholed proxy, waiter connected directly; "
                 "window = holder's stop (zklock exec's command exit / the library guard's lost notification / "
                 "the election leader's lost leadership, its successor the next leader / Curator LeaderLatch's "
                 "notLeader, its successor a zklock candidate / Curator SUSPENDED, "
                 "LOST / kazoo listener) minus the successor's grant");
  partition->add_option("--window-runs", o.window_runs, "runs per client (default 3)");
  partition->add_option("--window-session-timeout", o.window_session_timeout_ms, "MS (default 6000)");
  app.add_option("--work", o.work, "DIR: logs and journals here (default: a temp dir, removed unless --keep)");
  app.add_flag("--keep", o.keep, "keep the work dir");
  app.add_option("--json", o.json, "FILE: write the results as JSON");
  app.add_option("--history", o.history,
                 "DIR: write each run's history there, one JSON-lines file per run (SCENARIO-RUN.jsonl; format: "
                 "docs/RELIABILITY.md, \"Histories\"); every run's history is checked against its recipe's models "
                 "whether or not it is written");
  app.add_option("--check", o.check,
                 "DIR: check the histories (*.jsonl) recorded there against their models, with no servers; exit 0 "
                 "when every model holds, 1 naming the first violation of each history that broke one");
  app.add_option("--mutant", o.mutant,
                 "NAME: run the zklock workers with this mutant (a deliberately broken use of the library, "
                 "--list-mutants); the run fails (exit 1) when the checker catches it");
  app.add_option("--threads", o.threads,
                 "N: threads mode: each zklock worker runs its io_context on N threads, its sessions on strands "
                 "of their own and its coroutines on another (acquires, closes and stops started there, not on "
                 "the session's), and takes the mutex with the ordinary Asio deadline (acquire || timer, drawn from "
                 "1 to 10 sections long: the cancellation comes from another thread) (default 1)");
  app.add_option("--lock-delay", o.lock_delay_ms,
                 "MS: the zklock workers' mutex_options::lock_delay (--recipe mutex), and the models' (default 0; "
                 "with --mutant skip-lock-delay, 2 session timeouts)");
  app.add_flag("--list-mutants", o.list_mutants, "print the mutants, one a line: NAME RECIPE what it breaks");
  app.add_option("--pass", o.passes,
                 "ARGS: one pass of these options (after the command line's, which they override), given as "
                 "--pass='--recipe shared --scenarios every'; several --pass options run one after the other on "
                 "one ensemble (3 server starts, not 3 a pass), each pass's lock dirs apart; a pass with --mutant "
                 "passes when the models catch it")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--caught-by", o.caught_by,
                 "RULE: a --pass with --mutant passes only when this model's violation is the first caught");
  app.footer(
      "Exit status: 0 when every invariant held (for zklock clients: no overlap except behind a paused holder, "
      "no stale write accepted, no stuck waiter, no node or watch left, every window negative), 1 otherwise, "
      "2 on a usage error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  o.seed_given = app.count("--seed") > 0;
  o.scenarios = split(scenarios, ',');
  o.window = window;
  if (!interop.empty()) {
    if (interop != "both" && interop != "curator" && interop != "kazoo")
      return usage_error("--interop: expected curator, kazoo or both, got '" + interop + "'");
    o.peers = interop == "both" ? std::vector<std::string>{"curator", "kazoo"} : std::vector<std::string>{interop};
    o.interop = true;
  }
  if (o.recipe != "mutex" && o.recipe != "shared" && o.recipe != "semaphore" && o.recipe != "election" &&
      o.recipe != "local-queue")
    return usage_error("--recipe: expected mutex, shared, semaphore, election or local-queue, got '" + o.recipe + "'");
  if (o.threads < 1) return usage_error("--threads must be >= 1");
  if (o.coroutines < 1 || o.max_local_handoffs < 1)
    return usage_error("--coroutines and --max-local-handoffs must be >= 1");
  if (!o.mutant.empty()) {
    bool known = false;
    for (auto& m : mutants())
      if (m.name == o.mutant) {
        known = true;
        if (m.recipe != o.recipe)
          return usage_error("--mutant " + o.mutant + " is a mutant of --recipe " + m.recipe + ", not " + o.recipe);
      }
    if (!known) return usage_error("--mutant: unknown mutant '" + o.mutant + "' (--list-mutants)");
  }
  if (o.lock_delay_ms < 0) o.lock_delay_ms = o.mutant == "skip-lock-delay" ? 2 * o.session_timeout_ms : 0;
  if (o.lock_delay_ms > 0 && o.recipe != "mutex") return usage_error("--lock-delay: only with --recipe mutex");
  if (!o.passes.empty() && !o.window.empty()) return usage_error("--pass: not with --window");
  if (o.scenarios.empty()) o.scenarios = all_scenarios;
  if (o.scenarios == std::vector<std::string>{"every"}) {
    o.scenarios = all_scenarios;
    o.scenarios.insert(o.scenarios.end(), extra_scenarios.begin(), extra_scenarios.end());
  }
  for (auto& x : split(except, ','))
    if (std::find(all_scenarios.begin(), all_scenarios.end(), x) == all_scenarios.end() &&
        std::find(extra_scenarios.begin(), extra_scenarios.end(), x) == extra_scenarios.end())
      return usage_error("--except: unknown scenario '" + x + "'");
  for (auto& x : split(except, ','))
    o.scenarios.erase(std::remove(o.scenarios.begin(), o.scenarios.end(), x), o.scenarios.end());
  if (o.recipe != "mutex" && (o.interop || !o.window.empty()))
    return usage_error("--recipe " + o.recipe + " runs zklock clients only (no --interop, no --window)");
  if (o.leases < 1 || o.write_percent < 0 || o.write_percent > 100)
    return usage_error("--leases must be >= 1 and --writers 0-100");
  for (auto& s : o.scenarios)
    if (std::find(all_scenarios.begin(), all_scenarios.end(), s) == all_scenarios.end() &&
        std::find(extra_scenarios.begin(), extra_scenarios.end(), s) == extra_scenarios.end())
      return usage_error("unknown scenario '" + s + "'");
  return -1;
}

int parse_pass(int argc, char** argv, const std::string& pass, options& o) {
  std::vector<std::string> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--pass=", 0) == 0) continue;
    if (a == "--pass") {
      ++i;
      continue;
    }
    args.push_back(a);
  }
  for (auto& x : split(pass, ' ')) args.push_back(x);
  std::vector<char*> pointers;
  for (auto& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  if (int status = parse_options(static_cast<int>(args.size()), pointers.data(), o); status >= 0) return status;
  if (!o.passes.empty()) return usage_error("--pass: a pass's options hold no --pass");
  return -1;
}

}  // namespace zklock::fault
