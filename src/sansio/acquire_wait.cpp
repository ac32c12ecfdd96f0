// Where an acquire waits (acquire_fsm.hpp, steps 2-4): a listing's evaluation (which blockers
// to watch, the nearest K of them), the watches' replies and events (ours, the blockers', the
// lease dir's), and what a blocker's deletion means: the grant (acquire_grant.cpp), a listing,
// or more waiting.
#include "sansio/acquire_fsm.hpp"
#include <zklock/path.hpp>

#include <algorithm>
#include <utility>

namespace zklock::detail {

std::string acquire_fsm::predecessor() const {
  if (!predecessor_.empty()) return predecessor_;
  auto w = watched_blockers();
  return w.empty() ? std::string() : w.back();
}

std::vector<std::string> acquire_fsm::watched_blockers() const {
  std::vector<std::string> r;
  for (const auto& [path, st] : blockers_)
    if (st == blocker_watch::setting || st == blocker_watch::set) r.push_back(path);
  std::sort(r.begin(), r.end(), [](const std::string& a, const std::string& b) {
    auto sa = lock_sequence(node_name(a)), sb = lock_sequence(node_name(b));
    return sa != sb ? sa < sb : a < b;
  });
  return r;
}

bool acquire_fsm::blocker_requests_pending() const {
  for (const auto& [path, st] : blockers_)
    if (st != blocker_watch::set) return true;
  return false;
}

acquire_fsm::actions acquire_fsm::remove_blocker_watches() {
  actions out;
  for (auto& [path, st] : blockers_)
    if (st == blocker_watch::set) {
      st = blocker_watch::removing;
      out.push_back({acquire_action::remove_watch, path});
    }
  return out;
}

acquire_fsm::actions acquire_fsm::evaluate(const std::vector<std::string>& children) {
  // Lock-delay: nodes ahead that this listing no longer shows went without our hearing it
  // (their watch spent on a data change): checked first, so that a grant below waits for it.
  actions out;
  if (lock_delay_.count() > 0 && phase_ == phase::acquiring) out = vanished_from(children);
  auto rest = evaluate_queue(children);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

acquire_fsm::actions acquire_fsm::evaluate_queue(const std::vector<std::string>& children) {
  unconfirmed_ = false;  // this listing says whether our node is there
  // Our node's deletion was heard while this listing was on its way: it may predate it.
  const bool own_gone = std::exchange(own_gone_, false);
  auto q = queue_order(children);
  if (node_.empty() && create_outcome_unknown_) {
    // Protected creation: our create may have succeeded before the connection dropped.
    for (const auto& c : children)
      if (c.starts_with(prefix_)) {
        node_ = join_path(dir_, c);
        czxid_ = 0;  // learnt by stat_node if we get the lock
        break;
      }
    create_outcome_unknown_ = false;
  }
  std::string_view mine = node_.empty() ? std::string_view{} : node_name(node_);
  std::ptrdiff_t idx = -1;
  for (std::size_t i = 0; i < q.size(); ++i)
    if (!mine.empty() && q[i].name == mine && !own_gone) idx = static_cast<std::ptrdiff_t>(i);

  if (phase_ == phase::cleaning) {
    if (idx < 0) node_gone_ = true;
    return finish_cleaning_if_idle();
  }
  if (idx < 0) return requeue();  // never created, or our node vanished: queue again
  // Writers seen downgraded count as readers (they stay in place, so writers still wait).
  for (auto& c : q)
    if (c.kind != lock_kind::read && std::find(downgraded_.begin(), downgraded_.end(), c.name) != downgraded_.end())
      c.kind = lock_kind::read;
  auto b = find_blockers(q, static_cast<std::size_t>(idx), kind_, max_leases_);
  if (!b) {
    if (watch_active_) {
      // Granted by a listing that set a watch (watch_dir): remove it. Its removal already on
      // its way (a grant on an earlier listing, then a requeue): the grant waits for its reply.
      if (in_flight_.contains(request::remove_watch) || resend_ == resend::remove_watch) {
        removal_ = removal_in_flight::grant_waits_for_reply;
        return {};
      }
      in_flight_.insert(request::remove_watch);
      actions out{{acquire_action::remove_watch, dir_}};
      if (czxid_ == 0 || grant_held_back()) {
        removal_ = removal_in_flight::grant_waits_for_reply;  // a grant that waits anyway (a stat, a lock-delay) waits for it too
        return out;
      }
      // The grant goes on at once, the removal ahead of it on the wire (see on_grant_check).
      removal_ = removal_in_flight::grant_went_ahead;
      auto g = acquired();
      out.insert(out.end(), g.begin(), g.end());
      return out;
    }
    if (!blockers_.empty()) {
      // watches left on nodes that no longer block us (a downgraded writer): removed first
      removal_ = removal_in_flight::grant_waits_for_reply;
      auto out = remove_blocker_watches();
      if (!out.empty() || blocker_requests_pending()) return out;
      removal_ = removal_in_flight::none;
    }
    return acquired();
  }
  if (mode_ != lock_mode::wait) return fail(errc::lock_busy);
  if (kind_ == lock_kind::lease) {
    actions out;
    // Lock-delay: each holder's owner session, read while we wait (off the handoff path).
    if (lock_delay_.count() > 0)
      for (auto i : all_blockers(q, static_cast<std::size_t>(idx), kind_, max_leases_)) {
        auto path = join_path(dir_, q[i].name);
        if (owners_.emplace(path, 0).second) out.push_back({acquire_action::read_owner, path});
      }
    // Any holder's release frees a lease: watch the dir (one waiter at a time does, behind
    // the semaphore's internal mutex, so no herd). A watch already set stays.
    if (watch_active_) return out;
    predecessor_ = dir_;  // what we watch (and remove the watch of)
    in_flight_.insert(request::watch);
    out.push_back({acquire_action::watch_dir, dir_});
    return out;
  }
  // Watch the nearest K blockers (those not watched yet); our own node too when its watch was
  // lost (with the connection) or never set (a node found by its id).
  actions out;
  if (own_ == own_watch::none) out = watch_own();
  // A reader blocked by the head writer, whose downgrade mark is listed: check the mark.
  if (kind_ == lock_kind::read && q[0].kind == lock_kind::write && !in_flight_.contains(request::check_downgrade) &&
      std::find(children.begin(), children.end(), downgrade_mark_name(q[0].name)) != children.end()) {
    in_flight_.insert(request::check_downgrade);
    out.push_back({acquire_action::check_downgrade, join_path(dir_, q[0].name)});
  }
  auto all = all_blockers(q, static_cast<std::size_t>(idx), kind_, max_leases_);
  // Lock-delay: every blocker counts, watched or not. One that a later listing lacks went
  // unheard and is judged then (vanished_from): by its Stat's owner if we watched it, else by
  // the session its name claims.
  if (lock_delay_.count() > 0)
    for (auto i : all) owners_.emplace(join_path(dir_, q[i].name), 0);
  std::size_t first = all.size() > static_cast<std::size_t>(max_watched_) ? all.size() - max_watched_ : 0;
  for (std::size_t i = first; i < all.size(); ++i) {
    auto path = join_path(dir_, q[all[i]].name);
    if (!blockers_.emplace(path, blocker_watch::setting).second) continue;
    acquire_action a{acquire_action::watch_blocker, path};
    a.nearest = i + 1 == all.size();
    out.push_back(std::move(a));
  }
  // More blockers than K: the listing may be the view's window (K + 1 blockers: the queue is
  // deeper than it shows), so they are never all watched, even when watches of ours from before
  // a requeue (our node deleted, queued again) are still on some beyond the nearest K.
  all_watched_ = all.size() <= static_cast<std::size_t>(max_watched_);
  for (auto i : all)
    if (!blockers_.count(join_path(dir_, q[i].name))) all_watched_ = false;
  return out;
}

acquire_fsm::actions acquire_fsm::after_blocker_gone() {
  if (phase_ != phase::acquiring) return finish_cleaning_if_idle();
  bool watching = false;
  for (const auto& [path, st] : blockers_)
    if (st == blocker_watch::setting || st == blocker_watch::set) watching = true;
  if (watching) {
    // Blockers of the latest listing not watched (a queue deeper than K): the window moves up
    // now, while the watched ones still stand between us and the lock.
    if (!all_watched_) return move_window();
    return {};
  }
  if (blocker_requests_pending()) return {};  // a removal on its way decides (after_watch_removed)
  // Not while a listing is on its way (it decides), nor after a reconnect (unconfirmed_).
  if (unconfirmed_ || in_flight_.contains(request::list) || in_flight_.contains(request::watch)) return list_again();
  // Blockers of the latest listing we do not watch may still be there: the view says.
  if (!all_watched_) return move_window();
  // The last blocker of the latest listing went: nobody blocks us (none can get ahead of us).
  // A grant with no request stands on our node's watch: set, our node's deletion would have
  // been heard before this event. Being set again (a write spent it), our node may be gone
  // already: one exists, behind the watch's request, decides (on_stat).
  if (watch_own_node_ && own_ != own_watch::set) return confirm_own_node();
  return acquired();
}

acquire_fsm::actions acquire_fsm::move_window() {
  // A listing on its way decides; after a reconnect only a listing confirms our node.
  if (in_flight_.contains(request::list) || in_flight_.contains(request::watch)) return {};
  if (unconfirmed_ || node_.empty()) return list_again();
  return {{acquire_action::ask_view, node_}};
}

acquire_fsm::actions acquire_fsm::on_view(const view_blockers& v) {
  // (an answer that a listing, a reconnect or the end overtook: they decide)
  if (phase_ != phase::acquiring || unconfirmed_ || in_flight_.contains(request::list) ||
      in_flight_.contains(request::watch))
    return {};
  // The view hears only our own watches: what lies beyond our window is better listed.
  if (v.alone) return list_again();
  actions out;
  // Lock-delay: blockers of our listings that the view no longer has went unheard by us (a
  // watched one's own event or reply still comes): judged as a later listing's absence is.
  if (lock_delay_.count() > 0) {
    const auto floor = v.more && !v.names.empty() ? lock_sequence(v.names.front()).value_or(0) : -1;
    std::vector<std::string> gone;
    for (const auto& [path, owner] : owners_) {
      auto name = node_name(path);
      if (blockers_.count(path) || lock_sequence(name).value_or(-1) <= floor ||
          std::find(v.names.begin(), v.names.end(), name) != v.names.end() ||
          std::find(downgraded_.begin(), downgraded_.end(), name) != downgraded_.end())
        continue;
      gone.push_back(path);
    }
    for (const auto& path : gone) {
      auto more = blocker_vanished(path);
      out.insert(out.end(), more.begin(), more.end());
    }
  }
  for (std::size_t i = 0; i < v.names.size(); ++i) {
    auto path = join_path(dir_, v.names[i]);
    if (lock_delay_.count() > 0) owners_.emplace(path, 0);
    if (!blockers_.emplace(path, blocker_watch::setting).second) continue;
    acquire_action a{acquire_action::watch_blocker, path};
    a.nearest = i + 1 == v.names.size();
    out.push_back(std::move(a));
  }
  all_watched_ = !v.more;
  // A reader whose window reached the head writer: its downgrade (a mark no listing of ours may
  // have shown yet) is checked once, two exists behind the watch (step 5).
  if (kind_ == lock_kind::read && !v.head.empty() && v.head != head_checked_ &&
      std::find(v.names.begin(), v.names.end(), v.head) != v.names.end() &&
      !in_flight_.contains(request::check_downgrade)) {
    head_checked_ = v.head;
    in_flight_.insert(request::check_downgrade);
    out.push_back({acquire_action::check_downgrade, join_path(dir_, v.head)});
  }
  if (v.names.empty()) {
    // Nothing of the listing left in the view: watched ones still going decide, else the grant.
    auto rest = after_blocker_gone();
    out.insert(out.end(), rest.begin(), rest.end());
  }
  return out;
}

acquire_fsm::actions acquire_fsm::on_dir_watch_set(error_code ec, const std::vector<std::string>& children) {
  if (phase_ == phase::done || !in_flight_.take(request::watch)) return {};
  if (!ec) watch_active_ = true;
  if (phase_ == phase::cleaning) {
    if (!ec) {
      in_flight_.insert(request::remove_watch);
      return {{acquire_action::remove_watch, dir_}};
    }
    return finish_cleaning_if_idle();
  }
  if (!ec) return evaluate(children);
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);
  if (ec == zk_errc::no_node) return create_and_list();  // the dir went, and our node with it
  return fail(failure(ec));
}

acquire_fsm::actions acquire_fsm::on_watch_set(const std::string& path, error_code ec, std::int64_t owner) {
  auto it = blockers_.find(path);
  if (phase_ == phase::done || it == blockers_.end() || it->second != blocker_watch::setting) return {};
  if (!ec && lock_delay_.count() > 0) owners_[path] = owner;
  if (!ec && (phase_ != phase::acquiring || removal_ == removal_in_flight::grant_waits_for_reply)) {
    // stopping, or granted meanwhile: the watch just set goes again
    it->second = blocker_watch::removing;
    return {{acquire_action::remove_watch, path}};
  }
  if (!ec) {
    it->second = blocker_watch::set;
    if (kind_ == lock_kind::read &&
        std::find(downgraded_.begin(), downgraded_.end(), node_name(path)) != downgraded_.end()) {
      // Proven downgraded while its watch was being set (on_downgrade_checked): not our
      // blocker any more. Remove the watch (nothing left behind), then look again.
      it->second = blocker_watch::removing;
      return {{acquire_action::remove_watch, path}};
    }
    return {};
  }
  blockers_.erase(it);  // (getData sets no watch on a missing node, nor when it fails)
  if (ec != zk_errc::no_node) all_watched_ = false;  // still there, unwatched
  if (phase_ != phase::acquiring) return after_watch_removed();
  if (ec == zk_errc::no_node) {  // gone before we could watch it
    auto out = blocker_vanished(path);
    auto rest = after_blocker_gone();
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);
  return fail(failure(ec));
}

acquire_fsm::actions acquire_fsm::on_own_watch_set(error_code ec) {
  if (phase_ == phase::done || own_ != own_watch::setting) return {};
  own_ = own_watch::none;
  if (!ec) {
    own_ = own_watch::set;
    return {};
  }
  if (ec == zk_errc::no_node) return own_node_gone();
  // Lost with the connection: set again after the reconnect (on_reconnected), and meanwhile no
  // grant without a listing (unconfirmed_).
  if (is_connection_loss(ec) || phase_ != phase::acquiring) return {};
  return fail(failure(ec));
}

acquire_fsm::actions acquire_fsm::on_watch_event(const std::string& path, watch_change what) {
  if (phase_ == phase::done) return {};
  if (!node_.empty() && path == node_) {
    if (own_ == own_watch::none) return {};
    own_ = own_watch::none;  // the watch fired: it is spent
    if (what == watch_change::deleted) return own_node_gone();
    // written to (a Revoker's "__REVOKE__", an operator's set): still ours, watch it again
    if (phase_ == phase::acquiring || phase_ == phase::granting) return watch_own();
    return {};
  }
  if (watch_active_ && path == predecessor_) {
    watch_active_ = false;
    if (phase_ == phase::cleaning) return finish_cleaning_if_idle();
    // being removed: its reply follows
    if (in_flight_.contains(request::remove_watch)) return {};
    // a listing on its way decides (and watches again while blocked)
    if (in_flight_.contains(request::list)) return {};
    // a lease came or went: look again (and watch again)
    in_flight_.insert(request::watch);
    return {{acquire_action::watch_dir, dir_}};
  }
  auto it = blockers_.find(path);
  if (it == blockers_.end()) return {};
  if (it->second == blocker_watch::removing) return {};  // the removal's reply follows
  blockers_.erase(it);
  if (phase_ != phase::acquiring) return after_watch_removed();
  // Never a grant: the event does not say who wrote (a release of a zklock 2 holder, a
  // Revoker's "__REVOKE__", an operator's set, a writer's downgrade), nor what a child under a
  // blocker (a child watch's; no lock node has one) means. List again: one round trip that
  // decides everything (evaluate watches the blocker again while it is there).
  if (what != watch_change::deleted) {
    all_watched_ = false;  // still there, its watch spent
    return list_again();
  }
  auto out = blocker_vanished(path);
  auto rest = after_blocker_gone();
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace zklock::detail
