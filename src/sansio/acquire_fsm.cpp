#include "sansio/acquire_fsm.hpp"
#include "sansio/session_end.hpp"
#include <zklock/path.hpp>

#include <algorithm>
#include <cstdio>
#include <utility>


namespace zklock::detail {

namespace {
bool is_connection_loss(const error_code& ec) { return ec == condition::connection_lost; }
// A request failed because the session is over: complete with how it ended (session_end.hpp).
error_code failure(const error_code& ec) { return ec == condition::session_lost ? session_end_error(ec) : ec; }
}  // namespace

acquire_fsm::actions acquire_fsm::list_dir() {
  in_flight_.insert(request::list);
  // A lost create may have reached another server of the ensemble than the one we reconnected
  // to; sync first, so a lagging follower cannot hide it (we would queue a second node behind
  // our own first one).
  return {{create_outcome_unknown_ ? acquire_action::sync_and_list : acquire_action::list, dir_}};
}

namespace {
const char* marker_of(lock_kind k) {
  switch (k) {
    case lock_kind::read: return "-__READ__";
    case lock_kind::write: return "-__WRIT__";
    case lock_kind::lease: return "-lease-";
    case lock_kind::candidate: return "-latch-";
    default: return "-lock-";
  }
}
}  // namespace

acquire_fsm::acquire_fsm(std::string dir, std::string client_id, lock_mode mode, lock_kind kind, int max_leases,
                   int max_watched)
    : dir_(std::move(dir)),
      prefix_("_c_" + client_id + marker_of(kind)),
      create_path_(join_path(dir_, prefix_)),
      mode_(mode),
      kind_(kind),
      max_leases_(max_leases),
      max_watched_(std::max(1, max_watched)) {}

std::string lock_delay_beacon(std::string_view lock_dir, std::int64_t session) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(session));
  return join_path(join_path(parent_path(std::string(lock_dir)), "__zklock_sessions__"), id);
}

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

std::string_view acquire_fsm::node_data() const noexcept {
  return kind_ == lock_kind::exclusive ? contender_marker : shared_marker;
}

acquire_fsm::actions acquire_fsm::start() {
  phase_ = phase::acquiring;
  // Lock-delay: our beacon exists before our node, so that our release is told from our end.
  actions out;
  if (lock_delay_.count() > 0) out.push_back({acquire_action::create_beacon, {}});
  if (mode_ == lock_mode::try_once) {
    // Look before writing: when a blocker is already there, give up on this read alone.
    probing_ = true;
    in_flight_.insert(request::list);
    out.push_back({acquire_action::list, dir_});
    return out;
  }
  auto c = create_and_list();
  out.insert(out.end(), c.begin(), c.end());
  return out;
}

acquire_fsm::actions acquire_fsm::create_and_list() {
  in_flight_.insert(request::create);
  in_flight_.insert(request::list);
  create_outcome_unknown_ = false;
  node_.clear();
  czxid_ = 0;
  own_ = own_watch::none;  // (a reply or an event of an older node of ours is ignored)
  own_gone_ = false;
  all_watched_ = false;  // blockers still watched are ahead of the new node too: they stay
  grant_waiting_ = false;  // (a lock-delay running still holds the new node's grant back)
  return {{acquire_action::create_and_list, create_path_}};
}

acquire_fsm::actions acquire_fsm::watch_own() {
  if (!watch_own_node_) return {};  // (set_watch_own_node: own_ stays none)
  own_ = own_watch::setting;
  return {{acquire_action::watch_own, node_}};
}

acquire_fsm::actions acquire_fsm::list_again() {
  // one listing at a time: a second would be taken for the first's reply
  if (in_flight_.contains(request::list) || in_flight_.contains(request::watch)) return {};
  in_flight_.insert(request::list);
  return {{acquire_action::list, dir_}};
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

acquire_fsm::actions acquire_fsm::own_node_gone() {
  if (phase_ == phase::cleaning) {
    node_gone_ = true;  // nothing left to delete
    return finish_cleaning_if_idle();
  }
  if (phase_ != phase::acquiring && phase_ != phase::granting) return {};
  // Deleted by someone else (an operator, a cleanup script, a reaper): no grant on this node.
  actions out{{acquire_action::requeued, node_}};
  phase_ = phase::acquiring;
  // replies about the old node are of no use now
  in_flight_.erase(request::stat);
  in_flight_.erase(request::refresh);
  drop_waiting_grant();
  grant_waiting_ = false;  // (a lock-delay running still holds the new node's grant back)
  if (in_flight_.contains(request::list) || in_flight_.contains(request::watch)) {
    // A listing on its way may predate the deletion: it decides (as not showing our node), and
    // no second listing may be sent meanwhile.
    own_gone_ = true;
    all_watched_ = false;
    return out;
  }
  auto next = requeue();
  out.insert(out.end(), next.begin(), next.end());
  return out;
}

acquire_fsm::actions acquire_fsm::requeue() {
  drop_waiting_grant();
  return create_and_list();
}

void acquire_fsm::drop_waiting_grant() noexcept {
  // A grant decided for the old node (waiting behind a watch removal that a lost connection
  // delayed) is void: the new node waits its own turn. (A grant gone ahead of the lease dir's
  // removal stays so: the removal is still on its way.)
  if (removal_ == removal_in_flight::grant_waits_for_reply) removal_ = removal_in_flight::none;
}

acquire_fsm::actions acquire_fsm::after_connection_loss(resend what) {
  resend_ = what;
  return {{acquire_action::wait_reconnect, {}}};
}

acquire_fsm::actions acquire_fsm::on_create(error_code ec, const std::string& created_path, std::int64_t czxid) {
  if (phase_ == phase::done || !in_flight_.take(request::create)) return {};
  if (!ec) {
    node_ = created_path;
    czxid_ = czxid;
    if (phase_ == phase::cleaning) {
      in_flight_.erase(request::list);  // its reply is of no use now
      return finish_cleaning_if_idle();
    }
    // The pipelined listing follows; our node is watched from now on (behind the listing,
    // ahead of any blocker's watch: its deletion is heard before theirs).
    return watch_own();
  }
  in_flight_.erase(request::list);  // the pipelined listing fails the same way; ignore its reply
  if (is_connection_loss(ec)) {
    create_outcome_unknown_ = true;  // find our node by its id after the reconnect
    return after_connection_loss(resend::list);
  }
  if (phase_ == phase::cleaning) {
    node_gone_ = true;
    return finish_cleaning_if_idle();
  }
  if (ec == zk_errc::no_node && parent_attempts_ < 5) {
    ++parent_attempts_;
    return {{acquire_action::ensure_parents, dir_}};
  }
  return fail(failure(ec));
}

acquire_fsm::actions acquire_fsm::on_parents(error_code ec) {
  if (phase_ == phase::done) return {};
  if (phase_ == phase::cleaning) {
    node_gone_ = true;
    return finish_cleaning_if_idle();
  }
  if (!ec || ec == zk_errc::node_exists) return create_and_list();
  if (is_connection_loss(ec)) return after_connection_loss(resend::create);
  return fail(ec);
}

acquire_fsm::actions acquire_fsm::on_children(error_code ec, const std::vector<std::string>& children) {
  if (phase_ == phase::done || !in_flight_.take(request::list)) return {};
  if (probing_) {
    if (phase_ == phase::cleaning) return finish_cleaning_if_idle();
    if (is_connection_loss(ec)) return after_connection_loss(resend::list);
    if (ec && ec != zk_errc::no_node) return fail(failure(ec));
    if (!ec) {
      switch (probe(children, kind_, max_leases_)) {
        case probe_result::busy: return busy();
        case probe_result::check_head_mark:
          in_flight_.insert(request::check_downgrade);
          return {{acquire_action::check_downgrade, join_path(dir_, queue_order(children)[0].name)}};
        case probe_result::looks_free: break;
      }
    }
    probing_ = false;
    return create_and_list();  // looks free (or no dir yet): the create-and-list decides
  }
  if (!ec) return evaluate(children);
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);
  if (ec == zk_errc::no_node) {
    // the lock dir is gone, so is any node of ours in it
    node_.clear();
    create_outcome_unknown_ = false;
    if (phase_ == phase::cleaning) {
      node_gone_ = true;
      return finish_cleaning_if_idle();
    }
    return create_and_list();
  }
  return fail(failure(ec));
}

probe_result acquire_fsm::probe(const std::vector<std::string>& children, lock_kind kind, int max_leases) {
  auto q = queue_order(children);
  q.push_back({{}, 0, kind});  // where our node would go: behind everyone
  auto b = find_blockers(q, q.size() - 1, kind, max_leases);
  if (!b) return probe_result::looks_free;
  // A reader's one blocker at the head may be a writer that downgraded (it holds the read
  // side; a blocking read would be granted beside it): with its mark listed, check the mark
  // first. Only the head can be one: a writer holds (and may downgrade) with nobody ahead of
  // it, and none can get ahead later; a second writer ahead of us waits, so it blocks us.
  if (kind == lock_kind::read && b->count == 1 && b->nearest == 0 &&
      std::find(children.begin(), children.end(), downgrade_mark_name(q[0].name)) != children.end())
    return probe_result::check_head_mark;
  return probe_result::busy;
}

acquire_fsm::actions acquire_fsm::busy() {
  phase_ = phase::done;
  result_ = {errc::lock_busy, {}, 0};
  return {{acquire_action::complete, {}}};
}

acquire_fsm::actions acquire_fsm::on_downgrade_checked(const std::string& writer, error_code ec, std::int64_t writer_owner,
                                                 std::int64_t mark_owner) {
  if (phase_ == phase::done || !in_flight_.take(request::check_downgrade)) return {};
  if (phase_ == phase::cleaning) return finish_cleaning_if_idle();
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);  // look again
  if (ec) return fail(failure(ec));
  // Proven: evaluate counts it as a reader from now on. A mark of another session's (or none
  // left) proves nothing: the writer still blocks.
  const bool proven = downgrade_proven(writer_owner, mark_owner);
  if (proven) downgraded_.emplace_back(node_name(writer));
  if (probing_) {
    if (!proven && writer_owner != 0) return busy();
    // Downgraded, or gone: the create-and-list decides, as for a dir that looks free.
    probing_ = false;
    return create_and_list();
  }
  if (!proven || phase_ != phase::acquiring) return {};
  auto it = blockers_.find(writer);
  if (it == blockers_.end()) return list_again();  // not watched now: look again
  if (it->second != blocker_watch::set) return {};  // its watch's reply decides (on_watch_set)
  // Not our blocker any more: remove its watch (nothing left behind), then look again.
  it->second = blocker_watch::removing;
  return {{acquire_action::remove_watch, writer}};
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
  all_watched_ = true;
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
    if (!all_watched_) return list_again();
    return {};
  }
  if (blocker_requests_pending()) return {};  // a removal on its way decides (after_watch_removed)
  // The last blocker of the latest listing went: nobody blocks us (none can get ahead of us).
  // Not while a listing is on its way (it decides), nor after a reconnect (unconfirmed_).
  if (all_watched_ && !unconfirmed_ && !in_flight_.contains(request::list) && !in_flight_.contains(request::watch)) {
    // A grant with no request stands on our node's watch: set, our node's deletion would have
    // been heard before this event. Being set again (a write spent it), our node may be gone
    // already: one exists, behind the watch's request, decides (on_stat).
    if (watch_own_node_ && own_ != own_watch::set) return confirm_own_node();
    return acquired();
  }
  return list_again();
}

acquire_fsm::actions acquire_fsm::confirm_own_node() {
  in_flight_.insert(request::stat);
  return {{acquire_action::stat_node, node_}};
}

acquire_fsm::actions acquire_fsm::acquired() {
  if (grant_held_back()) {
    // Lock-delay: a vanished node's session is being checked, or the delay runs; nothing can
    // get ahead of our node meanwhile (its watch still tells us if it goes).
    grant_waiting_ = true;
    return {};
  }
  if (czxid_ == 0) {
    in_flight_.insert(request::stat);
    return {{acquire_action::stat_node, node_}};
  }
  phase_ = phase::granting;
  return {{acquire_action::check_grant, node_}};
}

acquire_fsm::actions acquire_fsm::on_grant_check(const grant_view& v) {
  if (phase_ != phase::granting || in_flight_.contains(request::refresh)) return {};
  error_code over = v.session_over;
  if (!over && refresh_ == refresh::found_session_over) over = errc::session_expired;
  if (over) {
    // Our node went with that session, and someone else may hold: no grant.
    phase_ = phase::done;
    result_ = {over, {}, 0};
    return {{acquire_action::complete, {}}};
  }
  if (removal_ == removal_in_flight::grant_went_ahead && (!v.connected || resend_ == resend::remove_watch)) {
    // The lease dir's removal may be lost with the connection (the C client then sets the
    // watch again): the grant waits for its reply after all, sent again after the reconnect.
    removal_ = removal_in_flight::grant_waits_for_reply;
    phase_ = phase::acquiring;
    return {};
  }
  if (refresh_ == refresh::not_sent && v.contact_stale && v.connected) {
    refresh_ = refresh::sent;
    in_flight_.insert(request::refresh);
    return {{acquire_action::refresh_contact, node_}};
  }
  phase_ = phase::done;
  result_ = {{}, node_, czxid_};
  return {{acquire_action::complete, {}}};
}

acquire_fsm::actions acquire_fsm::on_refreshed(error_code ec, bool node_exists) {
  if (phase_ != phase::granting || !in_flight_.take(request::refresh)) return {};
  // The session ended meanwhile: no grant. Our node gone: no grant on it, queue again.
  // Otherwise (the connection lost) the hold's own checks take over (its deadline, its node
  // check).
  if (ec == condition::session_lost) refresh_ = refresh::found_session_over;
  else if (!ec && !node_exists) return own_node_gone();
  return {{acquire_action::check_grant, node_}};
}

acquire_fsm::actions acquire_fsm::on_timeout(bool connected) {
  return cancel(connected ? error_code(errc::lock_timeout) : error_code(errc::connection_unavailable), stop_kind::at_once,
                connected);
}

acquire_fsm::actions acquire_fsm::on_suspended() {
  if (mode_ == lock_mode::wait) return {};
  return cancel(errc::connection_unavailable, stop_kind::at_once, false);
}

acquire_fsm::actions acquire_fsm::on_stat(error_code ec, std::int64_t czxid, bool ours) {
  if (phase_ == phase::done || !in_flight_.take(request::stat)) return {};
  if (phase_ == phase::cleaning) return finish_cleaning_if_idle();
  if (!ec && !ours) {
    // Not our session's node (the session was replaced): never adopt it.
    node_.clear();
    return fail(errc::session_expired);
  }
  if (!ec) {
    czxid_ = czxid;
    return acquired();
  }
  if (ec == zk_errc::no_node) return requeue();
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);
  return fail(failure(ec));
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

acquire_fsm::actions acquire_fsm::blocker_vanished(const std::string& path) {
  if (lock_delay_.count() <= 0 || phase_ != phase::acquiring) return {};
  auto it = owners_.find(path);
  std::int64_t owner = it == owners_.end() ? 0 : it->second;
  if (it != owners_.end()) owners_.erase(it);
  // Gone before we read its Stat: the session its name claims (only its creator names it).
  if (owner == 0) owner = claimed_session(node_name(path));
  if (owner == 0) {
    // Its owner unknown (a node of a peer without the option): it may have ended. Safe side.
    auto out = delay_grant();
    out.front().path = path;
    return out;
  }
  ++checks_pending_;
  acquire_action a{acquire_action::check_session, lock_delay_beacon(dir_, owner)};
  a.owner = owner;
  return {a};
}

acquire_fsm::actions acquire_fsm::vanished_from(const std::vector<std::string>& children) {
  actions out;
  std::vector<std::string> gone;
  for (const auto& [path, owner] : owners_)
    if (std::find(children.begin(), children.end(), node_name(path)) == children.end()) gone.push_back(path);
  for (const auto& path : gone) {
    // a lease holder whose Stat is still on its way: on_owner decides
    if (kind_ == lock_kind::lease && owners_[path] == 0) continue;
    auto more = blocker_vanished(path);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

acquire_fsm::actions acquire_fsm::delay_grant() {
  delay_running_ = true;
  acquire_action a{acquire_action::start_lock_delay, {}};
  a.delay = lock_delay_;
  return {a};
}

acquire_fsm::actions acquire_fsm::on_owner(const std::string& path, error_code ec, std::int64_t owner) {
  auto it = owners_.find(path);
  if (phase_ != phase::acquiring || it == owners_.end() || it->second != 0) return {};
  if (!ec && owner != 0) {
    it->second = owner;
    return {};
  }
  // Gone before we learnt whose it was (or the read failed): as any vanished node.
  return blocker_vanished(path);
}

std::string lock_delay_client_id(std::string client_id, std::int64_t session) {
  char id[18];
  std::snprintf(id, sizeof id, ".%016llx", static_cast<unsigned long long>(session));
  return client_id + id;
}

std::int64_t claimed_session(std::string_view name) {
  // "_c_<uuid>.<16 hex>-<marker><seq>": the 16 hex digits between the first '.' and a '-'
  auto dot = name.find('.');
  if (dot == std::string_view::npos || name.size() < dot + 18 || name[dot + 17] != '-') return 0;
  std::uint64_t v = 0;
  for (char c : name.substr(dot + 1, 16)) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  return static_cast<std::int64_t>(v);
}

acquire_fsm::actions acquire_fsm::on_session_checked(std::int64_t owner, error_code ec, std::int64_t beacon_owner) {
  if (phase_ == phase::done || checks_pending_ == 0) return {};
  --checks_pending_;
  if (phase_ != phase::acquiring) return {};
  actions out;
  // Only a node that session owns proves it outlived the deletion (a release); anything else
  // (no beacon, another owner, the check lost) counts as its end.
  if (ec || owner == 0 || beacon_owner != owner) out = delay_grant();
  if (grant_waiting_ && !grant_held_back()) {
    grant_waiting_ = false;
    auto g = acquired();
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

acquire_fsm::actions acquire_fsm::on_lock_delay_due() {
  if (phase_ == phase::done || !delay_running_) return {};
  delay_running_ = false;
  if (phase_ != phase::acquiring || !grant_waiting_ || grant_held_back()) return {};
  grant_waiting_ = false;
  return acquired();
}

acquire_fsm::actions acquire_fsm::on_watch_removed(const std::string& path, error_code ec) {
  if (path == predecessor_ && in_flight_.contains(request::remove_watch)) {
    in_flight_.erase(request::remove_watch);
    // Lost with the connection: the C client keeps the watcher and sets it again on the
    // reconnect, so remove it then. Otherwise (ok, no_watcher when it fired meanwhile, the
    // session gone) it is gone.
    // The grant did not wait for it: once granted (or granting), the removal's reply changes
    // nothing here (one lost after the completion: the runner sends it again on the reconnect).
    const bool went_ahead = removal_ == removal_in_flight::grant_went_ahead;
    if (went_ahead && phase_ == phase::done) return {};
    if (is_connection_loss(ec)) return after_connection_loss(resend::remove_watch);
    watch_active_ = false;
    if (went_ahead) {
      removal_ = removal_in_flight::none;
      if (phase_ == phase::granting) return {};
    }
    return after_watch_removed();
  }
  auto it = blockers_.find(path);
  if (it == blockers_.end() || it->second != blocker_watch::removing) return {};
  if (is_connection_loss(ec)) {
    it->second = blocker_watch::remove_lost;  // sent again after the reconnect
    return {{acquire_action::wait_reconnect, {}}};
  }
  blockers_.erase(it);
  return after_watch_removed();
}

acquire_fsm::actions acquire_fsm::after_watch_removed() {
  if (phase_ != phase::acquiring) return finish_cleaning_if_idle();
  if (blocker_requests_pending() || in_flight_.contains(request::remove_watch)) return {};
  if (removal_ == removal_in_flight::grant_waits_for_reply) {
    removal_ = removal_in_flight::none;
    // Not while a listing is on its way, nor after a reconnect (unconfirmed_: is our node still
    // there?): a listing decides.
    if (blockers_.empty() && !watch_active_ && !unconfirmed_ && !in_flight_.contains(request::list))
      return acquired();
  }
  // removed while acquiring: a reader's blocker downgraded (see on_watch_set); look again
  return list_again();
}

acquire_fsm::actions acquire_fsm::on_deleted(error_code ec) {
  if (!in_flight_.take(request::delete_node)) return {};
  if (is_connection_loss(ec)) return after_connection_loss(resend::delete_node);
  if (!ec || ec == zk_errc::no_node || ec == condition::session_lost) {
    node_gone_ = true;  // deleted, or the session is gone (ephemeral with it)
    return finish_cleaning_if_idle();
  }
  // Refused. For now (the server throttles; the C client failed locally): the node is still
  // ours to delete, send it again after a growing delay, as hold_fsm does for a release.
  if ((ec == zk_errc::throttled_op || ec == zk_errc::system_error) && delete_backoffs_ < max_delete_backoffs) {
    acquire_action a{acquire_action::backoff_delete, node_};
    a.ec = ec;
    a.delay = std::chrono::milliseconds(100 << delete_backoffs_);
    ++delete_backoffs_;
    in_flight_.insert(request::delete_delay);
    return {a};
  }
  // For good (no_auth: the lock dir's ACL lacks DELETE; or the backoffs ran out): our node
  // blocks the lock until the session ends. Never silent: the runner logs it.
  node_gone_ = true;  // nothing more we can do for it
  actions out{{acquire_action::report_cleanup_failed, node_, ec}};
  auto rest = finish_cleaning_if_idle();
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

acquire_fsm::actions acquire_fsm::on_backoff_due() {
  if (phase_ == phase::done || !in_flight_.take(request::delete_delay)) return {};
  in_flight_.insert(request::delete_node);
  return {{acquire_action::delete_node, node_}};  // while disconnected it fails, and waits for the reconnect
}

acquire_fsm::actions acquire_fsm::on_reconnected() {
  if (phase_ == phase::done) return {};
  actions out;
  // blocker watch removals lost with the connection: the C client set the watches again
  for (auto& [path, st] : blockers_)
    if (st == blocker_watch::remove_lost) {
      st = blocker_watch::removing;
      out.push_back({acquire_action::remove_watch, path});
    }
  // our node's watch lost with the connection (its request failed): set it again
  if ((phase_ == phase::acquiring || phase_ == phase::granting) && !node_.empty() && own_ == own_watch::none &&
      !own_gone_ && resend_ != resend::create) {
    auto w = watch_own();
    out.insert(out.end(), w.begin(), w.end());
  }
  resend r = resend_;
  resend_ = resend::none;
  auto add = [&out](actions more) {
    out.insert(out.end(), more.begin(), more.end());
    return out;
  };
  switch (r) {
    case resend::none:
      if (phase_ == phase::acquiring && (watch_active_ || !blockers_.empty())) unconfirmed_ = true;  // see unconfirmed_
      return out;
    case resend::create:
      if (phase_ == phase::cleaning) return add(finish_cleaning_if_idle());
      return add(create_and_list());
    case resend::list:
      if (phase_ == phase::acquiring && !blockers_.empty()) unconfirmed_ = true;
      if (phase_ == phase::cleaning && !node_.empty() && !create_outcome_unknown_) return add(finish_cleaning_if_idle());
      if (in_flight_.contains(request::list)) return out;
      return add(list_dir());
    case resend::remove_watch:
      if (!watch_active_) return add(after_watch_removed());
      in_flight_.insert(request::remove_watch);
      out.push_back({acquire_action::remove_watch, predecessor_});
      return out;
    case resend::delete_node:
      in_flight_.insert(request::delete_node);
      out.push_back({acquire_action::delete_node, node_});
      return out;
  }
  return out;
}

acquire_fsm::actions acquire_fsm::on_expired(error_code why) {
  if (phase_ == phase::done) return {};
  // Our ephemeral node and our watch died with the session.
  error_code ec = phase_ == phase::cleaning ? reason_ : why;
  phase_ = phase::done;
  in_flight_.clear();
  watch_active_ = false;
  blockers_.clear();
  own_ = own_watch::none;
  resend_ = resend::none;
  checks_pending_ = 0;
  delay_running_ = false;
  grant_waiting_ = false;
  result_ = {ec, {}, 0};
  return {{acquire_action::complete, {}}};
}

acquire_fsm::actions acquire_fsm::cancel(error_code reason, stop_kind kind, bool connected) {
  actions out;
  if (phase_ == phase::idle) {
    phase_ = phase::done;
    result_.ec = reason;
    return {{acquire_action::complete, {}}};
  }
  if (phase_ == phase::acquiring) {
    phase_ = phase::cleaning;
    reason_ = reason;
    if (watch_active_ && !in_flight_.contains(request::remove_watch)) {
      in_flight_.insert(request::remove_watch);
      out.push_back({acquire_action::remove_watch, predecessor_});
    }
    auto removals = remove_blocker_watches();
    out.insert(out.end(), removals.begin(), removals.end());
    // (our node's watch goes with our node: the cleanup's delete fires it)
    out = finish_cleaning(std::move(out));
  }
  // While disconnected the cleanup waits for the reconnect (or the expiry, which removes our
  // node and watch): a stop that may answer at once does, and the cleanup finishes behind.
  if (phase_ == phase::cleaning && kind == stop_kind::at_once && !connected && !answered_early_) {
    answered_early_ = true;
    out.push_back({acquire_action::answer_early, {}, reason});
  }
  return out;
}

acquire_fsm::actions acquire_fsm::finish_cleaning(actions out) {
  auto rest = finish_cleaning_if_idle();
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

acquire_fsm::actions acquire_fsm::fail(error_code ec) {
  if (phase_ == phase::acquiring) return cancel(ec);
  return {};
}

acquire_fsm::actions acquire_fsm::finish_cleaning_if_idle() {
  if (phase_ != phase::cleaning) return {};
  // Wait for what is in flight (cleanup_waits_for says what and why), or a reconnect.
  if (in_flight_.contains_any(cleanup_waits_for) || resend_ != resend::none) return {};
  if (!blockers_.empty()) {
    // blocker watches: wait for their requests; one still set (none should be) goes now
    return remove_blocker_watches();
  }
  if (create_outcome_unknown_ && node_.empty()) {
    if (in_flight_.contains(request::list)) return {};
    return list_dir();
  }
  if (!node_.empty() && !node_gone_) {
    in_flight_.insert(request::delete_node);
    return {{acquire_action::delete_node, node_}};
  }
  phase_ = phase::done;
  result_ = {reason_, {}, 0};
  return {{acquire_action::complete, {}}};
}

}  // namespace zklock::detail
