#include "engine/client_id.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_name.hpp"
#include "sansio/node_data.hpp"

#include <zklock/lock_view.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>

namespace zklock {

const char* to_string(lock_dir_kind k) noexcept {
  switch (k) {
    case lock_dir_kind::exclusive: return "mutex";
    case lock_dir_kind::read_write: return "read/write";
    case lock_dir_kind::semaphore: return "semaphore";
    case lock_dir_kind::leader_election: return "election";
  }
  return "?";
}

std::vector<contender> lock_contenders(const std::vector<std::string>& children) {
  std::vector<contender> r;
  for (auto& q : detail::queue_order(children)) {
    contender c;
    c.node = std::move(q.name);
    c.sequence = q.sequence;
    c.kind = q.kind;
    r.push_back(std::move(c));
  }
  return r;
}

void set_contender_data(contender& c, data_result d) {
  // an election candidate's data is its participant id, never a marker
  bool candidate = c.kind == lock_kind::candidate;
  auto parts = detail::parse_node_data(d.data);
  // only a zklock node's identity can carry our parent suffix
  auto own = candidate || parts.marker.empty() ? detail::identity_parts{parts.identity, 0}
                                               : detail::split_parent(parts.identity);
  c.identity = candidate ? d.data : std::string(own.identity);
  c.parent = own.parent;
  c.stat = d.stat;
  c.data = std::move(d.data);
}

std::string downgrade_mark_of(const contender& writer) {
  return writer.kind == lock_kind::write ? detail::downgrade_mark_name(writer.node) : std::string{};
}

void set_downgrade_mark(contender& writer, const node_stat& mark) {
  if (writer.kind == lock_kind::write && detail::downgrade_proven(writer.stat.ephemeral_owner, mark.ephemeral_owner))
    writer.kind = lock_kind::read;
}

lock_dir_view view_semaphore(std::string path, std::vector<contender> leases, std::vector<contender> locks) {
  lock_dir_view v{std::move(path), lock_dir_kind::semaphore, std::move(leases), std::move(locks)};
  // The newest lease node of the PATH/locks holder's session: created behind the internal
  // mutex, still waiting for a lease (its acquire shows as the PATH/locks node).
  if (!v.holders.empty() && !v.waiters.empty() && v.waiters.front().stat.ephemeral_owner != 0 &&
      v.holders.back().stat.ephemeral_owner == v.waiters.front().stat.ephemeral_owner)
    v.holders.pop_back();
  return v;
}

lock_dir_view view_lock_dir(std::string path, std::vector<contender> queue) {
  auto has = [&](auto pred) { return std::any_of(queue.begin(), queue.end(), pred); };
  if (has([](const contender& c) { return c.kind == lock_kind::lease; }))
    return view_semaphore(std::move(path), std::move(queue), {});
  lock_dir_view v{std::move(path), lock_dir_kind::exclusive, {}, {}};
  if (has([](const contender& c) { return c.kind == lock_kind::read || c.kind == lock_kind::write; }))
    v.kind = lock_dir_kind::read_write;
  else if (has([](const contender& c) { return c.kind == lock_kind::candidate; }))
    v.kind = lock_dir_kind::leader_election;
  std::vector<detail::queued_node> q;
  for (const auto& c : queue) q.push_back({c.node, c.sequence, c.kind});
  auto held = detail::current_holders(q);
  std::size_t next = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    bool holds = next < held.size() && held[next] == i;
    if (holds) ++next;
    (holds ? v.holders : v.waiters).push_back(std::move(queue[i]));
  }
  return v;
}

namespace {

// One session's wait in one directory: for every one of `blockers` (all_of) or any (any_of).
struct session_wait {
  std::int64_t session;
  const lock_dir_view* dir;
  const contender* node;
  std::vector<std::pair<std::int64_t, bool>> blockers;  // session, holds there
  bool any_of;
  bool for_child = false;  // session waits for its child (blockers[0]), queued or holding in dir
};

std::vector<session_wait> waits_in(const lock_dir_view& d) {
  std::vector<session_wait> r;
  // Candidates other than the leader campaign: they do not wait for it to end anything.
  if (d.kind == lock_dir_kind::leader_election) return r;
  if (d.kind == lock_dir_kind::semaphore) {
    for (const auto& w : d.waiters) {
      session_wait sw{w.stat.ephemeral_owner, &d, &w, {}, true};
      for (const auto& h : d.holders)
        if (h.stat.ephemeral_owner != 0 && h.stat.ephemeral_owner != sw.session)
          sw.blockers.emplace_back(h.stat.ephemeral_owner, true);
      r.push_back(std::move(sw));
    }
    return r;
  }
  // The grant rule's blockers: every node ahead, or for a read the exclusive and write ones.
  std::vector<std::pair<const contender*, bool>> q;
  for (const auto& c : d.holders) q.emplace_back(&c, true);
  for (const auto& c : d.waiters) q.emplace_back(&c, false);
  std::sort(q.begin(), q.end(), [](const auto& a, const auto& b) {
    return a.first->sequence != b.first->sequence ? a.first->sequence < b.first->sequence
                                                  : a.first->node < b.first->node;
  });
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (q[i].second) continue;
    const contender& w = *q[i].first;
    session_wait sw{w.stat.ephemeral_owner, &d, &w, {}, false};
    for (std::size_t j = 0; j < i; ++j) {
      const contender& a = *q[j].first;
      if (w.kind == lock_kind::read && a.kind == lock_kind::read) continue;
      if (a.stat.ephemeral_owner != 0 && a.stat.ephemeral_owner != sw.session)
        sw.blockers.emplace_back(a.stat.ephemeral_owner, q[j].second);
    }
    r.push_back(std::move(sw));
  }
  return r;
}

}  // namespace

std::vector<deadlock> find_deadlocks(const std::vector<lock_dir_view>& dirs) {
  std::vector<session_wait> waits;
  for (const auto& d : dirs)
    for (auto& w : waits_in(d))
      if (w.session != 0 && !w.blockers.empty()) waits.push_back(std::move(w));
  // A process under `zklock exec` (its nodes name the exec's session as parent): the parent's
  // session cannot release before its command ends, so it waits for each child session.
  std::set<std::pair<std::int64_t, std::int64_t>> children;  // (parent, child)
  for (const auto& d : dirs)
    for (const auto* part : {&d.holders, &d.waiters})
      for (const auto& c : *part) {
        auto child = c.stat.ephemeral_owner;
        if (c.parent == 0 || child == 0 || c.parent == child || !children.insert({c.parent, child}).second) continue;
        waits.push_back({c.parent, &d, &c, {{child, true}}, false, true});
      }
  std::map<std::int64_t, std::vector<const session_wait*>> waits_of;
  for (const auto& w : waits) waits_of[w.session].push_back(&w);

  // Who can go on: a session that waits nowhere, then one whose every wait can end (all of
  // its blockers, or any one for a semaphore, can go on), until nothing changes.
  std::set<std::int64_t> goes_on;
  auto can_go_on = [&](std::int64_t s) { return !waits_of.count(s) || goes_on.count(s); };
  auto wait_ends = [&](const session_wait& w) {
    auto pred = [&](const auto& b) { return can_go_on(b.first); };
    return w.any_of ? std::any_of(w.blockers.begin(), w.blockers.end(), pred)
                    : std::all_of(w.blockers.begin(), w.blockers.end(), pred);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [s, ws] : waits_of)
      if (!goes_on.count(s) && std::all_of(ws.begin(), ws.end(), [&](const session_wait* w) { return wait_ends(*w); }))
        changed |= goes_on.insert(s).second;
  }

  // The stuck sessions' graph: s -> b for each stuck blocker b of a wait of s that cannot end.
  struct edge {
    std::int64_t to;
    const session_wait* wait;
    bool holds;
  };
  std::map<std::int64_t, std::vector<edge>> out;
  for (const auto& [s, ws] : waits_of) {
    if (goes_on.count(s)) continue;
    auto& es = out[s];
    for (const session_wait* w : ws)
      if (!wait_ends(*w))
        for (const auto& [b, holds] : w->blockers)
          if (!can_go_on(b)) es.push_back({b, w, holds});
    std::sort(es.begin(), es.end(), [](const edge& a, const edge& b) {
      return a.to != b.to ? a.to < b.to : a.wait->dir->path < b.wait->dir->path;
    });
  }

  static const std::vector<edge> none;
  auto edges_of = [&](std::int64_t s) -> const std::vector<edge>& {
    auto it = out.find(s);
    return it == out.end() ? none : it->second;
  };

  // Its strongly connected components (Tarjan), each with a cycle: one deadlock each.
  std::map<std::int64_t, int> index, low;
  std::map<std::int64_t, int> component;
  std::vector<std::int64_t> stack;
  std::set<std::int64_t> on_stack;
  int counter = 0, components = 0;
  std::function<void(std::int64_t)> visit = [&](std::int64_t v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack.insert(v);
    for (const auto& e : edges_of(v)) {
      if (!index.count(e.to)) {
        visit(e.to);
        low[v] = std::min(low[v], low[e.to]);
      } else if (on_stack.count(e.to)) {
        low[v] = std::min(low[v], index[e.to]);
      }
    }
    if (low[v] == index[v]) {
      std::int64_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack.erase(w);
        component[w] = components;
      } while (w != v);
      ++components;
    }
  };
  for (const auto& [s, es] : out)
    if (!index.count(s)) visit(s);

  std::vector<deadlock> result;
  std::set<int> reported;
  for (const auto& [start, c] : component) {  // by session id: the smallest of each first
    if (reported.count(c)) continue;
    // The shortest way back to `start` within its component (breadth first).
    std::map<std::int64_t, const edge*> reached_by;
    std::deque<std::int64_t> todo{start};
    const edge* closing = nullptr;
    while (!todo.empty() && !closing) {
      auto v = todo.front();
      todo.pop_front();
      for (const auto& e : edges_of(v)) {
        if (component.at(e.to) != c) continue;
        if (e.to == start) {
          closing = &e;
          break;
        }
        if (!reached_by.count(e.to)) {
          reached_by[e.to] = &e;
          todo.push_back(e.to);
        }
      }
    }
    if (!closing) continue;  // a component of one session: no cycle
    reported.insert(c);
    std::vector<deadlock_step> steps;
    for (const edge* e = closing;;) {
      steps.push_back({e->wait->session, e->wait->dir->path, e->wait->node->node, e->to, e->holds, e->wait->for_child});
      if (e->wait->session == start) break;
      e = reached_by.at(e->wait->session);
    }
    std::reverse(steps.begin(), steps.end());
    result.push_back({std::move(steps)});
  }
  return result;
}

}  // namespace zklock
