// The simulated server acquire_fsm runs against: an in-memory lock dir and the one ZooKeeper
// session that answers the machine's requests in order, with the connection's drops and
// reconnects, the watches it holds and the events they fire. The unit tests drive it by hand
// (`sim`), the property tests (properties.hpp) at random. No Catch2 here.
#pragma once

#include "driver_rules.hpp"
#include "sansio/acquire_fsm.hpp"
#include "sansio/dir_view.hpp"
#include <zklock/path.hpp>

#include <boost/asio/error.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace zklock::testing {

using detail::acquire_action;
using detail::acquire_fsm;
using detail::lock_mode;
using detail::predecessor_data;
using detail::watch_change;

inline std::string seq10(std::int64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%010lld", static_cast<long long>(n));
  return buf;
}

inline const std::string mutex_prefix = "_c_ffffffff-0000-0000-0000-000000000000-lock-";
inline const std::string reader_prefix = "_c_ffffffff-0000-0000-0000-00000000000r-__READ__";
inline const std::string writer_prefix = "_c_ffffffff-0000-0000-0000-00000000000w-__WRIT__";
inline const std::string lease_prefix = "_c_ffffffff-0000-0000-0000-00000000000l-lease-";
inline const std::string our_id = "11111111-2222-3333-4444-555555555555";

// acquire_fsm against an in-memory lock dir, answering its requests in order (as one ZooKeeper
// session does). With `faults` the connection can drop and come back: the requests in flight
// then fail with connection_loss (a create or delete may or may not have reached the server),
// requests made while it is down fail the same way, and watch events wait for the reconnect.
// Its violation: the first request the fsm's state forbids (property tests).
struct sim : driver_rules {
  /// One reply (or watch event) on its way to the fsm; `lost` is what the C client delivers
  /// instead when the connection drops before the reply (empty for events: they stay queued).
  struct reply {
    template <class F>
      requires(!std::same_as<std::decay_t<F>, reply>)
    reply(F f) : ok(std::move(f)) {}  // NOLINT: the example tests push plain lambdas
    reply(std::function<acquire_fsm::actions()> ok, std::function<acquire_fsm::actions()> lost,
          std::function<void()> undo = {})
        : ok(std::move(ok)), lost(std::move(lost)), undo(std::move(undo)) {}
    std::function<acquire_fsm::actions()> ok, lost;
    std::function<void()> undo;  // the request did not reach the server after all
    bool event = false;          // a watch event the server sent (see drop_connection)
    acquire_fsm::actions operator()() const { return ok(); }
  };

  std::string dir = "/locks/a";
  bool dir_exists = true;
  std::map<std::string, std::int64_t> children;  // name -> czxid
  std::int64_t next_seq = 0, zxid = 100;
  std::set<std::string> watches;                 // paths watched by the fsm
  std::set<std::string> child_watches;           // of them, the blockers watched by a child watch (not nearest)
  std::vector<acquire_action> watch_requests;    // every watch_blocker asked, in order
  std::map<std::string, std::string> data;       // node name -> its data (absent: empty)
  std::set<std::string> downgraded;              // writers whose holder downgraded (hold the read side)
  std::map<std::string, std::int64_t> owners;    // node name -> its ephemeral owner (absent: 1000 + czxid)
  std::deque<reply> replies;
  std::deque<std::function<acquire_fsm::actions()>> held_events;  // fired while disconnected
  acquire_fsm fsm;
  bool completed = false, waiting_reconnect = false;
  int completions = 0;
  int requests = 0, lists = 0, syncs = 0, mark_checks = 0;
  // The session's view of the dir (sansio/dir_view.hpp), kept as the runner keeps it: each
  // listing's reply merged, each deletion heard (an event, a no_node reply) taken out.
  detail::dir_view view;
  std::int64_t listings_made = 0;  // a listing's version (the order the server answers them in)
  int view_asks = 0;
  bool trim_listings = true;
  // The session has no other acquire on the dir (view_blockers::alone): off by default, as if
  // its other waiters watched the rest of the queue.
  bool view_alone = false;  // a waiter's listing as the view trims it for its node (as the runner gives it)
  bool lose_removals = false;  // remove_watch fails with connection loss (the C client keeps the watcher)
  bool connected = true;
  bool glue = false;           // answer wait_reconnect as the recipe does (property tests)
  // check_grant: what the runner says of its session (over: the session ended under the grant;
  // stale: no reply for a third of the session timeout)
  std::function<error_code()> session_over_at_grant;
  std::function<bool()> contact_stale;
  int refreshes = 0, early_answers = 0, requeues = 0;
  int operator_deletes = 0;  // our node deleted by someone else (delete_ours)
  // Events and replies about our node (its watch's) on their way: a grant made while our node's
  // deletion is among them reaches the hold, which hears of the deletion first thing after it.
  int ours_news = 0;
  // Our nodes whose deletion the machine has been told of (their watch's event, a no_node reply
  // to their watch or to the refresh): never granted.
  std::set<std::string> heard_gone;
  // What the above were at the completion (the checks may run a few replies later).
  bool granted_node_heard_gone = false;
  int ours_news_at_completion = 0;
  // Our node's watch asked while the connection was down: its reply (a loss) is on its way, and
  // no watch is on the server. What it was at the completion.
  int own_watch_failing = 0, own_watch_failing_at_completion = 0;
  bool own_watch_set_at_completion = false;  // on the server (a reply lost later is the hold's to handle)
  int delete_backoffs = 0, cleanup_failures = 0;
  // delete_node: the server refuses it for now (throttled_op: the node stays), when it says so
  std::function<bool()> throttle_delete;
  bool backoff_due = false;  // a backoff_delete's delay is running
  // wait_stop_answer's wait is running; it passed (the caller may be answered while connected)
  bool stop_answer_due = false, stop_answer_fired = false;

  /// `max_watched`: K, the blockers the machine watches at once.
  explicit sim(lock_mode mode = lock_mode::wait, int max_watched = detail::default_watched_blockers)
      : fsm(dir, our_id, mode, lock_kind::exclusive, 1, max_watched) {}
  /// An acquire of `kind` (`max_leases`: a semaphore's).
  sim(lock_kind kind, lock_mode mode, int max_leases = 1, int max_watched = detail::default_watched_blockers)
      : fsm(dir, our_id, mode, kind, max_leases, max_watched) {}

  std::string add_foreign(const std::string& prefix = mutex_prefix, std::string_view node_data = {}) {
    std::string name = prefix + seq10(next_seq++);
    children[name] = ++zxid;
    if (!node_data.empty()) data[name] = std::string(node_data);
    return name;
  }
  // the ephemeral owner the server reports for `name` (0: no such node)
  std::int64_t owner_of(const std::string& name) const {
    auto it = children.find(name);
    if (it == children.end()) return 0;
    auto o = owners.find(name);
    return o == owners.end() ? 1000 + it->second : o->second;
  }
  // a writer's node goes: its holder's downgrade mark goes with it (first)
  void drop_mark_of(const std::string& name) {
    auto mark = detail::downgrade_mark_name(name);
    if (mark.empty()) return;
    children.erase(mark);
    owners.erase(mark);
  }
  // another session creates the downgrade mark of `writer` (forged: its owner is not the writer's)
  void forge_mark(const std::string& writer) {
    auto mark = detail::downgrade_mark_name(writer);
    if (mark.empty() || children.count(mark)) return;
    children[mark] = ++zxid;
    owners[mark] = 1;
  }
  std::string data_of(const std::string& name) const {
    auto it = data.find(name);
    return it == data.end() ? std::string() : it->second;
  }
  // a watch on `path` fires: delivered now, or after the reconnect (the C client sets watches again)
  void fire(const std::string& path, watch_change what) {
    bool about_ours = path.starts_with(join_path(dir, fsm.node_prefix()));
    if (about_ours) ++ours_news;
    auto event = [this, path, what, about_ours] {
      if (about_ours) --ours_news;
      if (about_ours && what == watch_change::deleted) heard_gone.insert(path);
      if (what == watch_change::deleted) view.gone(node_name(path));
      return fsm.on_watch_event(path, what);
    };
    if (connected) {
      replies.push_back(event);
      replies.back().event = true;
    } else
      held_events.push_back(event);
  }
  // a zklock 2 holder releases: multi(setData(release_marker), delete), so a watcher sees
  // "changed" (the data watch fires once, on the setData)
  void release_zklock(const std::string& name) { remove_node(name, watch_change::data_changed); }
  // someone writes to a node (a foreign client: Curator's Revoker, an operator's set)
  void change_data(const std::string& name, std::string_view new_data = "__REVOKE__") {
    data[name] = std::string(new_data);
    if (child_watches.count(join_path(dir, name))) return;  // a child watch does not fire on a write
    if (watches.erase(join_path(dir, name))) fire(join_path(dir, name), watch_change::data_changed);
  }
  // The head, a zklock writer holding the write side, downgrades: it holds the read side now.
  // Only the head can (a writer holds with nobody ahead). False when the head is no such node.
  bool downgrade_head() {
    auto q = detail::queue_order(listing());
    if (q.empty() || !q.front().name.starts_with(writer_prefix) || downgraded.count(q.front().name)) return false;
    downgraded.insert(q.front().name);
    // one transaction: the mark, owned by the writer's session, and the marker in its data
    auto mark = detail::downgrade_mark_name(q.front().name);
    auto owner = owner_of(q.front().name);
    children[mark] = ++zxid;
    owners[mark] = owner;
    change_data(q.front().name, detail::downgraded_marker);
    return true;
  }
  // Queues us third, behind a head and a second (created with `second_data`); returns their names.
  std::pair<std::string, std::string> queue_third(std::string_view second_data = {}) {
    auto head = add_foreign();
    auto second = add_foreign(mutex_prefix, second_data);
    run();
    return {head, second};
  }
  void delete_foreign(const std::string& name) { remove_node(name, watch_change::deleted); }
  // `name` goes, its mark with it: its watchers hear `node_event`, the dir's a children change
  void remove_node(const std::string& name, watch_change node_event) {
    drop_mark_of(name);
    children.erase(name);
    data.erase(name);
    downgraded.erase(name);
    // a zklock 2 release's write fires no child watch: its delete does
    if (child_watches.erase(join_path(dir, name))) node_event = watch_change::deleted;
    if (watches.erase(join_path(dir, name))) fire(join_path(dir, name), node_event);
    if (watches.erase(dir)) fire(dir, watch_change::children_changed);
  }
  // Someone else (an operator, a cleanup script, a reaper) deletes our node; false when we have none.
  bool delete_ours() {
    for (auto& [name, z] : children)
      if (name.starts_with(fsm.node_prefix())) {
        auto n = name;  // (erased below)
        ++operator_deletes;
        delete_foreign(n);
        return true;
      }
    return false;
  }
  // The node at `path` goes and its watch with it, with no event (as when the watch was lost).
  void erase_unheard(const std::string& path) {
    children.erase(std::string(node_name(path)));
    watches.erase(path);
  }
  // The watches on other nodes than ours (the blockers', the lease dir's).
  std::set<std::string> blocker_watches() const {
    auto w = watches;
    for (auto it = w.begin(); it != w.end();)
      it = it->starts_with(join_path(dir, fsm.node_prefix())) ? w.erase(it) : std::next(it);
    return w;
  }
  std::string our_path() const {
    for (auto& [name, z] : children)
      if (name.starts_with(fsm.node_prefix())) return join_path(dir, name);
    return {};
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> v;
    for (auto& [n, z] : children) v.push_back(n);
    return v;
  }
  int ours() const {
    int n = 0;
    for (auto& [name, z] : children)
      if (name.starts_with(fsm.node_prefix())) ++n;
    return n;
  }
  void apply(const acquire_fsm::actions& actions) {
    for (const auto& a : actions) {
      if (completed) forbid("an action after the completion");
      if (!connected && a.type != acquire_action::wait_reconnect && a.type != acquire_action::complete &&
          a.type != acquire_action::ask_view &&
          a.type != acquire_action::check_grant && a.type != acquire_action::answer_early &&
          a.type != acquire_action::backoff_delete && a.type != acquire_action::report_cleanup_failed &&
          a.type != acquire_action::wait_stop_answer) {
        // sent while the connection is down: it fails without reaching the server
        ++requests;
        queue_lost(a);
        continue;
      }
      ++requests;
      switch (a.type) {
        case acquire_action::create_and_list: {
          if (ours() > 0) forbid("a create while a node of ours exists");
          if (!dir_exists) {
            replies.push_back(reply([this] { return fsm.on_create(zk_errc::no_node, {}, 0); },
                                    [this] { return fsm.on_create(zk_errc::connection_loss, {}, 0); }));
            replies.push_back(reply([this] { return fsm.on_children(zk_errc::no_node, {}); },
                                    [this] { return fsm.on_children(zk_errc::connection_loss, {}); }));
            break;
          }
          std::string name = std::string(node_name(a.path)) + seq10(next_seq++);
          auto z = children[name] = ++zxid;
          data[name] = std::string(fsm.node_data());
          std::string path = join_path(dir, name);
          replies.push_back(reply([this, path, z] { return fsm.on_create({}, path, z); },
                                  [this] { return fsm.on_create(zk_errc::connection_loss, {}, 0); },
                                  [this, name] { children.erase(name), data.erase(name); }));
          auto snapshot = listing();
          ++lists;
          replies.push_back(reply([this, snapshot, v = ++listings_made] { return children_reply({}, v, snapshot); },
                                  [this] { return fsm.on_children(zk_errc::connection_loss, {}); }));
          break;
        }
        case acquire_action::list: {
          auto snapshot = listing();
          ++lists;
          bool exists = dir_exists;
          replies.push_back(reply(
              [this, snapshot, exists, v = ++listings_made] {
                return children_reply(exists ? error_code{} : error_code(zk_errc::no_node), v, snapshot);
              },
              [this] { return fsm.on_children(zk_errc::connection_loss, {}); }));
          break;
        }
        case acquire_action::sync_and_list: {
          ++syncs;
          auto snapshot = listing();
          ++lists;
          replies.push_back(reply([this, snapshot, v = ++listings_made] { return children_reply({}, v, snapshot); },
                                  [this] { return fsm.on_children(zk_errc::connection_loss, {}); }));
          break;
        }
        case acquire_action::ensure_parents:
          dir_exists = true;
          replies.push_back(reply([this] { return fsm.on_parents({}); },
                                  [this] { return fsm.on_parents(zk_errc::connection_loss); }));
          break;
        case acquire_action::watch_blocker: {
          std::string name(node_name(a.path));
          if (a.path.starts_with(join_path(dir, fsm.node_prefix()))) forbid("our own node watched as a blocker");
          if (watches.count(a.path)) forbid("a second watch on " + a.path);
          bool exists = children.count(name) > 0;
          if (exists) watches.insert(a.path);
          watch_requests.push_back(a);
          if (exists && !a.nearest) child_watches.insert(a.path);
          else child_watches.erase(a.path);
          // lost: the C client registers a watcher only with a reply
          replies.push_back(reply(
              [this, exists, path = a.path] {
                if (!exists) view.gone(node_name(path));
                return fsm.on_watch_set(path, exists ? error_code{} : error_code(zk_errc::no_node));
              },
              [this, path = a.path] {
                watches.erase(path);
                return fsm.on_watch_set(path, zk_errc::connection_loss);
              }));
          break;
        }
        case acquire_action::watch_own: {
          if (!a.path.starts_with(join_path(dir, fsm.node_prefix()))) forbid("watch_own on a node not ours: " + a.path);
          if (watches.count(a.path)) forbid("a second watch on our node");
          bool exists = children.count(std::string(node_name(a.path))) > 0;
          if (exists) watches.insert(a.path);
          ++ours_news;
          replies.push_back(reply(
              [this, exists, path = a.path] {
                --ours_news;
                if (!exists) heard_gone.insert(path);
                return fsm.on_own_watch_set(exists ? error_code{} : error_code(zk_errc::no_node));
              },
              [this, path = a.path] {
                --ours_news;
                watches.erase(path);
                return fsm.on_own_watch_set(zk_errc::connection_loss);
              }));
          break;
        }
        case acquire_action::watch_dir: {
          watches.insert(a.path);
          auto snapshot = listing();
          ++lists;
          replies.push_back(reply([this, snapshot] { return fsm.on_dir_watch_set({}, snapshot); },
                                  [this, path = a.path] {
                                    watches.erase(path);
                                    return fsm.on_dir_watch_set(zk_errc::connection_loss, {});
                                  }));
          break;
        }
        case acquire_action::remove_watch: {
          if (a.path.starts_with(join_path(dir, fsm.node_prefix()))) forbid("our own node's watch removed");
          if (lose_removals) {
            replies.push_back([this, path = a.path] { return fsm.on_watch_removed(path, zk_errc::connection_loss); });
            break;
          }
          bool had = watches.erase(a.path) > 0;
          // lost: the C client keeps the watcher and sets it again on the reconnect
          replies.push_back(reply(
              [this, had, path = a.path] {
                return fsm.on_watch_removed(path, had ? error_code{} : error_code(zk_errc::no_watcher));
              },
              [this, had, path = a.path] {
                if (had) watches.insert(path);
                return fsm.on_watch_removed(path, zk_errc::connection_loss);
              }));
          break;
        }
        case acquire_action::delete_node: {
          std::string name(node_name(a.path));
          if (!a.path.starts_with(join_path(dir, fsm.node_prefix()))) forbid("a delete of a node not ours: " + a.path);
          auto it = children.find(name);
          bool had = it != children.end();
          if (had && throttle_delete && throttle_delete()) {
            replies.push_back(reply([this] { return fsm.on_deleted(zk_errc::throttled_op); },
                                    [this] { return fsm.on_deleted(zk_errc::connection_loss); }));
            break;
          }
          auto z = had ? it->second : 0;
          auto d = data_of(name);
          if (had) children.erase(it), data.erase(name);
          // our own watch on the node fires before the delete's reply (the server sends events first)
          bool watched = had && watches.erase(a.path) > 0;
          replies.push_back(reply(
              [this, had, watched, path = a.path] {
                if (watched) apply(fsm.on_watch_event(path, watch_change::deleted));
                return fsm.on_deleted(had ? error_code{} : error_code(zk_errc::no_node));
              },
              [this] { return fsm.on_deleted(zk_errc::connection_loss); },
              [this, had, name, z, d, watched, path = a.path] {
                if (had) children[name] = z, data[name] = d;
                if (watched) watches.insert(path);
              }));
          break;
        }
        case acquire_action::check_downgrade: {
          // two exists, answered together (the owners as the server has them now)
          ++requests;
          ++mark_checks;
          std::string name(node_name(a.path));
          auto writer_owner = owner_of(name), mark_owner = owner_of(detail::downgrade_mark_name(name));
          replies.push_back(reply(
              [this, writer_owner, mark_owner, path = a.path] {
                return fsm.on_downgrade_checked(path, {}, writer_owner, mark_owner);
              },
              [this, path = a.path] { return fsm.on_downgrade_checked(path, zk_errc::connection_loss, 0, 0); }));
          break;
        }
        case acquire_action::stat_node: {
          auto it = children.find(std::string(node_name(a.path)));
          bool had = it != children.end();
          auto z = had ? it->second : 0;
          replies.push_back(reply(
              [this, had, z] { return fsm.on_stat(had ? error_code{} : error_code(zk_errc::no_node), z); },
              [this] { return fsm.on_stat(zk_errc::connection_loss, 0); }));
          break;
        }
        case acquire_action::ask_view: {  // the runner's answer, at once (no request)
          --requests;
          ++view_asks;
          auto v = view.nearest(node_name(a.path), fsm.kind(), static_cast<std::size_t>(fsm.max_watched()),
                                fsm.counted_as_readers());
          v.alone = view_alone;
          apply(fsm.on_view(v));
          break;
        }
        case acquire_action::wait_reconnect:
          waiting_reconnect = true;
          --requests;
          // the recipe's glue: already connected again, so go on at once (posted)
          if (glue && connected) replies.push_back([this] { return fsm.on_reconnected(); });
          break;
        case acquire_action::check_grant:
          --requests;
          apply(fsm.on_grant_check({.session_over = session_over_at_grant ? session_over_at_grant() : error_code{},
                                    .contact_stale = contact_stale && contact_stale(),
                                    .connected = connected}));
          break;
        case acquire_action::refresh_contact:
          ++refreshes;
          if (!a.path.starts_with(join_path(dir, fsm.node_prefix()))) forbid("a refresh on a node not ours: " + a.path);
          replies.push_back(reply(
              [this, path = a.path] {
                bool exists = children.count(std::string(node_name(path))) > 0;
                if (!exists) heard_gone.insert(path);
                return fsm.on_refreshed({}, exists);
              },
              [this] { return fsm.on_refreshed(zk_errc::connection_loss); }));
          break;
        case acquire_action::requeued:
          --requests;
          view.gone(node_name(a.path));  // (as the runner does)
          ++requeues;
          if (children.count(std::string(node_name(a.path)))) forbid("queued again while our node exists: " + a.path);
          break;
        case acquire_action::answer_early:
          --requests;
          if (connected && !stop_answer_fired) forbid("a caller answered before the cleanup while connected");
          if (++early_answers > 1) forbid("a caller answered early twice");
          if (a.ec != errc::connection_unavailable && a.ec != boost::asio::error::operation_aborted &&
              a.ec != errc::lock_timeout)
            forbid("answered early with " + a.ec.message());
          break;
        case acquire_action::wait_stop_answer:
          --requests;
          if (stop_answer_due) forbid("a second stop answer wait while one runs");
          stop_answer_due = true;
          break;
        case acquire_action::backoff_delete:
          --requests;
          if (backoff_due) forbid("a second delete backoff while one is due");
          backoff_due = true;
          ++delete_backoffs;
          break;
        case acquire_action::report_cleanup_failed:
          --requests;
          ++cleanup_failures;
          break;
        case acquire_action::create_beacon:
        case acquire_action::read_owner:
        case acquire_action::check_session:
        case acquire_action::start_lock_delay:
          forbid("a lock-delay action with lock-delay off");
          break;
        case acquire_action::complete:
          granted_node_heard_gone = !fsm.result().ec && heard_gone.count(fsm.result().node) > 0;
          ours_news_at_completion = ours_news;
          own_watch_failing_at_completion = own_watch_failing;
          own_watch_set_at_completion = !fsm.result().ec && watches.count(fsm.result().node) > 0;
          completed = true;
          ++completions;
          --requests;
          break;
      }
    }
  }
  // A listing's reply, merged into the view first (as the runner does).
  acquire_fsm::actions children_reply(error_code ec, std::int64_t version, const std::vector<std::string>& snapshot) {
    if (!ec) view.merge({1, version}, snapshot);
    else if (ec == zk_errc::no_node) view.clear();
    if (!ec && trim_listings && fsm.takes_view_listing())
      return fsm.on_children(ec, view.listing_for(node_name(fsm.node()), fsm.kind(),
                                                  static_cast<std::size_t>(fsm.max_watched()), fsm.counted_as_readers()));
    return fsm.on_children(ec, snapshot);
  }
  // The wait asked by wait_stop_answer passed (stop_answer_wait).
  void stop_answer_wait_over() {
    if (!stop_answer_due) return;
    stop_answer_due = false;
    stop_answer_fired = true;
    apply(fsm.on_stop_answer_due());
  }
  void backoff_delete_due() {
    if (!backoff_due) return;
    backoff_due = false;
    apply(fsm.on_backoff_due());
  }
  // A request sent while the connection is down: its reply is connection_loss.
  void queue_lost(const acquire_action& a) {
    auto loss = error_code(zk_errc::connection_loss);
    switch (a.type) {
      case acquire_action::create_and_list:
        replies.push_back([this, loss] { return fsm.on_create(loss, {}, 0); });
        replies.push_back([this, loss] { return fsm.on_children(loss, {}); });
        break;
      case acquire_action::list:
      case acquire_action::sync_and_list:
        replies.push_back([this, loss] { return fsm.on_children(loss, {}); });
        break;
      case acquire_action::ensure_parents: replies.push_back([this, loss] { return fsm.on_parents(loss); }); break;
      case acquire_action::watch_blocker:
        replies.push_back([this, loss, path = a.path] { return fsm.on_watch_set(path, loss); });
        break;
      case acquire_action::watch_own:  // (no news; no watch on the server)
        ++own_watch_failing;
        replies.push_back([this, loss] { return --own_watch_failing, fsm.on_own_watch_set(loss); });
        break;
      case acquire_action::watch_dir: replies.push_back([this, loss] { return fsm.on_dir_watch_set(loss, {}); }); break;
      case acquire_action::remove_watch:
        replies.push_back([this, loss, path = a.path] { return fsm.on_watch_removed(path, loss); });
        break;
      case acquire_action::delete_node: replies.push_back([this, loss] { return fsm.on_deleted(loss); }); break;
      case acquire_action::stat_node: replies.push_back([this, loss] { return fsm.on_stat(loss, 0); }); break;
      case acquire_action::check_downgrade:
        replies.push_back([this, loss, path = a.path] { return fsm.on_downgrade_checked(path, loss, 0, 0); });
        break;
      case acquire_action::refresh_contact: replies.push_back([this, loss] { return fsm.on_refreshed(loss); }); break;
      case acquire_action::wait_reconnect:
      case acquire_action::ask_view:
      case acquire_action::requeued:
      case acquire_action::backoff_delete:
      case acquire_action::wait_stop_answer:
      case acquire_action::report_cleanup_failed:
      case acquire_action::check_grant:
      case acquire_action::answer_early:
      case acquire_action::create_beacon:
      case acquire_action::read_owner:
      case acquire_action::check_session:
      case acquire_action::start_lock_delay:
      case acquire_action::complete: break;
    }
  }
  // The connection drops. The queue is the order the server sent its replies and events in,
  // on one connection: the watch events already received, and every reply ahead of one, were
  // received, and the C client delivers them as they came, first. Every reply still on its way
  // fails with connection_loss, delivered now (the C client fails them when it notices);
  // `reached(...)` says whether a create or a delete in flight reached the server first.
  template <class Coin>
  void drop_connection(Coin reached) {
    if (!connected) return;
    connected = false;
    std::size_t received = 0;
    for (std::size_t i = 0; i < replies.size(); ++i)
      if (replies[i].event) received = i + 1;
    std::deque<reply> arrived(std::make_move_iterator(replies.begin()),
                              std::make_move_iterator(replies.begin() + static_cast<std::ptrdiff_t>(received)));
    replies.erase(replies.begin(), replies.begin() + static_cast<std::ptrdiff_t>(received));
    for (auto& r : arrived) apply(r());
    std::deque<reply> in_flight;
    std::deque<reply> kept;  // (what the machine posted to itself, and the replies to requests made since)
    for (auto& r : replies) (r.lost ? in_flight : kept).push_back(std::move(r));
    replies = std::move(kept);
    bool reaching = true;  // one connection, in order: once one did not reach it, none after did
    for (auto& r : in_flight) {
      if (r.undo && reaching && !reached()) reaching = false;
      if (r.undo && !reaching) r.undo();
      apply(r.lost());
    }
  }
  // Connected again (same session): the requests sent meanwhile fail first, then the session
  // event, then the watches that fired meanwhile.
  void reconnect() {
    if (connected) return;
    while (!replies.empty() && !connected) step();
    connected = true;
    waiting_reconnect = false;
    apply(fsm.on_reconnected());
    for (auto& e : held_events) replies.push_back(std::move(e));
    held_events.clear();
  }
  bool step() {
    if (replies.empty()) return false;
    auto r = std::move(replies.front());
    replies.pop_front();
    apply(r());
    return true;
  }
  void drain() {
    while (step()) {
    }
  }
  /// The create and the listing pipelined with it both fail with connection_loss (whether the
  /// create reached the server is up to the test).
  void lose_create_and_listing() {
    apply(fsm.on_create(zk_errc::connection_loss, {}, 0));
    apply(fsm.on_children(zk_errc::connection_loss, {}));
  }
  /// Starts the acquire and answers its requests until none is left.
  void run() {
    apply(fsm.start());
    drain();
  }
};

}  // namespace zklock::testing
