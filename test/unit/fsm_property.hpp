// The state machines' property tests, shared by the seeded Catch2 tests (test/unit) and the
// libFuzzer driver (test/fuzz): the in-memory lock dir that answers acquire_fsm's requests (the
// unit tests' `sim`), the hold_fsm driver, the random inputs and the invariants with their own
// oracle of the grant rule. No Catch2 here: a broken invariant is returned as a message.
//
// The inputs come from a `Source`: `operator()` gives the next choice (an unsigned number) and
// `exhausted()` says the input is used up (a seeded generator never is; the fuzzer's bytes
// are). The draws changed when node data, foreign writes and downgrades came in: a seed printed
// by a failure before it replays another run.
#pragma once

#include "sansio/hold_fsm.hpp"
#include "sansio/acquire_fsm.hpp"
#include <zklock/path.hpp>

#include <boost/asio/error.hpp>

#include <chrono>
#include <cstdint>
#include <concepts>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace zklock::testing {

using detail::hold_action;
using detail::hold_fsm;
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

/// A seeded source: the generator the Catch2 property tests have always used.
struct seeded_source {
  std::mt19937 rng;
  explicit seeded_source(std::uint32_t seed) : rng(seed) {}
  std::uint32_t operator()() { return rng(); }
  bool exhausted() const noexcept { return false; }
};

/// The fuzzer's source: one byte a choice; 0 once the bytes are used up.
struct byte_source {
  const std::uint8_t* data;
  std::size_t size;
  std::uint32_t operator()() {
    if (size == 0) {
      used_up = true;
      return 0;
    }
    --size;
    return *data++;
  }
  bool exhausted() const noexcept { return used_up; }
  bool used_up = false;
};

// ---------------------------------------------------------------------------------------------
// acquire_fsm against an in-memory lock dir, answering its requests in order (as one ZooKeeper
// session does). With `faults` the connection can drop and come back: the requests in flight
// then fail with connection_loss (a create or delete may or may not have reached the server),
// requests made while it is down fail the same way, and watch events wait for the reconnect.

struct sim {
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
  std::map<std::string, std::string> data;       // node name -> its data (absent: empty)
  std::set<std::string> downgraded;              // writers whose holder downgraded (hold the read side)
  std::map<std::string, std::int64_t> owners;    // node name -> its ephemeral owner (absent: 1000 + czxid)
  std::deque<reply> replies;
  std::deque<std::function<acquire_fsm::actions()>> held_events;  // fired while disconnected
  acquire_fsm fsm;
  bool completed = false, waiting_reconnect = false;
  int completions = 0;
  int requests = 0, lists = 0, syncs = 0, mark_checks = 0;
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
  std::string violation;       // the first request the fsm's state forbids (property tests)

  /// `max_watched`: K, the blockers the machine watches at once.
  explicit sim(lock_mode mode = lock_mode::wait, int max_watched = detail::default_watched_blockers)
      : fsm(dir, our_id, mode, lock_kind::exclusive, 1, max_watched) {}

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
  void release_zklock(const std::string& name) {
    drop_mark_of(name);
    children.erase(name);
    data.erase(name);
    downgraded.erase(name);
    if (watches.erase(join_path(dir, name))) fire(join_path(dir, name), watch_change::data_changed);
    if (watches.erase(dir)) fire(dir, watch_change::children_changed);
  }
  // someone writes to a node (a foreign client: Curator's Revoker, an operator's set)
  void change_data(const std::string& name, std::string_view new_data = "__REVOKE__") {
    data[name] = std::string(new_data);
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
    apply(fsm.start());
    drain();
    return {head, second};
  }
  void delete_foreign(const std::string& name) {
    drop_mark_of(name);
    children.erase(name);
    data.erase(name);
    downgraded.erase(name);
    if (watches.erase(join_path(dir, name))) fire(join_path(dir, name), watch_change::deleted);
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
  void forbid(const std::string& what) {
    if (violation.empty()) violation = what;
  }

  void apply(const acquire_fsm::actions& actions) {
    for (const auto& a : actions) {
      if (completed) forbid("an action after the completion");
      if (!connected && a.type != acquire_action::wait_reconnect && a.type != acquire_action::complete &&
          a.type != acquire_action::check_grant && a.type != acquire_action::answer_early &&
          a.type != acquire_action::backoff_delete && a.type != acquire_action::report_cleanup_failed) {
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
          replies.push_back(reply([this, snapshot] { return fsm.on_children({}, snapshot); },
                                  [this] { return fsm.on_children(zk_errc::connection_loss, {}); }));
          break;
        }
        case acquire_action::list: {
          auto snapshot = listing();
          ++lists;
          bool exists = dir_exists;
          replies.push_back(reply(
              [this, snapshot, exists] {
                return fsm.on_children(exists ? error_code{} : error_code(zk_errc::no_node), snapshot);
              },
              [this] { return fsm.on_children(zk_errc::connection_loss, {}); }));
          break;
        }
        case acquire_action::sync_and_list: {
          ++syncs;
          auto snapshot = listing();
          ++lists;
          replies.push_back(reply([this, snapshot] { return fsm.on_children({}, snapshot); },
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
          // lost: the C client registers a watcher only with a reply
          replies.push_back(reply(
              [this, exists, path = a.path] {
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
          ++requeues;
          if (children.count(std::string(node_name(a.path)))) forbid("queued again while our node exists: " + a.path);
          break;
        case acquire_action::answer_early:
          --requests;
          if (connected) forbid("a caller answered before the cleanup while connected");
          if (++early_answers > 1) forbid("a caller answered early twice");
          if (a.ec != errc::connection_unavailable && a.ec != boost::asio::error::operation_aborted &&
              a.ec != errc::lock_timeout)
            forbid("answered early with " + a.ec.message());
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
      case acquire_action::requeued:
      case acquire_action::backoff_delete:
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
};

/// The grant rule, written out again (not find_blockers: an oracle of its own): whether the
/// node at `mine` of the queue `q` holds a lock of `kind`. `downgraded`: writers whose holder
/// downgraded (they hold the read side: readers may join them). Decided by what happened to the
/// nodes, never by their data (which anyone may write).
inline bool oracle_granted(const std::vector<detail::queued_node>& q, std::size_t mine, lock_kind kind, int max_leases,
                           const std::set<std::string>& downgraded = {}) {
  if (kind == lock_kind::lease) return mine < static_cast<std::size_t>(max_leases);
  for (std::size_t i = 0; i < mine; ++i) {
    if (kind == lock_kind::exclusive || kind == lock_kind::write) return false;
    bool reads = q[i].kind == lock_kind::read || downgraded.count(q[i].name);
    if (!reads) return false;
  }
  return true;
}

/// The checks at a completion, against the dir as it is then. A grant: our one node, the
/// grant rule holds, the fencing token is the node's czxid, no watch left behind. A failure
/// (the session alive): no node of ours and no watch left (cleanup before the completion).
inline std::optional<std::string> check_completion(const sim& s, lock_kind kind, int max_leases, bool expired) {
  const auto& r = s.fsm.result();
  if (r.ec) {
    if (expired) return std::nullopt;  // the node and the watch went with the session
    if (s.ours() != 0 && s.cleanup_failures == 0)  // a node the server refused to delete is reported
      return "completed with " + r.ec.message() + " before deleting our node";
    if (s.cleanup_failures > 0 && s.ours() != 1 && s.operator_deletes == 0)
      return "a cleanup failure reported for a node not left";
    for (const auto& w : s.watches)
      // (a node the server refused to delete keeps its watch, as it keeps the node)
      if (s.cleanup_failures == 0 || w != s.our_path())
        return "completed with " + r.ec.message() + " before removing the watch on " + w;
    return std::nullopt;
  }
  if (s.granted_node_heard_gone) return "granted on a node the machine was told is gone: " + r.node;
  // Deleted after the grant was decided (the listing that granted predates it): the hold hears
  // it first thing (its watch's event or reply on the way, or the watch it sets when it has none).
  // (Or its watch's request went out with the connection down: the hold sets it again, or looks
  // at our node, after the reconnect.)
  if (s.ours() == 0 && s.operator_deletes > 0 &&
      (s.ours_news_at_completion > 0 || s.own_watch_failing_at_completion > 0 ||
       s.fsm.own_node_watch() == acquire_fsm::own_watch::none))
    return std::nullopt;
  if (s.ours() != 1) return "granted with " + std::to_string(s.ours()) + " nodes of ours";
  auto q = detail::queue_order(s.listing());
  std::size_t mine = 0;
  for (std::size_t i = 0; i < q.size(); ++i)
    if (q[i].name.starts_with(s.fsm.node_prefix())) mine = i;
  if (!oracle_granted(q, mine, kind, max_leases, s.downgraded))
    return "granted against the grant rule (" + std::string(to_string(kind)) + ", position " + std::to_string(mine) + ")";
  if (r.node != join_path(s.dir, q[mine].name)) return "granted with the wrong node " + r.node;
  if (r.fencing_token != s.children.at(q[mine].name)) return "granted with a fencing token not the node's czxid";
  // The one watch left is on our node: the hold takes it over (or its request is on its way;
  // with none, the hold sets one), so a holder hears of our node's deletion from its first
  // event or reply after it.
  for (const auto& w : s.watches)
    if (w != r.node) return "granted with a watch left on " + w;
  bool own_set = s.own_watch_set_at_completion;
  auto own = s.fsm.own_node_watch();
  // (set, or its reply on its way; a reply that will say the connection was lost leaves the hold
  // to set the watch again after the reconnect)
  bool failing = own == acquire_fsm::own_watch::setting && s.own_watch_failing_at_completion > 0;
  if (own_set != (own != acquire_fsm::own_watch::none) && !(failing && !own_set))
    return "our node's watch: the machine and the server disagree";
  return std::nullopt;
}

/// One run of the lock property: random kind, mode, K (blockers watched), queue, releases,
/// arrivals, data changes, deletions of any contender's node ours included (an operator's),
/// cancellation, expiry (and with `faults`, connection drops and reconnects) in random order.
/// Data changes: foreign writes to any contender, the holder included ("__REVOKE__", anything,
/// a forged downgrade with or without a forged mark: never a grant), the head writer's
/// downgrade (its mark and its marker: readers may join it), the release transaction
/// of a zklock 2 holder (setData then delete).
/// Invariants: one completion and nothing after it; never two nodes of ours; no request the
/// state forbids (sim::violation: among them a second watch on a node, queueing again while our
/// node exists); check_completion at the completion (no grant without our node, its watch
/// handed over); at the end, with the
/// connection back and every contender gone, a waiting acquire completes. Returns the first
/// broken one.
template <class Source>
std::optional<std::string> run_lock_property(Source& rng, bool faults) {
  const std::string prefixes[] = {mutex_prefix, reader_prefix, writer_prefix, lease_prefix};
  const lock_kind kinds[] = {lock_kind::exclusive, lock_kind::read, lock_kind::write, lock_kind::lease};
  lock_kind kind = kinds[rng() % 4];
  auto mode_draw = rng() % 8;
  lock_mode mode = mode_draw < 2 ? lock_mode::try_once : mode_draw == 2 ? lock_mode::try_after_probe : lock_mode::wait;
  int max_leases = 1 + static_cast<int>(rng() % 3);
  int max_watched = 1 + static_cast<int>(rng() % 4);  // K: 1 (the nearest only) to 4
  sim s;
  s.fsm = acquire_fsm(s.dir, our_id, mode, kind, max_leases, max_watched);
  s.glue = true;
  auto foreign_prefix = [&] {
    // leases only meet leases (their own dir); the others meet every lock kind
    return kind == lock_kind::lease ? prefixes[3] : prefixes[rng() % 3];
  };
  // A contender arrives, with its node's data: a mutex node is Curator's or kazoo's (no
  // marker), a zklock 2 one or a zklock 3 one; shared nodes carry the shared marker.
  auto arrive = [&] {
    auto prefix = foreign_prefix();
    std::string_view d;
    if (prefix == mutex_prefix) {
      std::string_view markers[] = {{}, detail::contender_marker_v2, detail::contender_marker};
      d = markers[rng() % 3];
    } else if (prefix != lease_prefix) {
      d = detail::shared_marker;
    }
    return s.add_foreign(prefix, d);
  };
  std::vector<std::string> foreign;
  for (int i = rng() % 4; i > 0; --i) foreign.push_back(arrive());
  bool cancelled = false, expired = false, checked = false;
  s.contact_stale = [&] { return rng() % 3 == 0; };
  s.throttle_delete = [&] { return rng() % 3 == 0; };  // sometimes until the retries run out
  // Rarely, the session ended under the grant (its state event still queued): no grant.
  s.session_over_at_grant = [&]() -> error_code {
    if (expired || rng() % 16 != 0) return {};
    expired = true;
    s.watches.clear();
    for (auto it = s.children.begin(); it != s.children.end();)
      it = it->first.starts_with(s.fsm.node_prefix()) ? s.children.erase(it) : std::next(it);
    return errc::session_closed;
  };
  s.apply(s.fsm.start());
  auto check = [&]() -> std::optional<std::string> {
    if (!s.violation.empty()) return s.violation;
    if (s.ours() > 1) return "two nodes of ours";
    if (s.completions > 1) return "two completions";
    if (s.completed && !checked) {
      checked = true;
      if (!s.fsm.result().ec && s.fsm.answered_early()) return "granted after the caller was answered";
      return check_completion(s, kind, max_leases, expired);
    }
    return std::nullopt;
  };
  for (int steps = 0; steps < 200 && !s.completed && !rng.exhausted(); ++steps) {
    switch (rng() % (faults ? 11 : 9)) {
      case 0:
        if (rng() % 5 == 0) {
          // someone else deletes our node (an operator, a reaper): we must queue again
          s.delete_ours();
        } else if (!foreign.empty()) {
          auto i = rng() % foreign.size();
          s.delete_foreign(foreign[i]);
          foreign.erase(foreign.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      case 1:
        if (rng() % 3 == 0) foreign.push_back(arrive());
        break;
      case 4:
        if (!foreign.empty()) {
          auto i = rng() % foreign.size();
          switch (rng() % 3) {
            case 0:
              // A foreign write to any contender, the holder included (Curator's Revoker,
              // an operator's set): the holder still holds, nobody may be granted by it.
              switch (rng() % 4) {
                case 0: s.change_data(foreign[i], "__REVOKE__"); break;
                case 1: s.change_data(foreign[i], "operator data"); break;
                // a forged downgrade: the marker written by another session, with or without
                // a mark of its own (never a grant: the writer still holds the write side)
                case 2: s.change_data(foreign[i], detail::downgraded_marker); break;
                default:
                  s.forge_mark(foreign[i]);
                  s.change_data(foreign[i], detail::downgraded_marker);
                  break;
              }
              break;
            case 1:
              s.downgrade_head();  // the head writer downgrades (when the head is one)
              break;
            default:
              if (s.data_of(foreign[i]) == detail::contender_marker_v2) {
                // a zklock 2 holder's release: data changed, then gone; only the head holds
                // (a zklock 2 waiter that gives up deletes its node without the marker)
                if (detail::queue_order(s.listing()).front().name == foreign[i])
                  s.release_zklock(foreign[i]);
                else
                  s.delete_foreign(foreign[i]);
                foreign.erase(foreign.begin() + static_cast<std::ptrdiff_t>(i));
              } else {
                s.change_data(foreign[i], "x");
              }
              break;
          }
        }
        break;
      case 2:
        if (!cancelled && rng() % 6 == 0) {
          cancelled = true;
          switch (rng() % 3) {
            case 0: s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, detail::stop_kind::total, s.connected)); break;
            case 1: s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, detail::stop_kind::at_once, s.connected)); break;
            default: s.apply(s.fsm.on_timeout(s.connected)); break;
          }
        } else if (cancelled && rng() % 6 == 0) {
          // a second cancellation (terminal after a total one, or after the timeout)
          s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, detail::stop_kind::at_once, s.connected));
        }
        break;
      case 3:
        if (!expired && rng() % 40 == 0) {
          expired = true;
          s.replies.clear();
          s.ours_news = 0;
          s.held_events.clear();
          s.watches.clear();
          for (auto it = s.children.begin(); it != s.children.end();)
            it = it->first.starts_with(s.fsm.node_prefix()) ? s.children.erase(it) : std::next(it);
          s.apply(s.fsm.on_expired());
        }
        break;
      case 5:
        s.backoff_delete_due();  // the delay of a refused cleanup delete passed
        break;
      case 9: {
        bool was = s.connected;
        s.drop_connection([&] { return rng() % 2 == 0; });
        if (was) s.apply(s.fsm.on_suspended());
        // a try-acquire never waits for a reconnect: it has answered by now
        if (was && mode != lock_mode::wait && !s.completed && s.early_answers == 0)
          return "a try-acquire still waiting after the connection dropped";
        break;
      }
      case 10:
        s.reconnect();
        break;
      default:
        if (!s.step() && foreign.empty() && !cancelled && s.connected) {
          cancelled = true;  // nothing left to happen: give up, which must still clean up
          s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
        }
        break;
    }
    if (auto bad = check()) return bad;
  }
  // Settle: the connection back, the late replies (ignored after a completion), every
  // contender gone; whatever was still waiting must now complete.
  s.reconnect();
  s.drain();
  for (int i = 0; i < 10 && s.backoff_due; ++i) s.backoff_delete_due(), s.drain();
  if (auto bad = check()) return bad;
  if (!s.completed && !expired) {
    for (auto& f : foreign) s.delete_foreign(f);
    foreign.clear();
    s.drain();
    for (int i = 0; i < 10 && s.backoff_due; ++i) s.backoff_delete_due(), s.drain();
    if (auto bad = check()) return bad;
    if (!s.completed) return "still waiting with the connection up and no contender left";
  }
  if (s.completed && !expired && !s.fsm.result().ec && s.ours() != 1 && s.operator_deletes == 0)
    return "our granted node vanished";
  if (s.completed && !expired && s.fsm.result().ec && s.ours() != 0 && s.cleanup_failures == 0)
    return "a node of ours left after the failure, not reported";
  if (s.backoff_due && s.completed) return "a delete backoff due after the completion";
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// hold_fsm: drives one and records what it asks for.

struct hold_driver {
  using time_point = std::chrono::steady_clock::time_point;
  hold_fsm fsm;
  int sends = 0, losts = 0, completions = 0, retries = 0, failures = 0;
  error_code last_completion;
  error_code lost_error;  // what report_lost said
  bool in_flight = false;
  bool backoff_pending = false;  // a backoff_release's delay is running
  std::string violation;  // the first broken rule of the driver's own
  // The clock and the session's contact (on_clock): a session timeout of 3 s, a margin of 1 s.
  time_point now{std::chrono::seconds(1000)}, last_ack = now;
  std::chrono::milliseconds session_timeout{3000};
  bool connected = true, ended = false;
  std::optional<time_point> timer;  // armed by arm_timer
  int keepalives = 0;
  bool keepalive_in_flight = false;
  std::map<std::uint64_t, std::chrono::milliseconds> deadline_waiters;  // id -> lead, not yet answered
  std::uint64_t next_waiter = 0;
  int deadline_answers = 0;

  explicit hold_driver(bool connected = true, bool local = false)
      : fsm(connected, local), connected(connected) {}

  time_point valid_until() const { return last_ack + session_timeout - std::chrono::seconds(1); }
  detail::hold_clock clock() const {
    return {.now = now, .valid_until = valid_until(), .last_acknowledged = last_ack, .session_timeout = session_timeout,
            .connected = connected && !ended, .ended = ended};
  }
  void tick() { apply(fsm.on_clock(clock())); }
  void add_waiter(std::chrono::milliseconds lead) {
    deadline_waiters[++next_waiter] = lead;
    fsm.add_deadline_waiter(next_waiter, lead);
    tick();
  }
  // Time passes; the timer fires on the way, at its time, each time it is due.
  void advance(std::chrono::milliseconds d) {
    auto until = now + d;
    for (int i = 0; i < 100 && timer && *timer <= until; ++i) {
      now = std::max(now, *timer);
      timer.reset();
      tick();
    }
    now = until;
  }
  // The keepalive's reply: from the server (contact) or lost with the connection.
  void keepalive_reply(error_code ec, bool node_ours = true) {
    if (!keepalive_in_flight) forbid("a keepalive reply without a request");
    keepalive_in_flight = false;
    if (!ec) last_ack = now;
    apply(fsm.on_keepalive_reply(ec, node_ours, clock()));
  }

  void forbid(const std::string& what) {
    if (violation.empty()) violation = what;
  }
  void apply(const hold_fsm::actions& actions) {
    for (const auto& a : actions) {
      switch (a.type) {
        case hold_action::send_release:
          if (in_flight) forbid("a second release request while one is in flight");
          in_flight = true;
          ++sends;
          break;
        case hold_action::report_lost:
          ++losts;
          lost_error = a.ec;
          if (a.ec != errc::lock_lost || lock_lost_cause(a.ec) == lost_cause::unknown)
            forbid("a loss reported without its cause: " + a.ec.message());
          break;
        case hold_action::complete_release:
          ++completions;
          last_completion = a.ec;
          break;
        case hold_action::backoff_release:
          if (backoff_pending) forbid("a second backoff while one is due");
          if (in_flight) forbid("a backoff while a release is in flight");
          backoff_pending = true;
          ++retries;
          break;
        case hold_action::report_release_failed:
          ++failures;
          break;
        case hold_action::arm_timer:
          if (a.at > valid_until()) forbid("a timer armed past the validity deadline");
          timer = a.at;
          break;
        case hold_action::stop_timer:
          timer.reset();
          break;
        case hold_action::send_keepalive:
          if (keepalive_in_flight) forbid("a second keepalive while one is in flight");
          if (!connected || ended) forbid("a keepalive sent while the connection is down");
          if (last_ack + session_timeout / 3 > now) forbid("a keepalive before a third of the session timeout passed");
          keepalive_in_flight = true;
          ++keepalives;
          break;
        case hold_action::deadline_near: {
          auto it = deadline_waiters.find(a.waiter);
          if (it == deadline_waiters.end()) {
            forbid("a deadline waiter answered twice (or never added)");
            break;
          }
          if (valid_until() - it->second > now) forbid("a deadline waiter answered before its lead");
          deadline_waiters.erase(it);
          ++deadline_answers;
          break;
        }
      }
      // The runner answers the waiters left with the loss (report_lost) or the release.
      if (a.type == hold_action::report_lost) deadline_waiters.clear(), timer.reset();
    }
  }
  // the delay of backoff_release passed
  void backoff_due() {
    if (!backoff_pending) return;
    backoff_pending = false;
    apply(fsm.on_backoff_due());
  }
  void reply(error_code ec) {
    if (!in_flight) forbid("a reply without a request");
    in_flight = false;
    apply(fsm.on_release_reply(ec));
  }
  // the C client fails requests in flight when the connection drops
  void drop_connection() {
    connected = false;
    if (in_flight) reply(zk_errc::connection_loss);
    if (keepalive_in_flight) keepalive_reply(zk_errc::connection_loss);
    apply(fsm.on_suspended());
  }
};

/// One run of the hold property. Inputs at random, among them the clock: time passing (the
/// timer fires when due), contact (a reply moves the deadline), the keepalive's reply, waiters
/// of async_wait_deadline. After each step: at most one request in flight, nothing sent while
/// the connection is down or after the session ended, at most one lost report, a release's
/// answer only to a waiting caller; a hold that owns never has its deadline behind it, keeps a
/// timer armed at or before it, and has answered every deadline waiter whose lead is reached;
/// at most one keepalive in flight, none before a third of the session timeout. At the end,
/// with the connection back and replies applied, a hold whose session lives has its node
/// deleted if it was released or lost, and every release that waited got exactly one answer.
template <class Source>
std::optional<std::string> run_hold_property(Source& rng) {
  using namespace std::chrono_literals;
  hold_driver d(rng() % 4 != 0);
  bool released = false;
  bool node_gone = false;  // deleted by someone else (or by our release)
  int expected_completions = 0;  // every release that waits is answered exactly once
  d.tick();                      // hold::start
  for (int step = 0; step < 30 && !rng.exhausted(); ++step) {
    int sends_before = d.sends, keepalives_before = d.keepalives;
    switch (rng() % 13) {
      case 0:
        d.drop_connection();
        d.tick();
        break;
      case 1: {
        bool same = rng() % 8 != 0;
        d.apply(d.fsm.on_connected(same));
        if (!d.ended) d.connected = true;
        if (!same) d.ended = true, d.connected = false;
        d.tick();
        break;
      }
      case 2:
        d.apply(d.fsm.on_session_ended());
        d.ended = true;
        d.connected = false;
        d.in_flight = false;  // requests of a dead session never answer
        d.keepalive_in_flight = false;
        d.tick();
        break;
      case 3:
        d.advance(std::chrono::milliseconds(rng() % 4000));  // past the deadline, sometimes
        break;
      case 4: {
        bool waits = rng() % 2 == 0;
        int before = d.completions;
        d.apply(d.fsm.release(waits));
        expected_completions += waits;
        if (released && waits && d.completions != before + 1) return "a second release not answered at once";
        if (released && waits && d.last_completion != errc::already_released) return "a second release not already_released";
        released = true;
        d.deadline_waiters.clear();  // hold::release_one answers them (already_released)
        d.timer.reset();             // and cancels the timer
        d.tick();
        break;
      }
      case 5: {
        // the server's answers: applied, gone, refused for now (throttled), refused for good
        static const error_code replies[] = {{}, {}, zk_errc::no_node, zk_errc::throttled_op, zk_errc::no_auth, {}};
        if (!d.in_flight) break;
        auto r = node_gone ? error_code(zk_errc::no_node) : replies[rng() % 6];
        if (!r && !node_gone) {
          // our delete: our node's watch fires before the reply; it is no loss
          int losts = d.losts;
          node_gone = true;
          d.apply(d.fsm.on_node_deleted());
          if (d.losts != losts) return "our own delete reported as a loss";
        }
        d.reply(r);
        break;
      }
      case 6:
        if (d.in_flight || d.keepalive_in_flight) d.drop_connection(), d.tick();
        break;
      case 7:
        d.backoff_due();
        break;
      case 8:
        d.advance(std::chrono::milliseconds(rng() % 1200));
        break;
      case 9:
        if (d.connected && !d.ended) d.last_ack = d.now;  // another request's reply: contact
        break;
      case 10:
        // the keepalive's reply: our node, rarely gone (an administrator's delete)
        if (d.keepalive_in_flight) d.keepalive_reply({}, rng() % 8 != 0);
        break;
      case 11: {
        static const std::chrono::milliseconds leads[] = {0ms, 500ms, 1500ms, 5000ms};
        auto st = d.fsm.status();
        if (st == lock_status::held || st == lock_status::maybe_lost) d.add_waiter(leads[rng() % 4]);
        break;
      }
      case 12: {
        // someone else deletes our node; the watch on it (or the getData setting it) tells at once
        if (node_gone || d.ended || !d.connected) break;  // (events come while connected)
        node_gone = true;
        auto st = d.fsm.status();
        int losts = d.losts;
        d.apply(d.fsm.on_node_deleted());
        if ((st == lock_status::held || st == lock_status::maybe_lost) &&
            (d.losts != losts + 1 || lock_lost_cause(d.lost_error) != lost_cause::node_deleted))
          return "a holder not lost (node_deleted) at its node's deletion";
        if (st == lock_status::released && d.losts != losts) return "a released hold reported lost";
        break;
      }
    }
    if (!d.violation.empty()) return d.violation;
    if (d.sends > sends_before && !(d.connected && !d.ended)) return "a release sent while the connection is down";
    if (d.keepalives > keepalives_before + 1) return "two keepalives in one step";
    if (d.losts > 1) return "the loss reported twice";
    if (d.completions > expected_completions) return "a release answered twice";
    if (d.failures > 1) return "a refused delete reported twice";
    if (d.failures != (d.fsm.release_failure() ? 1 : 0)) return "a refused delete not kept for the guard";
    auto st = d.fsm.status();
    if ((st == lock_status::held || st == lock_status::maybe_lost) && !d.ended) {
      if (d.valid_until() <= d.now) return "owns the lock past its validity deadline";
      if (!d.timer) return "owns the lock with no timer armed";
      for (auto& [id, lead] : d.deadline_waiters)
        if (d.valid_until() - lead <= d.now) return "a deadline waiter not answered at its lead";
    }
  }
  // settle: connection back, replies answered, retries due
  if (!d.ended) {
    d.connected = true;
    d.apply(d.fsm.on_connected(true));
    while (d.in_flight || d.backoff_pending) {
      if (d.in_flight) d.reply(node_gone ? error_code(zk_errc::no_node) : error_code{});
      d.backoff_due();
    }
    // a node left behind is either deleted or reported (the server refused it for good)
    if ((released || d.fsm.status() == lock_status::lost) && !d.fsm.finished() && !d.fsm.release_failure())
      return "released or lost, the session alive, and the node neither deleted nor reported";
    // with no reply any more, time runs out: a hold that still owns is lost at its deadline
    auto st = d.fsm.status();
    if (st == lock_status::held || st == lock_status::maybe_lost) {
      for (int i = 0; i < 10 && d.losts == 0; ++i) d.advance(1000ms);
      if (d.losts != 1) return "still owns the lock long after its deadline";
    }
  } else if (d.fsm.release_owed()) {
    return "a delete still owed by a session that ended";
  }
  if (!d.violation.empty()) return d.violation;
  if (d.completions != expected_completions)
    return std::to_string(expected_completions) + " waiting releases, " + std::to_string(d.completions) + " answers";
  return std::nullopt;
}

}  // namespace zklock::testing
