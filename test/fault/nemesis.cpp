#include "nemesis.hpp"

#include "lockdir.hpp"

#include <signal.h>

#include <algorithm>
#include <future>
#include <sstream>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace zklock::fault {

// The table of faults. A scenario runs its entry's member; "mixed" draws one of the entries
// marked mixed per fault.
//   name                  member                        default pass  mixed
const std::vector<nemesis::fault> nemesis::faults = {
    {"none",               &nemesis::no_fault,           true,         false},
    {"kill-leader",        &nemesis::kill_member,        true,         true},
    {"kill-follower",      &nemesis::kill_member,        true,         true},
    {"pause-server-short", &nemesis::pause_server,       true,         true},
    {"pause-server-long",  &nemesis::pause_server,       true,         true},
    {"partition-short",    &nemesis::partition,          true,         true},
    {"partition-long",     &nemesis::partition,          true,         true},
    {"cut",                &nemesis::cut,                true,         true},
    {"pause-client",       &nemesis::pause_client,       true,         true},
    {"restart-ensemble",   &nemesis::restart_ensemble,   true,         true},
    {"long-hold",          &nemesis::long_hold,          true,         false},
    {"refuse",             &nemesis::refuse,             false,        false, /*direct=*/true},
    {"foreign-write",      &nemesis::foreign_write,      false,        false},
    {"fd-exhaust",         &nemesis::fd_exhaust,         false,        false},
    {"storm",              &nemesis::storm,              false,        false, false, {"sessions:3"}},
    {"ensemble-gone",      &nemesis::ensemble_gone,      false,        false},
    {"local-close",        &nemesis::local_close,        false,        false},
    {"operator-delete",    &nemesis::operator_delete,    false,        false},
    {"pause-close",        &nemesis::pause_close,        false,        false, false, {"sessions:2", "probe"}},
};

namespace {

template <class Keep>
std::vector<std::string> names_of_faults(Keep keep) {
  std::vector<std::string> out;
  for (auto& f : nemesis::faults)
    if (keep(f)) out.push_back(f.name);
  return out;
}

}  // namespace

// The scenario lists options.hpp declares, from the table (defined after it in this file, so
// that it is built first).
const std::vector<std::string> all_scenarios = [] {
  auto v = names_of_faults([](const nemesis::fault& f) { return f.default_pass; });
  v.push_back("mixed");
  return v;
}();
const std::vector<std::string> extra_scenarios =
    names_of_faults([](const nemesis::fault& f) { return !f.default_pass; });
const std::vector<std::string> fault_kinds = names_of_faults([](const nemesis::fault& f) { return f.mixed; });

const nemesis::fault* nemesis::find(const std::string& name) {
  auto it = std::find_if(faults.begin(), faults.end(), [&](const fault& f) { return f.name == name; });
  return it == faults.end() ? nullptr : &*it;
}

bool direct_connections(const std::string& scenario) {
  auto f = nemesis::find(scenario);
  return f && f->direct;
}

std::vector<std::string> worker_options(const std::string& scenario) {
  auto f = nemesis::find(scenario);
  return f ? f->worker_options : std::vector<std::string>{};
}

int exhaust_signal() { return SIGRTMIN + 1; }
int restore_signal() { return SIGRTMIN + 2; }
int close_signal() { return SIGRTMIN + 3; }

std::chrono::milliseconds nemesis::T(double f) const {
  return std::chrono::milliseconds(std::int64_t(e_.o.session_timeout_ms * f));
}
double nemesis::uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(e_.rng); }
int nemesis::pick(int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(e_.rng)); }

void nemesis::on_io(std::function<void()> f) {
  std::promise<void> done;
  asio::post(e_.ioc, [&] {
    f();
    done.set_value();
  });
  done.get_future().wait();
}

void nemesis::set_blackhole(int c, bool on) {
  on_io([&] {
    for (auto& p : e_.proxies[c]) p->blackhole(on);
  });
}

void nemesis::reset_all_connections() {
  on_io([&] {
    for (auto& ps : e_.proxies)
      for (auto& p : ps) p->reset_all();
  });
}

int nemesis::client_of(const std::string& who) const {
  auto it = e_.index_of.find(process_of(who));
  return it == e_.index_of.end() ? -1 : it->second;
}

void nemesis::heal() {
  const int k = static_cast<int>(e_.clients.size());
  for (int c = 0; c < k; ++c) {
    set_blackhole(c, false);
    ::kill(e_.clients[c].pid, SIGCONT);
  }
  for (int c : e_.fds_exhausted) ::kill(e_.clients[c].pid, restore_signal());
  e_.fds_exhausted.clear();
  for (int s = 0; s < e_.ens.size(); ++s)
    if (e_.ens.running(s)) e_.ens.resume(s);
  e_.ens.start_all();
}

std::string nemesis::apply(const std::string& fault) {
  std::ostringstream d;
  d << fault;
  if (auto f = find(fault)) (this->*(f->act))(fault, d);
  return d.str();
}

void nemesis::no_fault(const std::string&, std::ostream& d) {
  std::this_thread::sleep_for(T(1));
  d << ": no fault for " << e_.o.session_timeout_ms << " ms";
}

// kill-leader, kill-follower: kill -9 one member, restart it after 0.2-1 session timeouts.
void nemesis::kill_member(const std::string& fault, std::ostream& d) {
  int l = e_.ens.leader();
  int victim = l;
  if (fault == "kill-follower" || l < 0) victim = (std::max(l, 0) + 1 + pick(e_.ens.size() - 1)) % e_.ens.size();
  auto down = T(uniform(0.2, 1.0));
  d << " member " << victim << (victim == l ? " (leader)" : " (follower)") << ", down " << down.count() << " ms";
  e_.ens.kill(victim);
  std::this_thread::sleep_for(down);
  e_.ens.start(victim);
}

// pause-server-short, pause-server-long: SIGSTOP one member, under or past the session timeout.
void nemesis::pause_server(const std::string& fault, std::ostream& d) {
  int victim = pick(e_.ens.size());
  auto dur = fault == "pause-server-short" ? T(uniform(0.2, 0.6)) : T(uniform(1.5, 2.0));
  d << " member " << victim << (victim == e_.ens.leader() ? " (leader)" : "") << " for " << dur.count() << " ms";
  e_.ens.pause(victim);
  std::this_thread::sleep_for(dur);
  e_.ens.resume(victim);
  e_.ens.wait_quorum();
}

// partition-short, partition-long: blackhole the next holder's connections at its grant, under or
// past the session timeout.
void nemesis::partition(const std::string& fault, std::ostream& d) {
  bool lng = fault == "partition-long";
  auto dur = lng ? T(uniform(1.5, 2.5)) : T(uniform(0.2, 0.5));
  int hold = static_cast<int>(lng ? 4 * e_.o.session_timeout_ms : dur.count() + e_.o.session_timeout_ms);
  int victim = -1;
  e_.res.arm("grant", [&](const record& x) {
    victim = client_of(x.who);
    if (victim >= 0)
      for (auto& p : e_.proxies[victim]) p->blackhole(true);  // on the io thread already
    return "HOLD " + std::to_string(hold);
  });
  auto fired = e_.res.wait_fired(T(4) + 10s);
  if (!fired) {
    d << ": no grant to partition";
  } else {
    d << " " << fired->who << " (holding, asked to hold " << hold << " ms) for " << dur.count() << " ms";
    std::this_thread::sleep_for(dur);
    set_blackhole(victim, false);
  }
}

// cut: RST every client's connections, or one client's 0-3 ms after its acquire or its end.
void nemesis::cut(const std::string&, std::ostream& d) {
  int how = pick(3);
  if (how == 2) {
    d << ": RST every client's connections while they queue and watch";
    reset_all_connections();
    return;
  }
  std::string kind = how == 0 ? "end" : "acquire";
  auto delay = std::chrono::microseconds(std::int64_t(uniform(0, 3000)));
  d << ": RST a client's connections " << delay.count() << " us after its " << kind
    << (how == 0 ? " (release in flight)" : " (create in flight)");
  e_.res.arm(kind, [&, delay](const record& x) {
    int c = client_of(x.who);
    if (c >= 0) {
      auto t = std::make_shared<asio::steady_timer>(e_.ioc, delay);
      t->async_wait([&, c, t](boost::system::error_code) {
        for (auto& p : e_.proxies[c]) p->reset_all();
      });
    }
    return std::string();
  });
  auto fired = e_.res.wait_fired(10s);
  d << (fired ? " of " + fired->who : std::string(": never fired"));
  std::this_thread::sleep_for(T(1));
}

// pause-client: alternately (first this one) the holder stopping itself between its validity
// check and its write (a GC pause at the worst moment: only the fencing token can stop that
// write), or SIGSTOP from outside right at the grant.
void nemesis::pause_client(const std::string&, std::ostream& d) {
  bool self = pause_faults_++ % 2 == 0;
  if (self) ++e_.r.self_pauses;
  auto dur = T(uniform(1.5, 2.5));
  int victim = -1;
  std::int64_t stopped_at = 0;
  // (shared: a writer, whose stale write the fencing check must refuse; a reader's late
  // read is stale only if a writer came in meanwhile)
  e_.res.arm(
      "grant",
      [&, self](const record& x) {
        victim = client_of(x.who);
        stopped_at = mono_ns();
        if (victim >= 0 && !self) ::kill(e_.clients[victim].pid, SIGSTOP);
        return self ? std::string("HOLD 1000 PAUSE") : std::string("HOLD 1000");
      },
      [&](const record& x) { return e_.o.recipe != "shared" || side_of_grant(x.extra) == "write"; });
  auto fired = e_.res.wait_fired(T(4) + 10s);
  if (!fired || victim < 0) {
    d << ": no grant";
    return;
  }
  if (self) {
    auto until = std::chrono::steady_clock::now() + 5s;
    while (proc_state(e_.clients[victim].pid) != 'T' && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
  }
  d << " " << fired->who << (self ? " (stops itself before a write)" : " (SIGSTOP at its grant)") << " for "
    << dur.count() << " ms";
  std::this_thread::sleep_for(dur);
  ::kill(e_.clients[victim].pid, SIGCONT);
  e_.pauses.push_back({fired->who, stopped_at, mono_ns()});
}

// restart-ensemble: kill -9 every member, start them all after 0-0.3 session timeouts.
void nemesis::restart_ensemble(const std::string&, std::ostream& d) {
  auto down = T(uniform(0.0, 0.3));
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < e_.ens.size(); ++s) e_.ens.kill(s);
  std::this_thread::sleep_for(down);
  e_.ens.start_all();
  d << ": all killed, down " << down.count() << " ms, serving again after "
    << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
    << " ms";
}

// long-hold: no fault: a holder keeps the lock 1.5 session timeouts, as a long job would.
void nemesis::long_hold(const std::string&, std::ostream& d) {
  int hold = e_.o.session_timeout_ms * 3 / 2;
  e_.res.arm("grant", [hold](const record&) { return "HOLD " + std::to_string(hold); });
  auto fired = e_.res.wait_fired(10s);
  d << (fired ? ": " + fired->who + " holds " + std::to_string(hold) + " ms" : std::string(": no grant"));
  if (fired) std::this_thread::sleep_for(std::chrono::milliseconds(hold + 500));
}

// refuse: servers that refuse. The clients connect to the servers directly, and a kill -9 lands
// 0-3 ms after a client's acquire (its create in flight) or its end write (its release in
// flight): its connection dies inside a request and its next connects find a closed port
// (ECONNREFUSED), not a proxy that accepts. Either every member (no server answers until the
// restart) or one (the next one tried may refuse).
void nemesis::refuse(const std::string&, std::ostream& d) {
  const bool all = pick(2) == 0;
  const std::string kind = pick(2) == 0 ? "end" : "acquire";
  auto delay = std::chrono::microseconds(std::int64_t(uniform(0, 3000)));
  auto down = all ? T(uniform(0.3, 1.0)) : T(uniform(0.5, 1.5));
  const int victim = all ? -1 : pick(e_.ens.size());
  e_.res.arm(kind, [](const record&) { return std::string(); });
  auto fired = e_.res.wait_fired(10s);
  std::this_thread::sleep_for(delay);
  const int leader = e_.ens.leader();
  auto t0 = std::chrono::steady_clock::now();
  if (all) {
    for (int s = 0; s < e_.ens.size(); ++s) e_.ens.kill(s);
    d << ": every member killed";
  } else {
    e_.ens.kill(victim);
    d << ": member " << victim << (victim == leader ? " (leader)" : " (follower)") << " killed";
  }
  d << " " << delay.count() << " us after " << (fired ? fired->who + "'s " : std::string("a ")) << kind
    << (kind == "end" ? " (release in flight)" : " (create in flight)") << ", ports closed for " << down.count()
    << " ms";
  std::this_thread::sleep_for(down);
  if (all)
    e_.ens.start_all();
  else
    e_.ens.start(victim);
  d << ", serving again after "
    << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
    << " ms";
}

// foreign-write: writes to lock nodes by another client. A holder holds two session timeouts,
// the others queue behind it, and a session of the harness's sets the data of every node in the
// queue (Curator's "__REVOKE__", zklock's markers, empty, junk), three rounds a quarter of a
// session timeout apart. No write may grant anyone.
void nemesis::foreign_write(const std::string&, std::ostream& d) {
  const int hold = 2 * e_.o.session_timeout_ms;
  e_.res.arm("grant", [hold](const record&) { return "HOLD " + std::to_string(hold); });
  auto fired = e_.res.wait_fired(T(4) + 10s);
  if (!fired) {
    d << ": no grant";
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(200ms);  // the others queue behind it
  const std::vector<std::string> dirs = e_.o.recipe == "semaphore"
                                            ? std::vector<std::string>{e_.dir + "/locks", e_.dir + "/leases"}
                                            : std::vector<std::string>{e_.dir};
  std::vector<std::string> log;
  int n = write_to_lock_nodes(e_.ens.connect_string(), dirs, 3, e_.o.session_timeout_ms / 4, e_.rng, &log);
  e_.r.foreign_writes += n;
  for (auto& l : log) e_.r.notes.push_back("foreign write: " + l);
  d << ": " << fired->who << " holds " << hold << " ms; another session set the data of lock nodes " << n
    << " times";
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(hold + 500));
}

// fd-exhaust: descriptors used up while reconnecting. The next zklock holder (asked to hold 4
// session timeouts) lowers its RLIMIT_NOFILE to the descriptors it has open, its connections are
// reset, and every socket() of its reconnects fails with EMFILE for 1.5-2.5 session timeouts: its
// session expires and a successor is granted meanwhile. It must stop by its validity deadline
// whatever its C client makes up locally.
void nemesis::fd_exhaust(const std::string&, std::ostream& d) {
  const int hold = 4 * e_.o.session_timeout_ms;
  int victim = -1;
  e_.res.arm(
      "grant",
      [&, hold](const record& x) {
        victim = client_of(x.who);
        return "HOLD " + std::to_string(hold);
      },
      [&](const record& x) {
        int c = client_of(x.who);
        return c >= 0 && e_.clients[c].kind == "zklock";
      });
  auto fired = e_.res.wait_fired(T(4) + 10s);
  if (!fired || victim < 0) {
    d << ": no grant";
    return;
  }
  auto dur = T(uniform(1.5, 2.5));
  const std::string who = e_.clients[victim].who;
  ::kill(e_.clients[victim].pid, exhaust_signal());
  e_.fds_exhausted.insert(victim);
  bool said = e_.res.wait_for(2s, [&](const std::vector<record>& j) {
    return std::any_of(j.begin(), j.end(), [&](auto& x) {
      return x.kind == "fds" && x.who == who && x.extra.rfind("exhausted", 0) == 0;
    });
  });
  on_io([&] {
    for (auto& p : e_.proxies[victim]) p->reset_all();
  });
  d << " " << fired->who << " (holding, asked to hold " << hold << " ms): descriptors used up"
    << (said ? "" : " (not confirmed by the worker)") << ", its connections reset, for " << dur.count() << " ms";
  std::this_thread::sleep_for(dur);
  ::kill(e_.clients[victim].pid, restore_signal());
  e_.fds_exhausted.erase(victim);
}

// storm: reconnect storms. Each zklock worker runs three sessions and a user socket on one
// io_context (the entry's worker options); every client's connections are reset every 20-200 ms
// for 1-2 session timeouts, so that the sessions reconnect together and the C client's closed
// descriptors are reused by the others'.
void nemesis::storm(const std::string&, std::ostream& d) {
  auto dur = T(uniform(1.0, 2.0));
  const auto until = std::chrono::steady_clock::now() + dur;
  int resets = 0;
  while (std::chrono::steady_clock::now() < until) {
    reset_all_connections();
    ++resets;
    std::this_thread::sleep_for(std::chrono::milliseconds(int(uniform(20, 200))));
  }
  d << ": every client's connections reset " << resets << " times in " << dur.count() << " ms";
}

bool nemesis::from_zklock(const record& x) const {
  int c = client_of(x.who);
  return c >= 0 && e_.clients[c].kind == "zklock";
}

std::string nemesis::who_has_session(const std::string& owner) const {
  std::string who;
  for (auto& x : e_.res.journal())
    if (x.kind == "hello" && x.extra == owner) who = x.who;
  return who;
}

// ensemble-gone: every member killed (kill -9) while a holder holds (asked to hold two session
// timeouts: its guard must turn lost at its deadline) and the others queue behind it, kept down
// 1.5-2 session timeouts, then all started again. The clients' sessions expire locally
// meanwhile (no server answers for the session timeout): every waiter must fail with an expiry
// and every holder stop within the session timeout plus a margin from the last member's death (a
// session lives on while its own server does; checker: check_fault_rules).
// After the restart the servers expire the old sessions a session timeout after they serve
// again: the fault waits 1.5 of them, so that the run's leftover check (no node, no watch) sees
// what they left, if anything.
void nemesis::ensemble_gone(const std::string&, std::ostream& d) {
  const int hold = 2 * e_.o.session_timeout_ms;
  e_.res.arm("grant", [hold](const record&) { return "HOLD " + std::to_string(hold); },
             [this](const record& x) { return from_zklock(x); });
  auto fired = e_.res.wait_fired(T(4) + 10s);
  const auto queued = std::chrono::milliseconds(int(uniform(100, 300)));
  std::this_thread::sleep_for(queued);  // the others queue behind it
  const auto down = T(uniform(1.5, 2.0));
  outage o;
  o.down = mono_ns();
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < e_.ens.size(); ++s) e_.ens.kill(s);  // each SIGKILLed and reaped
  o.gone = mono_ns();
  const auto killed = std::chrono::steady_clock::now() - t0;
  std::this_thread::sleep_until(t0 + down);
  e_.ens.start_all();
  o.up = mono_ns();
  e_.outages.push_back(o);
  d << ": every member killed (in " << std::chrono::duration_cast<std::chrono::milliseconds>(killed).count()
    << " ms) " << queued.count() << " ms after " << (fired ? fired->who + "'s grant (asked to hold " + std::to_string(hold) + " ms)" : std::string("no grant"))
    << ", ports closed for " << down.count() << " ms, serving again after " << (o.up - o.down) / 1000000 << " ms";
  std::this_thread::sleep_for(T(1.5));
}

// local-close: a contender's session closed (async_close) or destroyed (its recipe object, then
// the session object) at each step of its cycle, in a seeded order: right after its acquire is
// sent ("acquire": local-queue: a node's create or a local waiter queued), at its grant, at its
// end write (its release next: a local handoff in flight) and after its release. The resource's
// reply asks the worker for it (zklock_worker.cpp: "CLOSE N" / "DESTROY N", N = 0-15 handlers
// later: the io_context stepped handler by handler); the worker says "close" right before.
// Checked (check_fault_rules): no acquire of that session succeeds after the close, every
// waiting one fails; the leftover check: no node left.
void nemesis::local_close(const std::string&, std::ostream& d) {
  std::vector<std::string> steps = {"acquire", "grant", "end", "released"};
  for (std::size_t i = steps.size(); i > 1; --i) std::swap(steps[i - 1], steps[std::size_t(pick(int(i)))]);
  d << ":";
  for (auto& step : steps) {
    const bool destroy = pick(2) == 1;
    const int handlers = pick(16);
    const std::string ask = (destroy ? "DESTROY " : "CLOSE ") + std::to_string(handlers);
    e_.res.arm(step, [ask](const record&) { return ask; }, [this](const record& x) { return from_zklock(x); });
    auto fired = e_.res.wait_fired(T(2) + 5s);
    d << " [" << step << ": " << (destroy ? "destroy" : "close") << " +" << handlers;
    if (!fired) {
      d << ": never fired]";
      continue;
    }
    // the close and then the owner's next session (the owner: the contender, or its process
    // for the local queue's coroutines)
    const std::int64_t t = fired->t_recv;
    const std::string proc = process_of(fired->who);
    std::string owner;
    bool closed = e_.res.wait_for(T(1) + 2s, [&](const std::vector<record>& j) {
      for (auto& x : j)
        if (x.kind == "close" && x.t_recv >= t && (x.who == fired->who || x.who == proc)) {
          owner = x.who;
          return true;
        }
      return false;
    });
    bool again = closed && e_.res.wait_for(T(2) + 10s, [&](const std::vector<record>& j) {
      return std::any_of(j.begin(), j.end(),
                         [&](auto& x) { return x.kind == "hello" && x.who == owner && x.t_recv > t; });
    });
    d << " of " << fired->who << (closed ? "" : ": no close (its session had ended)")
      << (closed && !again ? ": no new session" : "") << "]";
    std::this_thread::sleep_for(300ms);
  }
}

// operator-delete: an operator's `delete` of a contender's node while it is connected. The next
// holder is asked to hold a session timeout; 200 ms into it, a session of the harness deletes
// either its node (it must turn lost with node_deleted at once; its successor is granted) or
// the node of a waiter queued behind it (the waiter queues again). For the semaphore a waiter's
// node is in PATH/locks (its internal mutex), a holder's is its lease. Checked: overlaps (the
// holder's section ends at the deletion for the count: its writes after it are the fencing
// check's), check_fault_rules (the holder's loss and its cause, no waiter fails).
void nemesis::operator_delete(const std::string&, std::ostream& d) {
  const bool holder = pick(2) == 0;
  const int hold = e_.o.session_timeout_ms;
  e_.res.arm("grant", [hold](const record&) { return "HOLD " + std::to_string(hold); },
             [this](const record& x) { return from_zklock(x); });
  auto fired = e_.res.wait_fired(T(4) + 10s);
  if (!fired) {
    d << ": no grant";
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(200ms);  // the others queue behind it
  const std::string held = fired->extra.substr(0, fired->extra.find(' '));
  std::string victim;
  if (holder) {
    victim = held;
  } else {
    const std::string dir = e_.o.recipe == "semaphore" ? e_.dir + "/locks" : e_.dir;
    std::vector<std::string> names;
    count_nodes(e_.ens.connect_string(), dir, &names);
    std::vector<std::string> waiting;
    for (auto& n : names) {
      auto path = dir + "/" + n.substr(0, n.find(' '));
      if (path != held) waiting.push_back(path);
    }
    std::sort(waiting.begin(), waiting.end());
    if (!waiting.empty()) victim = waiting[std::size_t(pick(int(waiting.size())))];
  }
  if (victim.empty()) {
    d << ": " << fired->who << " holds, nobody queued behind it";
  } else {
    node_deletion del;
    del.node = victim;
    del.holder = holder;
    std::string owner;
    auto err = delete_node(e_.ens.connect_string(), victim, &owner, &del.at);
    del.who = who_has_session(owner);
    d << ": " << (holder ? "the holder's" : "a waiter's") << " node " << victim << " (" << (del.who.empty() ? owner : del.who)
      << ") deleted" << (err.empty() ? "" : " FAILED: " + err) << " while " << fired->who << " holds";
    if (err.empty()) e_.deletions.push_back(del);
  }
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(hold + 500));
}

// pause-close: sessions closed while a server is stopped. The member that most zklock sessions
// are connected to (their hellos' session ids in its `cons`) is stopped (SIGSTOP) for 0.75-1
// session timeouts (1.3 s at least: past the close's 1 s bound); 50-300 ms into it every zklock
// worker is told (close_signal(), or + 1, drawn per worker) to close every session it has at once
// from its own strand (with --threads, another thread than the sessions'): with the entry's
// sessions:2, one by async_close and the other destroyed; its probe session (the entry's
// "probe") times its loop and the C client's lock of the process meanwhile ("closed" reports).
// Then the member resumes, and the fault waits 1.5 session timeouts: sessions whose close the
// stopped member never heard expire before the run's leftover check. Checked
// (check_fault_rules): the closes as local-close's (no grant after, every waiter fails), each
// async_close within its bound, the probe never stalled past the stall bound.
void nemesis::pause_close(const std::string&, std::ostream& d) {
  std::set<std::string> sids;
  for (auto& x : e_.res.journal())
    if (x.kind == "hello" && from_zklock(x)) sids.insert(x.extra);
  int victim = -1, most = -1;
  for (int s = 0; s < e_.ens.size(); ++s) {
    const std::string cons = e_.ens.four_letter(s, "cons");
    int n = 0;
    for (auto& sid : sids)
      if (cons.find("sid=" + sid + ",") != std::string::npos || cons.find("sid=" + sid + ")") != std::string::npos) ++n;
    if (n > most) {
      most = n;
      victim = s;
    }
  }
  const int leader = e_.ens.leader();  // (asked before the stop: a stopped member answers nothing)
  const auto dur = std::max(T(uniform(0.75, 1.0)), std::chrono::milliseconds(1300));
  const auto first = std::chrono::milliseconds(int(uniform(50, 300)));
  const std::int64_t t0 = mono_ns();
  const auto stopped = std::chrono::steady_clock::now();
  e_.ens.pause(victim);
  std::this_thread::sleep_for(first);
  d << " member " << victim << (victim == leader ? " (leader)" : "") << " (" << most
    << " zklock sessions connected to it) stopped for " << dur.count() << " ms; " << first.count() << " ms in:";
  int workers = 0;
  for (auto& c : e_.clients) {
    if (c.kind != "zklock") continue;
    const bool even_close = pick(2) == 0;
    ::kill(c.pid, even_close ? close_signal() : close_signal() + 1);
    d << " " << c.who << (even_close ? " (.1 async_close, .2 destroyed)" : " (.1 destroyed, .2 async_close)");
    ++workers;
  }
  auto closes = [&](const std::vector<record>& j) {
    return int(std::count_if(j.begin(), j.end(), [&](auto& x) { return x.kind == "close" && x.t_recv >= t0; }));
  };
  e_.res.wait_for(1s, [&](const std::vector<record>& j) { return closes(j) >= 2 * workers; });
  std::this_thread::sleep_until(stopped + dur);
  e_.ens.resume(victim);
  e_.ens.wait_quorum();
  d << "; " << closes(e_.res.journal()) << " sessions closed while it was stopped";
  std::this_thread::sleep_for(T(1.5));
}

}  // namespace zklock::fault
