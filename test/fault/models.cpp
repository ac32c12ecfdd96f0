#include "models.hpp"

#include "checker.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace zklock::fault {

namespace {

std::string ms(std::int64_t ns, std::int64_t base) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << double(ns - base) / 1e6 << " ms";
  return s.str();
}

bool reader(const std::string& side) { return side == "read"; }

// Whether a section was told it lost the lock by a notice of its own: its guard's validity had
// passed ("status=...": the worker's check before a write; a peer's connection "state"), it was
// handed out dead, or its guard turned lost for a cause (the worker's lost_cause report). Not
// a resource's refusal alone: that only says a later holder wrote.
bool lost_on_its_own(const h_acquire& a) {
  if (a.told_how.rfind("status=", 0) == 0 || a.told_how == "state" || a.told_how == "dead at its grant") return true;
  // a history recorded before the cause was: judged by the rule it was recorded under (a told
  // holder's overlap excused whatever told it)
  if (a.lost_cause == lost_cause_not_recorded) return true;
  for (const char* cause : {"deadline_passed", "session_expired", "session_closed", "session_replaced", "node_deleted"})
    if (a.lost_cause == cause) return true;
  return false;
}

}  // namespace

std::vector<violation> check_models(const history& h) {
  std::vector<violation> out;
  const auto& run = h.run;
  // times are printed from the history's first event
  std::int64_t base = run.end_ns;
  for (auto& a : h.acquires) base = std::min(base, a.invoke_ns);
  const std::int64_t end = run.end_ns;
  auto at = [&](std::int64_t t) { return ms(t, base); };
  auto op = [&](const h_acquire& a) {
    std::ostringstream s;
    s << "acquire " << a.id << " (" << a.process << ", " << a.side << ", token " << a.token << ", granted at "
      << at(a.complete_ns) << ")";
    return s.str();
  };

  const bool exclusive_kind = run.recipe == "mutex" || run.recipe == "election" || run.recipe == "local-queue" ||
                              run.recipe == "shared";
  auto conflict = [&](const h_acquire& a, const h_acquire& b) {
    return run.recipe != "shared" || !reader(a.side) || !reader(b.side);
  };
  std::vector<const h_acquire*> secs;  // granted sections, in grant order
  std::map<int, const h_acquire*> by_id;
  for (auto& a : h.acquires) {
    by_id[a.id] = &a;
    if (a.outcome == "ok") secs.push_back(&a);
  }
  std::stable_sort(secs.begin(), secs.end(), [](auto* x, auto* y) { return x->complete_ns < y->complete_ns; });
  auto hold_end = [&](const h_acquire& a) { return a.hold_end() ? a.hold_end() : end; };
  std::map<int, std::vector<const h_write*>> writes_of;
  for (auto& w : h.writes) writes_of[w.acquire].push_back(&w);
  auto first_accepted_register = [&](const h_acquire& b) -> const h_write* {
    for (auto* w : writes_of[b.id])
      if (w->resource == "register" && w->outcome == "ok") return w;
    return nullptr;
  };

  // exclusion, token order
  if (exclusive_kind) {
    for (std::size_t i = 0; i < secs.size(); ++i)
      for (std::size_t k = i + 1; k < secs.size(); ++k) {
        const h_acquire& a = *secs[i];
        const h_acquire& b = *secs[k];
        if (!conflict(a, b)) continue;
        if (b.token <= a.token && b.complete_ns > a.complete_ns)
          out.push_back({"token-order", op(b) + " carries a token not above the earlier " + op(a) +
                                            (b.token == a.token && run.recipe == "election" ? " (two leaders of one term)" : "")});
        if (b.complete_ns >= hold_end(a)) continue;
        // overlap: excused only if `a` lost the lock in a way it could not see at once (stopped
        // by the nemesis before the later grant, or a loss of its own: lost_on_its_own), was
        // told within T + 1 s of the later grant (the time it was stopped aside), and nothing of
        // it was accepted late. A live holder told only by a resource's refusal held the lock
        // with the later one: the lock granted twice, whatever the fencing then refused.
        std::string late;
        const h_write* b_first = first_accepted_register(b);
        for (auto* w : writes_of[a.id]) {
          if (w->outcome != "ok") continue;
          if (w->resource == "register" && b_first && w->id > b_first->id) {
            late = "its write " + std::to_string(w->id) + " (token " + std::to_string(w->token) +
                   ") was accepted by the register at " + at(w->complete_ns) + ", after " + b.process + "'s write " +
                   std::to_string(b_first->id) + " (token " + std::to_string(b_first->token) + ")";
            break;
          }
          if (w->resource == "znode" && w->invoke_ns > b.complete_ns) {
            late = "its znode write " + std::to_string(w->id) + " sent at " + at(w->invoke_ns) + " was accepted";
            break;
          }
        }
        bool stopped_before = false;  // a's process stopped between its grant and b's
        std::int64_t stopped_after = 0;  // a's process stopped between b's grant and a's notice
        for (auto& p : h.pauses) {
          if (process_of(p.process) != process_of(a.process)) continue;
          if (p.from_ns <= b.complete_ns && p.to_ns >= a.complete_ns) stopped_before = true;
          stopped_after += std::max<std::int64_t>(
              0, std::min(p.to_ns, a.told_lost_ns) - std::max(p.from_ns, b.complete_ns));
        }
        std::string why;
        if (!a.told_lost_ns)
          why = "the earlier holder was never told it lost the lock";
        else if (!late.empty())
          why = late;
        else if (!stopped_before && !lost_on_its_own(a))
          why = "it was told only by a resource's refusal (" + a.told_how + "; its guard: " +
                (a.lost_cause.empty() ? std::string("no loss reported") : a.lost_cause) +
                "): a live holder, the lock granted twice";
        else if (a.told_lost_ns - b.complete_ns - stopped_after > run.session_timeout_ns + 1'000'000'000)
          why = "it was told only at " + at(a.told_lost_ns) + " (" + a.told_how + "), more than the session timeout + 1000 ms after the later grant" +
                (stopped_after ? " (its stopped time aside)" : "");
        if (why.empty()) continue;
        out.push_back({"exclusion", op(b) + " while " + op(a) + " held until " + at(hold_end(a)) + ": " + why});
      }
  }

  // lock-delay: a holder stopped (SIGSTOP) for a session timeout or more while its section was
  // open lost its node with its session, not by a release (a stopped process sends nothing):
  // no other process is granted before the stop + lock-delay (the session was alive at the stop,
  // so it ended after it, and the grant waits lock-delay from the deletion; 100 ms of slack for
  // the reports' timing)
  if (exclusive_kind && run.lock_delay_ns > 0) {
    for (auto& p : h.pauses) {
      if (p.to_ns - p.from_ns < run.session_timeout_ns) continue;
      const h_acquire* held = nullptr;
      for (auto* a : secs)
        if (process_of(a->process) == process_of(p.process) && a->complete_ns <= p.from_ns && hold_end(*a) >= p.from_ns)
          held = a;
      if (!held) continue;
      for (auto* b : secs) {
        if (process_of(b->process) == process_of(p.process) || !conflict(*held, *b)) continue;
        if (b->complete_ns > p.from_ns && b->complete_ns < p.from_ns + run.lock_delay_ns - 100'000'000) {
          out.push_back({"lock-delay", op(*b) + " only " + std::to_string((b->complete_ns - p.from_ns) / 1000000) +
                                           " ms after " + op(*held) + "'s process was stopped at " + at(p.from_ns) +
                                           " (for " + std::to_string((p.to_ns - p.from_ns) / 1000000) +
                                           " ms: its session ended holding); lock-delay " +
                                           std::to_string(run.lock_delay_ns / 1000000) + " ms"});
          break;
        }
      }
    }
  }

  // permits
  if (run.recipe == "semaphore") {
    for (auto* b : secs) {
      std::vector<const h_acquire*> open;
      for (auto* a : secs)
        if (a->complete_ns <= b->complete_ns && hold_end(*a) > b->complete_ns && !(a != b && a->told_lost_ns) &&
            !(a != b && h.paused_at(a->process, b->complete_ns)))
          open.push_back(a);
      if (int(open.size()) > run.capacity) {
        std::string list;
        for (auto* a : open) list += (list.empty() ? "" : ", ") + std::to_string(a->id);
        out.push_back({"permits", std::to_string(open.size()) + " sections held at " + at(b->complete_ns) +
                                      " (capacity " + std::to_string(run.capacity) + "): acquires " + list});
        break;
      }
    }
  }

  // acted after lost
  for (auto& w : h.writes) {
    auto it = by_id.find(w.acquire);
    if (it == by_id.end()) continue;
    const h_acquire& a = *it->second;
    if (a.told_lost_ns && w.invoke_ns > a.told_lost_ns)
      out.push_back({"acted-after-lost", "write " + std::to_string(w.id) + " (" + w.resource + ", token " +
                                             std::to_string(w.token) + ") sent at " + at(w.invoke_ns) + " by " + op(a) +
                                             ", told it lost the lock at " + at(a.told_lost_ns) + " (" + a.told_how + ")"});
  }

  // stale write (register), in the register's order
  if (run.recipe != "semaphore") {
    std::int64_t highest = 0, highest_writer = 0;
    for (auto& w : h.writes) {
      if (w.resource != "register" || w.outcome != "ok") continue;
      auto it = by_id.find(w.acquire);
      const bool rd = run.recipe == "shared" && it != by_id.end() && reader(it->second->side);
      const std::int64_t bar = rd ? highest_writer : highest;
      if (w.token < bar)
        out.push_back({"stale-write", "the register accepted write " + std::to_string(w.id) + " (" + w.process +
                                          ", token " + std::to_string(w.token) + ") at " + at(w.complete_ns) +
                                          " after token " + std::to_string(bar)});
      highest = std::max(highest, w.token);
      if (!rd) highest_writer = std::max(highest_writer, w.token);
    }
  }

  // the znode: lost updates, fencing
  {
    std::vector<const h_write*> acked;
    for (auto& w : h.writes)
      if (w.resource == "znode" && w.outcome == "ok" && w.version >= 0) acked.push_back(&w);
    std::sort(acked.begin(), acked.end(), [](auto* x, auto* y) { return x->version < y->version; });
    for (std::size_t i = 1; i < acked.size(); ++i) {
      auto* p = acked[i - 1];
      auto* w = acked[i];
      if (w->version == p->version)
        out.push_back({"lost-update", "znode writes " + std::to_string(p->id) + " and " + std::to_string(w->id) +
                                          " both acknowledged with version " + std::to_string(w->version)});
      else if (w->version == p->version + 1 && w->read != p->value)
        out.push_back({"lost-update", "znode write " + std::to_string(w->id) + " (" + w->process + ", token " +
                                          std::to_string(w->token) + ", version " + std::to_string(w->version) +
                                          ") read " + std::to_string(w->read) + " but the acknowledged write " +
                                          std::to_string(p->id) + " (" + p->process + ", token " +
                                          std::to_string(p->token) + ") before it had written " + std::to_string(p->value)});
    }
    for (auto* w : acked) {
      auto it = by_id.find(w->acquire);
      if (it == by_id.end()) continue;
      const h_acquire& a = *it->second;
      for (auto* b : secs)
        if (b->token > a.token && conflict(a, *b) && b->complete_ns < w->invoke_ns && b->complete_ns > a.complete_ns) {
          out.push_back({"fenced-znode", "znode write " + std::to_string(w->id) + " of " + op(a) + " sent at " +
                                             at(w->invoke_ns) + " was accepted after the later grant of " + op(*b) +
                                             (w->fenced ? "" : " (sent without the check op)")});
          break;
        }
    }
  }

  // liveness
  if (run.heal_ns > 0) {
    const std::int64_t bound = run.session_timeout_ns + run.lock_delay_ns + run.liveness_margin_ns;
    for (auto& a : h.acquires) {
      if (a.complete_ns && a.complete_ns <= run.heal_ns) continue;
      const std::int64_t by = std::max(a.invoke_ns, run.heal_ns) + bound;
      if ((a.complete_ns == 0 && end > by) || a.complete_ns > by)
        out.push_back({"liveness", "acquire " + std::to_string(a.id) + " (" + a.process + ", sent at " +
                                       at(a.invoke_ns) + ", faults healed at " + at(run.heal_ns) + ") " +
                                       (a.complete_ns ? "completed at " + at(a.complete_ns) : std::string("never completed")) +
                                       ", bound " + at(by)});
    }
    // a waiter not granted while the lock was free (fewer than `capacity` conflicting sections)
    for (auto& a : h.acquires) {
      const std::int64_t to = a.complete_ns ? a.complete_ns : end;
      std::vector<std::pair<std::int64_t, int>> ev;  // conflicting sections over the wait
      for (auto* s : secs) {
        if (s->id == a.id || !conflict(a, *s)) continue;
        if (hold_end(*s) <= a.invoke_ns || s->complete_ns >= to) continue;
        ev.push_back({std::max(s->complete_ns, a.invoke_ns), +1});
        ev.push_back({std::min(hold_end(*s), to), -1});
      }
      ev.push_back({to, 0});
      std::sort(ev.begin(), ev.end());
      int held = 0;
      std::int64_t free_since = a.invoke_ns;
      for (auto& [t, d] : ev) {
        if (held < run.capacity && t - free_since > bound) {
          out.push_back({"liveness", "acquire " + std::to_string(a.id) + " (" + a.process + ", sent at " +
                                         at(a.invoke_ns) + ") waited while the lock was free from " + at(free_since) +
                                         " to " + at(t) + " (bound " + std::to_string(bound / 1000000) + " ms)"});
          break;
        }
        const int before = held;
        held += d;
        if (before >= run.capacity && held < run.capacity) free_since = t;
      }
    }
  }

  // fairness (local-queue)
  if (run.recipe == "local-queue" && run.max_local_handoffs > 0) {
    std::vector<section> v;
    std::vector<wait_interval> waits;
    for (auto* s : secs) {
      section x;
      x.who = s->process;
      x.token = s->token;
      x.start = s->complete_ns;
      x.end = hold_end(*s);
      x.child_events = s->child_events;
      v.push_back(x);
    }
    for (auto& a : h.acquires) waits.push_back({a.process, a.invoke_ns, a.complete_ns ? a.complete_ns : end});
    run_result r;
    check_fairness(r, v, waits, run.max_local_handoffs);
    for (auto& n : r.notes) out.push_back({"fairness", n});
  }
  return out;
}

}  // namespace zklock::fault
