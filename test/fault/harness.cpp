// zklock-faultharness: a fault-injection harness on a real 3-node ZooKeeper ensemble (and the
// partition window's measurements), in the spirit of Jepsen and etcd's functional tester, sized for
// a 2-core machine.
//
// Per run of a scenario (run.cpp): K client processes (zklock_fault_worker: a zklock::mutex, or
// with --recipe a zklock::shared_mutex's read and write sides or a zklock::semaphore's leases;
// in --interop also a Curator InterProcessMutex and a kazoo Lock) contend for one lock path
// through a TCP proxy each (one proxy per client and server, tcp_proxy.hpp, on this process's
// io_context; the refuse scenario connects them directly); the nemesis (nemesis.cpp) applies the
// scenario's faults on a seeded random schedule; every holder writes each step of its critical
// section to the fenced resource (resource.hpp); then the faults are healed, the clients told
// to stop (SIGUSR1: go idle, keep the session), the lock dir and the servers' watches inspected
// (lockdir.cpp), the clients ended (SIGTERM), and the checker (checker.cpp) replays the
// resource's journal. --window measures the partition window instead (window.cpp).
//
// The resource accepts a write only with a fencing token >= the highest it has accepted, and
// journals every message with its own receive time. All times are CLOCK_MONOTONIC, the same
// clock in every process here.
//
// Run with --help for the options (options.cpp); every run prints its seed and the command that
// replays it.
#include "history.hpp"
#include "models.hpp"
#include "mutants.hpp"
#include "options.hpp"
#include "run.hpp"
#include "window.hpp"
#include "zk_server.hpp"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

namespace fs = std::filesystem;
using namespace zklock::fault;

namespace {

std::string fmt(double v, int prec = 0) {
  if (v < -1e17) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

// Adds one run to its scenario's total: the counts add up, the worst cases (delays, peaks, RSS)
// are the largest; a run whose nodes were never counted (-1) counts as one node left.
void add_run(run_result& t, const run_result& r) {
  auto add = [&](auto... m) { ((t.*m += r.*m), ...); };
  auto largest = [&](auto... m) { ((t.*m = std::max(t.*m, r.*m)), ...); };
  add(&run_result::acquisitions, &run_result::overlaps, &run_result::overlaps_paused,
      &run_result::stale_accepted, &run_result::stale_rejected, &run_result::stuck, &run_result::lost,
      &run_result::dead_grants, &run_result::write_sections, &run_result::reader_overlaps,
      &run_result::at_capacity, &run_result::over_capacity_writes, &run_result::overlaps_within,
      &run_result::fairness_violations, &run_result::injected, &run_result::fault_waits,
      &run_result::fault_failures, &run_result::grants_after_close, &run_result::lost_at_handover,
      &run_result::overlaps_ended,
      &run_result::stale_after_taken, &run_result::worker_failures, &run_result::foreign_writes,
      &run_result::user_socket_stalls, &run_result::model_violations, &run_result::znode_writes);
  largest(&run_result::max_grant_delay_ms, &run_result::max_wait_ms, &run_result::max_concurrent,
          &run_result::fair_max, &run_result::worst_fail_ms, &run_result::wait_grants_max, &run_result::close_ms,
          &run_result::close_stall_ms,
          &run_result::rss_before_kb, &run_result::rss_after_kb);
  t.nodes_left += std::max(r.nodes_left, 0) + (r.nodes_left < 0);
  t.watches_left += std::max(r.watches_left, 0);
}

struct pass_outcome {
  bool ok = true;
  bool mutant_caught = false;
  std::string first_violation;  // the model that caught the mutant
};

// One pass: every scenario of `o` on the ensemble, its report on stdout and its JSON appended to
// `json`. `prefix` keeps a pass's lock dirs and run dirs apart from another pass's on the same
// ensemble (--pass).
pass_outcome run_pass(const options& o, zklock::test::zk_ensemble& ens, const std::string& work,
                      const std::string& prefix, std::ostream& json) {
  pass_outcome out;
  harness h;
  h.o = o;
  h.work = work;
  h.ens = &ens;
  h.prefix = prefix;
  h.base_seed = o.seed;
  std::vector<run_result> results;
  int runs_done = 0;
  long long runs_ms = 0;
  bool mutant_caught = false;
  for (auto& s : o.scenarios)
    for (int i = 0; i < o.runs && !mutant_caught; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = h.run(s, i);
      std::cerr << "  [" << s << " #" << i << "] " << r.acquisitions << " acquisitions (grants: " << r.grants_before
                << " before the fault, " << r.grants_during << " from it to the heal, " << r.grants_after
                << " after it), " << r.overlaps
                << " overlaps, " << r.overlaps_paused << " behind a paused holder, ";
      if (o.recipe == "shared")
        std::cerr << r.write_sections << " of them writers, " << r.reader_overlaps << " reader overlaps, ";
      if (o.recipe == "local-queue")
        std::cerr << r.overlaps_within << " of them within a process, fairness: " << r.fair_max
                  << " grants after the watch (bound " << o.max_local_handoffs << ", " << r.fairness_violations
                  << " past it), " << r.wait_grants_max << " grants of one process in one wait, ";
      if (o.recipe == "semaphore")
        std::cerr << "max " << r.max_concurrent << " at once (" << r.at_capacity << " grants made it "
                  << o.leases << "), " << r.over_capacity_writes << " over-capacity writes, ";
      std::cerr << "models: " << r.model_violations << " violations (" << r.znode_writes << " znode writes), "
                << r.stale_accepted
                << " stale writes accepted, " << r.stale_rejected << " rejected, nodes left " << r.nodes_left
                << ", watches left " << r.watches_left << ", "
                << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
                << " ms\n";
      if (r.injected > 0)
        std::cerr << "    fault rule: " << r.injected << " injected, " << r.fault_waits << " waits/sections checked, "
                  << r.fault_failures << " failed, worst " << fmt(r.worst_fail_ms) << " ms after the fault, "
                  << r.grants_after_close << " grants after a close"
                  << (r.lost_at_handover > 0 ? " (" + std::to_string(r.lost_at_handover) +
                                                   " handed over lost: on their way when it was taken)"
                                             : std::string())
                  << ", " << r.overlaps_ended
                  << " overlaps after a holder's node was deleted or its session closed"
                  << (r.close_ms > 0 || r.close_stall_ms > 0
                          ? ", slowest async_close " + fmt(r.close_ms) + " ms, probe stalled " + fmt(r.close_stall_ms) + " ms"
                          : std::string())
                  << "\n";
      std::cerr << "    phases: " << r.phases << "\n";
      for (auto& n : r.notes) std::cerr << "    " << n << "\n";
      const bool caught = r.model_violations > 0;
      results.push_back(std::move(r));
      ++runs_done;
      runs_ms += std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
      // a mutant: the first run that catches it ends the pass (the figures: runs, time)
      if (!o.mutant.empty() && caught) {
        std::cout << "mutant " << o.mutant << " caught by the models (first: " << results.back().first_violation
                  << ") in run " << runs_done << " (" << s << "), " << runs_ms << " ms of runs\n";
        mutant_caught = true;
        out.first_violation = results.back().first_violation;
        break;
      }
    }
  if (!o.mutant.empty() && !mutant_caught)
    std::cout << "mutant " << o.mutant << " NOT caught by the models in " << runs_done << " runs\n";
  // one row per scenario; the recipe's own columns after acq (shared: write sections, reader
  // overlaps; semaphore: most sections at once, grants that reached N, over-capacity writes)
  std::cout << "\nrecipe " << o.recipe
            << (o.recipe == "semaphore" ? " (" + std::to_string(o.leases) + " leases)"
                : o.recipe == "shared"  ? " (" + std::to_string(o.write_percent) + " % writers)"
                : o.recipe == "local-queue"
                    ? " (" + std::to_string(o.coroutines) + " coroutines per process, max_local_handoffs " +
                          std::to_string(o.max_local_handoffs) + ")"
                    : std::string())
            << "\nscenario            runs  acq   ";
  if (o.recipe == "shared") std::cout << "w-acq  ";
  std::cout << (o.recipe == "semaphore" ? "over-cap  paused-ovc  " : "overlaps  paused-ovl  ");
  if (o.recipe == "shared") std::cout << "reader-ovl  ";
  if (o.recipe == "local-queue") std::cout << "ovl-within  fair-max  fair-viol  wait-grants  ";
  if (o.recipe == "semaphore") std::cout << "max-conc  at-N  over-cap-wr  ";
  else std::cout << "stale-acc  stale-rej  ";
  std::cout << "max-grant-ms  max-wait-ms  stuck  nodes  watches  lost  dead  rss-kb(before->after)\n";
  std::string peers;
  for (auto& p : o.peers) peers += (peers.empty() ? "\"" : ",\"") + p + "\"";
  json << "{\"seed\":" << o.seed << ",\"clients\":" << o.clients << ",\"peers\":[" << peers << "]"
       << ",\"session_timeout_ms\":" << o.session_timeout_ms << ",\"recipe\":\"" << o.recipe
       << "\",\"leases\":" << o.leases << ",\"write_percent\":" << o.write_percent
       << ",\"coroutines\":" << o.coroutines << ",\"max_local_handoffs\":" << o.max_local_handoffs << ",\"scenarios\":[";
  bool first = true;
  std::vector<std::string> fault_rows;
  for (auto& s : o.scenarios) {
    run_result t;
    int runs = 0;
    bool ok = true;
    t.nodes_left = t.watches_left = 0;
    for (auto& r : results) {
      if (r.scenario != s) continue;
      ++runs;
      add_run(t, r);
      // in --interop, overlaps caused by a peer's holder are the peer's behaviour, reported
      int ours = r.overlaps - r.per_kind_overlaps["curator"] - r.per_kind_overlaps["kazoo"];
      int left = r.nodes_left + r.watches_left - r.peer_leftovers;
      bool run_ok = ours == 0 && r.stale_accepted == 0 && r.stuck == 0 && r.nodes_left >= 0 && left == 0 &&
                    r.worker_failures == 0 && r.user_socket_stalls == 0 && r.fairness_violations == 0 &&
                    r.fault_failures == 0 && r.model_violations == 0;
      // a holder that stopped right before a write resumed after its successor wrote: that
      // write must have reached the resource and been rejected (the fencing demonstration;
      // shared: the paused holder is a writer. Not for the semaphore: whether its late write
      // finds N others holding is the timing's, and the resource cannot refuse it anyway.
      // Not with lock-delay on: the successor waits it out after the holder's session
      // ended, and the holder, resumed meanwhile, stops at its validity deadline unwritten:
      // the models' lock-delay rule judges that run)
      if (o.recipe != "semaphore" && o.lock_delay_ms == 0 && r.self_pauses > 0 && r.stale_rejected == 0) {
        run_ok = false;
        std::cout << "  " << s << " #" << r.run << ": a paused holder's stale write was never rejected\n";
      }
      ok = ok && run_ok;
    }
    if (runs == 0) continue;  // after a mutant's catch
    out.ok = out.ok && ok;
    std::cout << std::left << std::setw(20) << s << std::setw(6) << runs << std::setw(6) << t.acquisitions;
    if (o.recipe == "shared") std::cout << std::setw(7) << t.write_sections;
    std::cout << std::setw(10) << t.overlaps << std::setw(12) << t.overlaps_paused;
    if (o.recipe == "shared") std::cout << std::setw(12) << t.reader_overlaps;
    if (o.recipe == "local-queue")
      std::cout << std::setw(12) << t.overlaps_within << std::setw(10) << t.fair_max << std::setw(11)
                << t.fairness_violations << std::setw(13) << t.wait_grants_max;
    if (o.recipe == "semaphore")
      std::cout << std::setw(10) << t.max_concurrent << std::setw(6) << t.at_capacity << std::setw(13)
                << t.over_capacity_writes;
    else
      std::cout << std::setw(11) << t.stale_accepted << std::setw(11) << t.stale_rejected;
    std::cout << std::setw(14) << fmt(t.max_grant_delay_ms)
              << std::setw(13) << fmt(t.max_wait_ms) << std::setw(7) << t.stuck << std::setw(7) << t.nodes_left
              << std::setw(9) << t.watches_left << std::setw(6) << t.lost << std::setw(6) << t.dead_grants
              << t.rss_before_kb << "->"
              << t.rss_after_kb << "  models " << t.model_violations << (ok ? "" : "  FAILED") << "\n";
    json << (first ? "" : ",") << "{\"scenario\":\"" << s << "\",\"runs\":" << runs
         << ",\"acquisitions\":" << t.acquisitions << ",\"overlaps\":" << t.overlaps
         << ",\"overlaps_paused\":" << t.overlaps_paused << ",\"stale_accepted\":" << t.stale_accepted
         << ",\"stale_rejected\":" << t.stale_rejected << ",\"max_grant_delay_ms\":" << t.max_grant_delay_ms
         << ",\"max_wait_ms\":" << t.max_wait_ms << ",\"stuck\":" << t.stuck << ",\"nodes_left\":" << t.nodes_left
         << ",\"watches_left\":" << t.watches_left << ",\"lost\":" << t.lost << ",\"dead_grants\":" << t.dead_grants
         << ",\"rss_before_kb\":" << t.rss_before_kb << ",\"rss_after_kb\":" << t.rss_after_kb
         << ",\"write_sections\":" << t.write_sections << ",\"reader_overlaps\":" << t.reader_overlaps
         << ",\"max_concurrent\":" << t.max_concurrent << ",\"at_capacity\":" << t.at_capacity
         << ",\"over_capacity_writes\":" << t.over_capacity_writes << ",\"overlaps_within\":" << t.overlaps_within
         << ",\"fair_max\":" << t.fair_max << ",\"fairness_violations\":" << t.fairness_violations
         << ",\"wait_grants_max\":" << t.wait_grants_max
         << ",\"foreign_writes\":" << t.foreign_writes << ",\"user_socket_stalls\":" << t.user_socket_stalls
         << ",\"injected\":" << t.injected << ",\"fault_checked\":" << t.fault_waits
         << ",\"fault_failures\":" << t.fault_failures << ",\"worst_fail_ms\":" << t.worst_fail_ms
         << ",\"grants_after_close\":" << t.grants_after_close << ",\"lost_at_handover\":" << t.lost_at_handover << ",\"overlaps_ended\":" << t.overlaps_ended << ",\"stale_after_taken\":" << t.stale_after_taken
         << ",\"close_ms\":" << t.close_ms << ",\"close_stall_ms\":" << t.close_stall_ms
         << ",\"model_violations\":" << t.model_violations << ",\"znode_writes\":" << t.znode_writes
         << ",\"ok\":" << (ok ? "true" : "false") << "}";
    first = false;
    if (t.injected > 0) {
      std::ostringstream row;
      row << std::left << std::setw(20) << s << std::setw(6) << runs << std::setw(10) << t.injected << std::setw(9)
          << t.fault_waits << std::setw(10) << t.fault_failures << std::setw(15) << fmt(t.worst_fail_ms)
          << std::setw(14) << t.grants_after_close << std::setw(11) << t.overlaps_ended << std::setw(11)
          << t.stale_after_taken << std::setw(10) << fmt(t.close_ms) << fmt(t.close_stall_ms) << (ok ? "" : "  FAILED")
          << "\n";
      fault_rows.push_back(row.str());
    }
  }
  json << "]}\n";
  // ensemble-gone, local-close, operator-delete: their own rules (checker.hpp,
  // check_fault_rules)
  if (!fault_rows.empty()) {
    std::cout << "\nfault rules (ensemble-gone: every waiter fails with an expiry and every holder stops by the "
                 "last member's kill + the session timeout + 1000 ms; local-close: no grant after the close (one on its "
                 "way when it was taken is handed over lost), every waiter fails within a session timeout; "
                 "operator-delete: the holder stops within a quarter session "
                 "timeout, lost with node_deleted, no waiter fails; pause-close: local-close's rule, each async_close "
                 "within 1000 + 1000 ms, the closing process's probe session stalled under 500 ms: close-ms the "
                 "slowest async_close, stall-ms the probe's worst)\n"
              << "scenario            runs  injected  checked  failures  worst-fail-ms  grants-after  ended-ovl  ended-acc  "
                 "close-ms  stall-ms\n";
    for (auto& row : fault_rows) std::cout << row;
  }
  out.mutant_caught = mutant_caught;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (int status = parse_options(argc, argv, o); status >= 0) return status;
  if (o.list_mutants) {
    for (auto& m : mutants()) std::cout << m.name << " " << m.recipe << " " << m.breaks << "\n";
    return 0;
  }
  if (!o.check.empty()) {
    // offline: every history in the dir against its recipe's models
    std::vector<fs::path> files;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(o.check, ec))
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
    if (ec) {
      std::cerr << "zklock-faultharness: --check: " << ec.message() << ": " << o.check << "\n";
      return 2;
    }
    std::sort(files.begin(), files.end());
    bool ok = !files.empty();
    if (files.empty()) std::cout << "no histories (*.jsonl) in " << o.check << "\n";
    for (auto& f : files) {
      try {
        const history h = read_history(f.string());
        auto v = check_models(h);
        std::cout << f.filename().string() << ": " << h.run.recipe << ", " << h.acquires.size() << " acquires, "
                  << h.writes.size() << " writes: ";
        if (v.empty()) {
          std::cout << "every model holds\n";
        } else {
          ok = false;
          std::cout << v.size() << " violations; first: " << v[0].rule << ": " << v[0].what << "\n";
        }
      } catch (const std::exception& e) {
        ok = false;
        std::cout << f.filename().string() << ": " << e.what() << "\n";
      }
    }
    std::cout << (ok ? "PASS" : "FAIL") << "\n";
    return ok ? 0 : 1;
  }
  // each --pass's options, checked before any server starts
  std::vector<options> pass_options(o.passes.size());
  for (std::size_t i = 0; i < o.passes.size(); ++i)
    if (int status = parse_pass(argc, argv, o.passes[i], pass_options[i]); status >= 0) return status;
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
    if (std::string(argv[i]) != "--seed" && (i == 0 || std::string(argv[i - 1]) != "--seed")) {
      const std::string a = argv[i];  // a --pass=ARGS quoted, to paste as printed
      replay << (a.find(' ') == std::string::npos ? a : "'" + a + "'") << " ";
    }
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
      std::cout << "client           run  successor-grant  holder-stop  window  suspended  window  lost    window  healed  note\n";
      json << "{\"seed\":" << o.seed << ",\"session_timeout_ms\":" << o.window_session_timeout_ms << ",\"windows\":[";
      bool first = true;
      for (auto& w : results) {
        auto win = [&](double t) { return t < 0 || w.grant_ms < 0 ? std::string("-") : fmt(t - w.grant_ms); };
        auto at = [](double t) { return t < 0 ? std::string("-") : fmt(t); };  // -1: never seen
        std::cout << std::left << std::setw(17) << w.client << std::setw(5) << w.run << std::setw(17) << at(w.grant_ms)
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
        if ((w.client == "zklock-lib" || w.client == "zklock-election") &&
            !(w.grant_ms > 0 && w.lost_ms > 0 && w.lost_ms < w.grant_ms)) {
          all_ok = false;
          std::cout << "  FAILED: zklock's " << (w.client == "zklock-election" ? "leadership" : "guard")
                    << " was not lost before the successor's grant\n";
        }
      }
      json << "]}\n";
    } else if (o.passes.empty()) {
      auto out = run_pass(o, ens, work, "", json);
      all_ok = all_ok && out.ok;
    } else {
      // several passes on this one ensemble (--pass): each its own options, its lock dirs and
      // run dirs prefixed with its number; a mutant's pass passes when the mutant is caught
      for (std::size_t i = 0; i < o.passes.size(); ++i) {
        options po = pass_options[i];
        po.seed = o.seed;
        po.seed_given = true;
        std::cout << "\n== pass " << i + 1 << " of " << o.passes.size() << ": " << o.passes[i] << "\n" << std::flush;
        std::cerr << "== pass " << i + 1 << ": " << o.passes[i] << "\n";
        pass_outcome out;
        try {
          out = run_pass(po, ens, work, "pass" + std::to_string(i + 1) + "-", json);
        } catch (const std::exception& e) {
          std::cerr << "zklock-faultharness: pass " << i + 1 << ": " << e.what() << "\n";
          out.ok = false;
        }
        const bool ok = po.mutant.empty() ? out.ok
                                          : out.mutant_caught && (po.caught_by.empty() || out.first_violation == po.caught_by);
        std::cout << "== pass " << i + 1 << ": " << (ok ? "PASS" : "FAIL") << "\n";
        all_ok = all_ok && ok;
      }
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
