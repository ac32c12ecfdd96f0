#include "checker.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <tuple>

namespace zklock::fault {

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

// local-queue's fairness bound (recipe_rule): per wait of a contender of process Q, per other
// process P, per node of P (the token's czxid, token >> 16), the grants of that node within the
// wait whose child-event count exceeds the count at the node's first grant within the wait.
void check_fairness(run_result& r, const std::vector<section>& v, const std::vector<wait_interval>& waits,
                    int max_local_handoffs) {
  for (auto& w : waits) {
    const std::string q = process_of(w.who);
    std::map<std::string, int> per_process;                            // P -> grants in the wait
    std::map<std::pair<std::string, std::int64_t>, std::pair<std::int64_t, int>> per_node;  // -> (E0, count)
    for (auto& s : v) {  // in grant order
      if (s.start <= w.from || s.start >= w.to) continue;
      const std::string p = process_of(s.who);
      if (p == q) continue;
      ++per_process[p];
      r.wait_grants_max = std::max(r.wait_grants_max, per_process[p]);
      if (s.child_events < 0) continue;
      auto [it, first] = per_node.try_emplace({p, s.token >> 16}, s.child_events, 0);
      if (first || s.child_events <= it->second.first) continue;
      const int n = ++it->second.second;
      r.fair_max = std::max(r.fair_max, n);
      if (n == max_local_handoffs + 1) {
        ++r.fairness_violations;
        r.notes.push_back("FAIRNESS: " + p + "'s node " + std::to_string(s.token >> 16) + " made " +
                          std::to_string(n) + " grants after its child watch fired while " + w.who +
                          " waited (bound " + std::to_string(max_local_handoffs) + "), the last to " + s.who);
      }
    }
  }
}

void check(run_result& r, const std::vector<record>& j, const std::vector<pause_interval>& pauses,
           const std::map<std::string, std::string>& kind_of, std::int64_t stuck_bound_ns, std::int64_t t_end,
           const recipe_rule& rule, const std::vector<node_deletion>& deletions) {
  // sections, keyed by holder and token
  std::map<std::pair<std::string, std::int64_t>, section> secs;
  std::map<std::string, std::pair<std::string, std::int64_t>> current;  // who -> its open section
  std::map<std::string, std::int64_t> waiting_since;                    // who -> acquire start
  std::map<std::string, std::int64_t> last_acquire;
  std::vector<std::tuple<std::int64_t, std::int64_t, bool>> grants;  // (time, token, not a reader)
  std::vector<wait_interval> waits;  // every acquire's wait (local-queue's fairness)
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
        waits.push_back({x.who, it->second, x.t_client});
        waiting_since.erase(it);
      }
    }
    if (x.kind == "user_socket_stall") {
      ++r.user_socket_stalls;
      r.notes.push_back("user socket stalled: " + x.who + " (" + x.extra + ")");
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
      s.node = x.extra.substr(0, x.extra.find(' '));
      if (s.side == "write") ++r.write_sections;
      s.token = x.token;
      if (auto it = last_acquire.find(x.who); it != last_acquire.end()) s.acquired_at = it->second;
      s.start = s.end = x.t_client;
      if (auto at = x.extra.find("ev="); at != std::string::npos) s.child_events = std::stoll(x.extra.substr(at + 3));
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
  for (auto& [who, since] : waiting_since) {
    waits.push_back({who, since, t_end});
    if (t_end - since > stuck_bound_ns) {
      ++r.stuck;
      r.notes.push_back(who + " still waiting after " + std::to_string((t_end - since) / 1000000) + " ms");
    }
  }
  // local-close: when a contender's (or a local-queue process's) session was closed by its owner
  std::vector<std::pair<std::string, std::int64_t>> closes;
  for (auto& x : j)
    if (x.kind == "close") closes.push_back({x.who, x.t_client});
  for (auto& [k, s] : secs) {
    // operator-delete: the section holding the node when it was deleted; local-close: a section
    // of a session its owner closed (its holder's next report may come late: a destroy may
    // block the thread while the C client waits for the close's reply)
    for (auto& d : deletions)
      if (!s.node.empty() && s.node == d.node && s.start <= d.at && s.end >= d.at) s.taken_at = d.at;
    for (auto& [owner, at] : closes)
      if ((s.who == owner || process_of(s.who) == owner) && s.start <= at && s.end >= at)
        s.taken_at = s.taken_at ? std::min(s.taken_at, at) : at;
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
    if (x.verdict > 0 && sec != secs.end() && sec->second.taken_at && x.t_client >= sec->second.taken_at) {
      // sent after its node was deleted (or its session closed), before its holder could know,
      // and received before the successor's first message: only the fencing check can stop
      // such a write, and it was not late for it yet (reported, as a paused holder's overlap is)
      ++r.stale_after_taken;
      r.notes.push_back("write of a holder whose lock was taken, accepted: " + x.kind + " by " + x.who + " token " +
                        std::to_string(x.token) + " sent " +
                        std::to_string((x.t_client - sec->second.taken_at) / 1000000) + " ms after");
    } else if (x.verdict > 0) {
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
  // a pause stops the whole process (SIGSTOP): every contender of it
  auto paused_in = [&](const section& s) {
    return std::any_of(pauses.begin(), pauses.end(), [&](auto& p) {
      return process_of(p.who) == process_of(s.who) && p.from <= s.end && p.to >= s.start;
    });
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
        if (v[a].who != v[b].who && v[a].effective_end() > v[b].start) {
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
      if (v[b].start >= v[a].effective_end()) {
        // granted after a's node was deleted or its session closed: a is no holder any more (its
        // late writes are the fencing check's)
        if (rule.conflict(v[a], v[b])) ++r.overlaps_ended;
        continue;
      }
      if (!rule.conflict(v[a], v[b])) {
        ++r.reader_overlaps;
        continue;
      }
      if (paused_in(v[a]))
        ++r.overlaps_paused;
      else if (process_of(v[a].who) == process_of(v[b].who)) {
        ++r.overlaps_within;  // two coroutines of one process (local-queue: a local handoff)
        violation(v[a], "OVERLAP within " + process_of(v[a].who) + ": " + v[a].who + " (token " +
                            std::to_string(v[a].token) + ") until +" + std::to_string((v[a].end - v[b].start) / 1000000) +
                            " ms after " + v[b].who + " (token " + std::to_string(v[b].token) + ") was granted");
      } else
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
  if (rule.max_local_handoffs > 0) {
    // A wait ends, for fairness, when its own session is closed (local-close): from then on its
    // process has no node in the queue (the close deletes it), so the others' listings rightly
    // show nobody waiting, while the waiter's failure is reported a little later.
    for (auto& w : waits)
      for (auto& [owner, at] : closes)
        if ((w.who == owner || process_of(w.who) == owner) && w.from <= at && at < w.to) w.to = at;
    check_fairness(r, v, waits, rule.max_local_handoffs);
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

namespace {

// One acquire's wait, from the journal: how it ended ("grant", "dead_grant", "acquire_error",
// "idle", or "open" at the run's end) and the record's extra.
struct wait_span {
  std::string who;
  std::int64_t from = 0, to = 0;
  std::string how, extra;
};

// One section, from the journal: its node, its end, and its loss.
struct held_span {
  std::string who, node;
  std::int64_t token = 0, start = 0, end = 0, lost_at = 0;
  std::string lost_cause;
};

std::vector<wait_span> waits_in(const std::vector<record>& j, std::int64_t t_end) {
  std::vector<wait_span> out;
  std::map<std::string, std::int64_t> since;
  for (auto& x : j) {
    if (x.kind == "acquire") {
      since[x.who] = x.t_client;
    } else if (x.kind == "grant" || x.kind == "dead_grant" || x.kind == "acquire_error" || x.kind == "idle") {
      if (auto it = since.find(x.who); it != since.end()) {
        out.push_back({x.who, it->second, x.t_client, x.kind, x.extra});
        since.erase(it);
      }
    }
  }
  for (auto& [who, from] : since) out.push_back({who, from, t_end, "open", ""});
  return out;
}

std::vector<held_span> sections_in(const std::vector<record>& j) {
  std::vector<held_span> out;
  std::map<std::pair<std::string, std::int64_t>, std::size_t> at;
  for (auto& x : j) {
    if (x.kind == "grant") {
      at[{x.who, x.token}] = out.size();
      out.push_back({x.who, x.extra.substr(0, x.extra.find(' ')), x.token, x.t_client, x.t_client, 0, ""});
      continue;
    }
    auto it = at.find({x.who, x.token});
    if (it == at.end()) continue;
    auto& s = out[it->second];
    if (x.kind == "write" || x.kind == "end" || x.kind == "lost") s.end = std::max(s.end, x.t_client);
    if (x.kind == "lost" && !s.lost_at) s.lost_at = x.t_client;
    if (x.kind == "lost_cause") s.lost_cause = x.extra;
  }
  return out;
}

// A contender of the session (or process) `owner`: itself, or a coroutine of it (WHO.i).
bool belongs_to(const std::string& who, const std::string& owner) {
  return !owner.empty() && (who == owner || process_of(who) == owner);
}

std::string ms(std::int64_t ns) { return std::to_string(ns / 1000000); }

// The worker's own deadline (threads mode: acquire || timer) that ended an acquire, from its
// acquire_error ("deadline=MS ..."), in ns; 0 when the library's error ended it.
std::int64_t own_deadline_ns(const wait_span& w) {
  if (w.how != "acquire_error") return 0;
  const std::string v = extra_field(w.extra, "deadline");
  return v.empty() ? 0 : std::int64_t(std::atoll(v.c_str())) * 1000000;
}

double field_ms(const std::string& extra, const std::string& key) {
  const std::string v = extra_field(extra, key);
  return v.empty() ? 0 : std::atof(v.c_str());
}

}  // namespace

void check_fault_rules(run_result& r, const std::vector<record>& j, const std::vector<outage>& outages,
                       const std::vector<node_deletion>& deletions, const fault_bounds& b, std::int64_t t_end) {
  const auto waits = waits_in(j, t_end);
  const auto sections = sections_in(j);
  auto fail = [&](std::string note) {
    ++r.fault_failures;
    r.notes.push_back(std::move(note));
  };
  auto worst = [&](std::int64_t ns) { r.worst_fail_ms = std::max(r.worst_fail_ms, ns / 1e6); };
  // An acquire its own deadline ended: the user cancelled it (the rules below do not judge it as
  // a failure the fault made); true when it ended in time for a cancellation, else a failure.
  auto ended_by_own_deadline = [&](const wait_span& w, const std::string& rule) {
    const std::int64_t dl = own_deadline_ns(w);
    if (!dl) return false;
    if (w.to - w.from > dl + b.cancel_margin_ns)
      fail(rule + ": " + w.who + "'s acquire, cancelled by its own deadline of " + ms(dl) + " ms, completed only " +
           ms(w.to - w.from) + " ms after it was sent (bound: the deadline + " + ms(b.cancel_margin_ns) + " ms)");
    return true;
  };

  // ensemble-gone
  for (auto& o : outages) {
    ++r.injected;
    const std::int64_t gone = o.gone ? o.gone : o.down;  // the bound runs from every server gone
    const std::int64_t bound = gone + b.session_timeout_ns + b.outage_margin_ns;
    // the old sessions' acquires: sent before the servers were back and before every old
    // session had expired (an acquire after that is a new session's, sent once a quorum served,
    // which may be before the last member's start returned)
    const std::int64_t old_until = std::min(o.up, gone + b.session_timeout_ns);
    for (auto& w : waits) {
      if (!(w.from < old_until && w.to > o.down)) continue;
      ++r.fault_waits;
      if (w.how == "grant" || w.how == "dead_grant") {
        // granted while no server served: only a reply already in flight, or a local handoff;
        // its section is checked below
        if (w.to > gone + b.outage_margin_ns)
          r.notes.push_back("ensemble-gone: " + w.who + " was granted " + ms(w.to - o.down) +
                            " ms after every server went down (" + w.how + ")");
        continue;
      }
      if (ended_by_own_deadline(w, "ENSEMBLE-GONE")) continue;
      worst(w.to - std::max(w.from, gone));
      if (w.how != "acquire_error" || w.to > bound)
        fail("ENSEMBLE-GONE: " + w.who + "'s acquire (waiting since " + ms(w.from - o.down) +
             " ms after the outage began) " +
             (w.how == "acquire_error" ? "failed only " + ms(w.to - o.down) + " ms after it began"
                                       : "was still waiting " + ms(w.to - o.down) + " ms after it began (" + w.how + ")") +
             " (bound: session timeout + " + ms(b.outage_margin_ns) + " ms after every server was gone, " +
             ms(gone - o.down) + " ms after it began)");
      else if (w.extra.find("expired") == std::string::npos)
        fail("ENSEMBLE-GONE: " + w.who + "'s acquire failed with " + w.extra + ", not a session expiry");
    }
    for (auto& s : sections) {
      if (!(s.start < old_until && s.end > o.down)) continue;
      ++r.fault_waits;
      worst(s.end - gone);
      if (s.end > bound)
        fail("ENSEMBLE-GONE: " + s.who + " (token " + std::to_string(s.token) + ") held until " + ms(s.end - o.down) +
             " ms after every server went down");
    }
  }

  // local-close: the workers' "close" records
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& c = j[i];
    if (c.kind != "close") continue;
    ++r.injected;
    std::int64_t until = t_end;  // the owner's next session
    for (std::size_t k = i + 1; k < j.size(); ++k)
      if (j[k].kind == "hello" && j[k].who == c.who && j[k].t_client > c.t_client) {
        until = j[k].t_client;
        break;
      }
    for (auto& w : waits) {
      if (!belongs_to(w.who, c.who) || !(w.from < until && w.to > c.t_client)) continue;
      ++r.fault_waits;
      const std::int64_t from = std::max(w.from, c.t_client);
      if ((w.how == "grant" || w.how == "dead_grant") && w.to < until) {
        // A grant on its way when the close was taken: handed over lost, not used.
        if (w.how == "dead_grant" && w.extra == "status=lost" && w.to - c.t_client <= b.close_ns()) {
          ++r.lost_at_handover;
          continue;
        }
        ++r.grants_after_close;
        fail("GRANT AFTER CLOSE: " + w.who + " (" + w.how + ") " + ms(w.to - c.t_client) + " ms after " + c.who +
             "'s " + c.extra);
        continue;
      }
      worst(w.to - from);
      if (w.how != "acquire_error" || w.to - from > b.close_ns())
        fail("LOCAL-CLOSE: " + w.who + "'s acquire " +
             (w.how == "acquire_error" ? "failed only " + ms(w.to - from) + " ms" : "ended by " + w.how + " " + ms(w.to - from) + " ms") +
             " after " + c.who + "'s " + c.extra);
    }
  }

  // pause-close: each close's report, 1.5 s after it began
  for (auto& x : j) {
    if (x.kind != "closed") continue;
    const bool async = extra_field(x.extra, "how") == "async_close";
    const double took = field_ms(x.extra, "took_ms");
    const double stall = std::max(field_ms(x.extra, "probe_late_ms"), field_ms(x.extra, "probe_call_ms"));
    if (async) r.close_ms = std::max(r.close_ms, took);
    r.close_stall_ms = std::max(r.close_stall_ms, stall);
    if (async && took > (b.close_bound_ns + b.outage_margin_ns) / 1e6)
      fail("PAUSE-CLOSE: " + x.who + "'s async_close took " + std::to_string(int(took)) + " ms (bound " +
           ms(b.close_bound_ns) + " + " + ms(b.outage_margin_ns) + " ms)");
    if (!async && took > b.stall_bound_ns / 1e6)
      fail("PAUSE-CLOSE: " + x.who + "'s session destroyed: its destructor returned only after " +
           std::to_string(int(took)) + " ms");
    if (stall > b.stall_bound_ns / 1e6)
      fail("PAUSE-CLOSE: while " + x.who + "'s session closed (" + x.extra + "), the process's probe session stalled " +
           std::to_string(int(stall)) + " ms (bound " + ms(b.stall_bound_ns) + " ms)");
  }

  // operator-delete
  for (auto& d : deletions) {
    ++r.injected;
    // the section that held the node then (a waiter's node may be a reader's that holds too)
    const held_span* h = nullptr;
    for (auto& s : sections)
      if (s.node == d.node && s.start <= d.at && s.end >= d.at) h = &s;
    if (d.holder && !h) r.notes.push_back("operator-delete: no section held " + d.node + " when it was deleted (not checked)");
    if (h) {
      // it stops by the bound: lost, or its section over anyway (a 20 ms section may end
      // before the event arrives)
      ++r.fault_waits;
      const std::int64_t stopped = h->lost_at ? h->lost_at : h->end;
      worst(stopped - d.at);
      if (stopped - d.at > b.deleted_holder_ns())
        fail("OPERATOR-DELETE: " + h->who + " (token " + std::to_string(h->token) + ") " +
             (h->lost_at ? "reported its loss only " : "wrote on for ") + ms(stopped - d.at) + " ms after its node " +
             d.node + " was deleted");
      else if (h->lost_at && h->lost_cause != "node_deleted")
        fail("OPERATOR-DELETE: " + h->who + " (token " + std::to_string(h->token) + ") lost its lock with cause '" +
             h->lost_cause + "', not node_deleted");
    }
    for (auto& w : waits) {
      if (!belongs_to(w.who, d.who) || !(w.from <= d.at && w.to > d.at)) continue;
      ++r.fault_waits;
      if (ended_by_own_deadline(w, "OPERATOR-DELETE")) continue;
      if (w.how == "acquire_error")
        fail("OPERATOR-DELETE: " + w.who + "'s acquire failed (" + w.extra + ") " + ms(w.to - d.at) +
             " ms after its node " + d.node + " was deleted, instead of queueing again");
    }
  }
}

}  // namespace zklock::fault
