// Several simulated sessions on one in-memory server (session_sim over a shared sim_tree), each
// running the library's acquire (acquire_machine) through the library's runner
// (src/lock/runner.hpp), and after a grant the hold (hold_machine) through it too, as
// acquire_op.cpp and hold.cpp wire them: the view of the dir, the lock dir's creation, the
// timers and the session's state are the machines' own, not the simulator's. The sessions'
// answers wait in their outboxes (session_sim::by_hand) and the property (run_cluster_property)
// delivers them in a random order across sessions, in order within one, as a server's
// connections do; it drops connections with replies on their way, expires sessions, cancels,
// releases, and deletes or writes nodes as an operator would. Its invariants are checked by
// the grant rule written out again (oracle.hpp). No Catch2 here.
#pragma once

#include "lock/runner.hpp"
#include "oracle.hpp"
#include "sansio/acquire_machine.hpp"
#include "sansio/hold_machine.hpp"
#include "sansio/node_name.hpp"
#include "session_sim.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace zklock::testing {

struct contender;

// acquire_op.cpp's hook, minus the metrics and the logs: a grant becomes a hold.
struct contender_acquire_hook {
  using op_type = detail::pending<void(error_code)>;
  contender* c;
  template <class Runner>
  void on_outcome(Runner& r, const detail::sansio::request& q);
};
// hold.cpp's hook: the hold lives as long as its owner (weak waits); its outcomes recorded.
struct contender_hold_hook {
  using op_type = detail::pending<void(error_code)>;
  static constexpr bool weak_waits = true;
  contender* c;
  template <class Runner>
  void on_outcome(Runner& r, const detail::sansio::request& q);
};
using acquire_runner = detail::runner<detail::acquire_machine, contender_acquire_hook, session_sim>;
using hold_runner = detail::runner<detail::hold_machine, contender_hold_hook, session_sim>;

/// One session and its acquires, one at a time (a new one once the last ended).
struct contender {
  std::shared_ptr<session_sim> s;
  lock_kind kind = lock_kind::exclusive;
  int acquires = 0;  // started
  std::shared_ptr<acquire_runner> acquire;
  std::shared_ptr<boost::asio::cancellation_signal> cancel;
  std::weak_ptr<detail::dir_view> view;  // the session's view of the dir, while an acquire holds it (view_of)
  std::int64_t beacon_session = 0;
  std::shared_ptr<hold_runner> hold;
  bool acquiring = false, cancelled = false, early = false;
  int completions = 0;  // of the acquire running, by the machine
  bool released = false, release_answered = false, lost = false;
  std::string prefix;                 // its acquire's node prefix
  std::string violation;              // a rule it broke (the cluster reports it)
  std::function<void(contender&)> on_grant, on_failure;  // the cluster's checks, at the decision

  bool holds() const { return hold && hold->machine().owns(s->state()) && !released; }
};

template <class Runner>
void contender_acquire_hook::on_outcome(Runner& r, const detail::sansio::request& q) {
  using outcome = detail::acquire_machine::outcome;
  if (q.type == detail::sansio::request::complete) {
    if (++c->completions > 1) c->violation = "two completions";
    c->acquiring = false;
    const auto& m = r.machine();
    if (q.ec) {
      c->on_failure(*c);
      if (!m.fsm().answered_early()) r.op()->complete(q.ec);
      return;
    }
    if (m.fsm().answered_early()) c->violation = "granted after the caller was answered";
    auto& s = r.session();
    auto h = std::make_shared<hold_runner>(
        c->s, nullptr,
        detail::hold_machine({.node = m.fsm().result().node, .session_id = s.session_id(), .connected = is_connected(s.state()),
                              .local = false, .watches_node = true}),
        contender_hold_hook{c});
    c->hold = h;
    h->start(h->machine().start(h->seen()));
    auto w = r.take_watch(detail::acquire_machine::own_slot);
    const bool set = w != nullptr;
    if (set) h->adopt_watch(detail::hold_machine::node_watch, std::move(w));
    h->execute(h->machine().adopt_node_watch(set, m.own_reply_pending(), m.own_read(), h->seen()));
    c->on_grant(*c);
    r.op()->complete({});
    return;
  }
  switch (q.outcome_kind<outcome>()) {
    case outcome::answer_early:
      if (c->early) c->violation = "a caller answered early twice";
      c->early = true;
      r.op()->complete(q.ec);
      return;
    case outcome::own_watch_reply:
      if (c->hold) c->hold->feed({.type = detail::sansio::input::reply, .tag = detail::hold_machine::node_read, .ec = q.ec,
                                  .value = r.machine().own_reply()});
      return;
    case outcome::cleanup_failed: c->violation = "a cleanup delete refused (the simulated server never refuses)"; return;
    default: return;
  }
}

template <class Runner>
void contender_hold_hook::on_outcome(Runner&, const detail::sansio::request& q) {
  switch (q.outcome_kind<detail::hold_outcome>()) {
    case detail::hold_outcome::report_lost: c->lost = true; return;
    case detail::hold_outcome::complete_release:
      if (c->release_answered) c->violation = "a release answered twice";
      c->release_answered = true;
      return;
    default: return;
  }
}

/// The sessions, the server they share and the loop they run on.
struct lock_cluster {
  boost::asio::io_context io;
  std::shared_ptr<sim_tree> tree = std::make_shared<sim_tree>();
  std::string dir = "/locks/a";
  std::vector<std::unique_ptr<contender>> contenders;
  std::set<std::string> operator_deleted;  // lock nodes an operator deleted
  std::int64_t last_exclusive_token = 0, last_token = 0;  // the fencing tokens granted so far
  int max_leases = 1;
  std::function<bool()> contact_stale;  // what the grant's check says of the session's contact
  std::string violation;

  lock_cluster() {
    tree->add("/locks", "");
    tree->add(dir, "");
  }
  ~lock_cluster() {
    for (auto& c : contenders) c->s->drop_all(), c->acquire.reset(), c->hold.reset();
  }
  void forbid(const std::string& what) {
    if (violation.empty()) violation = what;
  }

  contender& join(lock_kind kind) {
    auto c = std::make_unique<contender>();
    c->s = std::make_shared<session_sim>(io.get_executor(), tree, 0x1000 + static_cast<std::int64_t>(contenders.size()));
    c->s->by_hand = true;
    c->kind = kind;
    c->on_grant = [this](contender& c) { granted(c); };
    c->on_failure = [this](contender& c) { failed(c); };
    contenders.push_back(std::move(c));
    return *contenders.back();
  }

  /// Starts an acquire of `c` (as run_acquire does).
  void start(contender& c, lock_mode mode, int max_watched) {
    char id[40];
    std::snprintf(id, sizeof id, "11111111-2222-3333-4444-%012d", static_cast<int>(c.s->session_id() * 16 + c.acquires));
    ++c.acquires;
    detail::acquire_fsm fsm(dir, id, mode, c.kind, max_leases, detail::acquire_machine::watched_blockers(max_watched));
    c.prefix = fsm.node_prefix();
    auto view = c.view.lock();
    if (!view) c.view = view = std::make_shared<detail::dir_view>();
    auto s = c.s;
    const auto sid = s->session_id();
    std::string data(fsm.node_data());
    detail::acquire_machine m(
        std::move(fsm),
        {.dir = dir,
         .node_data = data,
         .view = view,
         .beacon_session = &c.beacon_session,
         .session_id = [s = s.get()] { return s->session_id(); },
         .at_grant =
             [this, s = s.get(), sid] {
               return detail::grant_view{.session_over = detail::session_end_error(s->state(), true, s->session_id() != sid),
                                         .contact_stale = contact_stale && contact_stale(),
                                         .connected = is_connected(s->state())};
             },
         .connected = is_connected(s->state())});
    c.cancel = std::make_shared<boost::asio::cancellation_signal>();
    c.acquiring = true;
    c.cancelled = c.early = c.released = c.release_answered = c.lost = false;
    c.completions = 0;
    c.hold.reset();
    auto op = detail::pending<void(error_code)>::make(
        boost::asio::bind_cancellation_slot(c.cancel->slot(), [](error_code) {}), s->executor());
    c.acquire = std::make_shared<acquire_runner>(s, std::move(op), std::move(m), contender_acquire_hook{&c});
    c.acquire->start(c.acquire->machine().start());
  }

  /// The lock dir's queue now.
  std::vector<detail::queued_node> queue() const { return detail::queue_order(tree->children_of(dir).children); }

  // The grant, as it is decided: our node there and ours, the grant rule, the fencing order.
  void granted(contender& c) {
    const auto& r = c.acquire->machine().fsm().result();
    if (operator_deleted.count(r.node)) return;  // (the hold hears it first thing: allowed)
    auto it = tree->nodes.find(r.node);
    if (it == tree->nodes.end()) return c.violation = "granted on a node not there: " + r.node, void();
    if (it->second.stat.ephemeral_owner != c.s->session_id()) c.violation = "granted on a node of another session";
    if (r.fencing_token != it->second.stat.czxid) c.violation = "granted with a fencing token not the node's czxid";
    if (c.kind != lock_kind::lease) {
      bool exclusive = c.kind != lock_kind::read;
      if (r.fencing_token <= last_exclusive_token || (exclusive && r.fencing_token <= last_token))
        c.violation = "a fencing token below one granted before";
      last_token = std::max(last_token, r.fencing_token);
      if (exclusive) last_exclusive_token = r.fencing_token;
    }
  }
  // A failure (its session alive): no node of ours left, no watch of the acquire's left.
  void failed(contender& c) {
    if (!is_connected(c.s->state()) && c.s->state() != session_state::suspended) return;  // ended: took both
    for (const auto& q : queue())
      if (q.name.starts_with(c.prefix)) return c.violation = "failed, and left its node " + q.name, void();
    if (c.s->watches() != 0 && is_connected(c.s->state()))
      c.violation = "failed (" + c.acquire->machine().fsm().result().ec.message() + "), and left watches: " + c.s->watched() + "; wire: " + wire_of(c);
  }

  static std::string wire_of(const contender& c) {
    std::string r;
    for (const auto& w : c.s->wire) r += w + "; ";
    return r;
  }

  /// Mutual exclusion: every holder whose node is there is granted by the rule now.
  void check_holders() {
    auto q = queue();
    int holders = 0, exclusive = 0;
    for (auto& c : contenders) {
      if (!c->violation.empty()) forbid(c->violation);
      if (!c->holds()) continue;
      const auto& node = c->hold->machine().node();
      std::size_t mine = q.size();
      for (std::size_t i = 0; i < q.size(); ++i)
        if (join_path(dir, q[i].name) == node) mine = i;
      if (mine == q.size()) continue;  // deleted by an operator (or expired): lost, told or on its way
      ++holders;
      if (c->kind != lock_kind::read && c->kind != lock_kind::lease) ++exclusive;
      if (!oracle_granted(q, mine, c->kind, max_leases)) forbid("two holders: one against the grant rule now (" + node + ")");
    }
    if (exclusive > 0 && holders > 1) forbid("an exclusive holder beside another holder");
    if (holders > max_leases && max_leases > 1) forbid("more leases held than allowed");
  }

  /// Runs what is posted (the runners' steps, the sessions' state changes).
  void settle() {
    io.restart();
    io.poll();
  }
  bool deliver(contender& c) {
    if (!c.s->deliver_one()) return false;
    settle();
    return true;
  }
  /// Delivers everything, sessions taken in turn, until nothing moves.
  void drain() {
    for (int round = 0; round < 10000; ++round) {
      bool moved = false;
      for (auto& c : contenders) moved |= deliver(*c);
      settle();
      if (!moved) return;
    }
  }
};

/// One run of the cluster property: 2 to 4 sessions on one lock dir, each acquiring (a random
/// kind: mutexes, readers and writers together, or leases of a semaphore; a random mode and K),
/// holding a while and releasing, once or twice; the answers delivered at random across the
/// sessions; cancellations (total, terminal, the timeout's), an operator deleting any lock node
/// or writing to it; with `faults`, connection drops (replies on their way lost, the requests
/// having reached the server) and reconnects, and session expiries.
/// Invariants, after each step: at most one completion an acquire; a grant is on our session's
/// node, with its czxid as the token, above every earlier conflicting grant's; every holder
/// whose node is there is granted by the rule (mutual exclusion); a failure with the session
/// alive leaves no node and no watch of the acquire. At the end, with every connection back
/// and holders releasing: every acquire completes, and the dir and the sessions are left with
/// no node and no watch. Returns the first broken one.
template <class Source>
std::optional<std::string> run_cluster_property(Source& rng, bool faults) {
  lock_cluster k;
  const bool leases = rng() % 4 == 0;
  k.max_leases = leases ? 1 + static_cast<int>(rng() % 3) : 1;
  k.contact_stale = [&] { return rng() % 3 == 0; };
  const lock_kind kinds[] = {lock_kind::exclusive, lock_kind::read, lock_kind::write};
  const int sessions = 2 + static_cast<int>(rng() % 3);
  auto mode_of = [&] {
    auto d = rng() % 8;
    return d == 0 ? lock_mode::try_once : d == 1 ? lock_mode::try_after_probe : lock_mode::wait;
  };
  auto begin = [&](contender& c) { k.start(c, mode_of(), 1 + static_cast<int>(rng() % 4)); };
  for (int i = 0; i < sessions; ++i) k.join(leases ? lock_kind::lease : kinds[rng() % 3]);
  for (auto& c : k.contenders) begin(*c);
  k.settle();
  // one time in `odds`, a lock node there now (empty: none)
  auto some_node = [&](unsigned odds) -> std::string {
    auto q = k.queue();
    if (rng() % odds != 0 || q.empty()) return {};
    return join_path(k.dir, q[rng() % q.size()].name);
  };
  auto pick = [&]() -> contender& { return *k.contenders[rng() % k.contenders.size()]; };
  auto check = [&]() -> std::optional<std::string> {
    k.check_holders();
    if (!k.violation.empty()) return k.violation;
    return std::nullopt;
  };
  for (int step = 0; step < 120 && !rng.exhausted(); ++step) {
    auto& c = pick();
    auto draw = rng() % (faults ? 16 : 13);
    switch (draw) {
      case 0:
        if (c.acquiring && !c.cancelled && rng() % 4 == 0) {
          c.cancelled = true;
          const boost::asio::cancellation_type types[] = {boost::asio::cancellation_type::total,
                                                          boost::asio::cancellation_type::terminal,
                                                          boost::asio::cancellation_type::partial};
          c.cancel->emit(types[rng() % 3]);
          k.settle();
        }
        break;
      case 1:
        if (c.holds() && rng() % 2 == 0) {
          c.released = true;
          c.hold->execute(c.hold->machine().release(true, c.hold->seen()));
          k.settle();
        }
        break;
      case 2:
        // the last acquire over (its hold released or lost): another, sometimes
        if (!c.acquiring && (!c.hold || c.hold->machine().fsm().finished()) && c.acquires < 2 &&
            is_connected(c.s->state()) && rng() % 3 == 0) {
          begin(c);
          k.settle();
        }
        break;
      case 3:
        // an operator deletes a lock node (a holder's, a waiter's)
        if (auto path = some_node(6); !path.empty()) {
          k.operator_deleted.insert(path);
          k.tree->erase(path);
          k.settle();
        }
        break;
      case 4:
        // someone writes to a lock node (Curator's Revoker, an operator's set)
        if (auto path = some_node(4); !path.empty()) {
          k.tree->set(path, rng() % 2 ? "__REVOKE__" : "x");
          k.settle();
        }
        break;
      case 13:
        if (is_connected(c.s->state())) {
          c.s->disconnect(rng() % (c.s->outbox.size() + 1));
          k.settle();
        }
        break;
      case 14:
        if (c.s->state() == session_state::suspended) {
          c.s->reconnect();
          k.settle();
        }
        break;
      case 15:
        if (rng() % 12 == 0 && c.s->state() != session_state::expired) {
          c.s->expire();
          k.settle();
        }
        break;
      default: k.deliver(c); break;
    }
    if (auto bad = check()) return bad;
  }
  // Settle: every connection back, every answer delivered; holders release; whatever waits
  // must then be granted (and release in turn).
  for (auto& c : k.contenders)
    if (c->s->state() == session_state::suspended) c->s->reconnect();
  k.settle();
  for (int round = 0; round < 20; ++round) {
    k.drain();
    if (auto bad = check()) return bad;
    bool any = false;
    for (auto& c : k.contenders) {
      if (c->holds()) {
        c->released = true;
        c->hold->execute(c->hold->machine().release(true, c->hold->seen()));
        any = true;
      }
      any |= c->acquiring;
    }
    k.settle();
    if (!any) break;
  }
  k.drain();
  if (auto bad = check()) return bad;
  for (auto& c : k.contenders) {
    if (c->acquiring) return "still waiting with every connection up and every holder released";
    if (c->released && !c->release_answered && c->s->state() != session_state::expired) return "a release never answered";
  }
  if (auto q = k.queue(); !q.empty()) return "a lock node left at the end: " + q.front().name;
  for (auto& c : k.contenders)
    if (c->s->watches() != 0) return "a watch left at the end: " + c->s->watched();
  return std::nullopt;
}

}  // namespace zklock::testing
