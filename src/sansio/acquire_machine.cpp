#include "sansio/acquire_machine.hpp"

#include "sansio/node_name.hpp"

#include <zklock/path.hpp>

#include <utility>

namespace zklock::detail {

acquire_machine::acquire_machine(acquire_fsm fsm, context c)
    : fsm_(std::move(fsm)), c_(std::move(c)), dir_(c_.dir), connected_(c_.connected) {}

acquire_machine::requests acquire_machine::start() {
  requests out{sansio::request::follow(follow_tag)};
  if (c_.timeout != std::chrono::steady_clock::duration::max())
    out.push_back(sansio::request::timer_after(timeout_tag, timeout_timer, c_.timeout));
  for (auto& r : translate(fsm_.start())) out.push_back(std::move(r));
  return out;
}

acquire_machine::requests acquire_machine::on(const sansio::input& in) {
  switch (in.type) {
    case sansio::input::reply: return on_reply(in);
    case sansio::input::watch_fired: return on_fired(in);
    case sansio::input::timer_due:
      if (in.tag == timeout_tag) return translate(fsm_.on_timeout(in.connected));
      if (in.tag == backoff_tag) return translate(fsm_.on_backoff_due());
      if (in.tag == stop_tag) return translate(fsm_.on_stop_answer_due());
      if (in.tag == delay_tag_) return translate(fsm_.on_lock_delay_due());
      return {};  // a lock-delay wait replaced since
    case sansio::input::session: return in.tag == follow_tag ? on_session(in.state) : requests{};
    case sansio::input::connection: {
      auto it = asked_.find(in.tag);
      if (it == asked_.end()) return {};
      auto changes = static_cast<std::uint64_t>(it->second.extra);
      asked_.erase(it);
      // Connected when asked, and no change heard since: the reconnect was heard before the
      // request that asked for it failed (the changes followed say the rest).
      if (in.ec || changes != session_changes_ || !connected_) return {};
      return translate(fsm_.on_reconnected());
    }
    case sansio::input::cancelled:
      return translate(fsm_.cancel(in.ec, in.total ? stop_kind::total : stop_kind::at_once, in.connected));
  }
  return {};
}

acquire_machine::requests acquire_machine::on_session(session_state now) {
  ++session_changes_;
  connected_ = is_connected(now);
  if (fsm_.done()) {
    // Only a lease dir's removal lost after the grant follows the session after it.
    if (!dir_removal_lost_ || now == session_state::suspended) return {};
    dir_removal_lost_ = false;
    requests out{sansio::request::unfollow()};
    if (connected_) out.push_back(sansio::request::remove_watch_of(ask(asked::removal, dir_, dir_slot), dir_slot));
    return out;
  }
  switch (now) {
    case session_state::suspended: return translate(fsm_.on_suspended());
    case session_state::connected:
    case session_state::reconnected: return translate(fsm_.on_reconnected());
    case session_state::expired: return translate(fsm_.on_expired(errc::session_expired));
    case session_state::closed: return translate(fsm_.on_expired(errc::session_closed));
    default: return {};
  }
}

acquire_machine::requests acquire_machine::on_fired(const sansio::input& in) {
  auto slot = static_cast<std::size_t>(in.tag - watch_tag);
  if (slot >= slot_paths_.size()) return {};
  std::string path = slot_paths_[slot];
  if (in.ec == errc::session_expired) return translate(fsm_.on_expired(errc::session_expired));
  if (in.ec == errc::session_closed) return translate(fsm_.on_expired(errc::session_closed));
  if (in.ec) return {};
  if (slot >= first_blocker_slot) free_blocker(path);
  if (in.event == watch_event_type::deleted) heard_gone(path);
  return translate(fsm_.on_watch_event(path, in.event == watch_event_type::deleted ? watch_change::deleted
                                             : in.event == watch_event_type::child ? watch_change::children_changed
                                                                                    : watch_change::data_changed));
}

acquire_machine::requests acquire_machine::on_reply(const sansio::input& in) {
  auto it = asked_.find(in.tag);
  if (it == asked_.end()) return {};
  asking a = std::move(it->second);
  asked_.erase(it);
  error_code ec = in.ec;
  auto stat = std::get_if<std::optional<node_stat>>(&in.value);
  const std::optional<node_stat> none;
  const std::optional<node_stat>& st = stat ? *stat : none;
  switch (a.what) {
    case asked::create: {
      auto r = std::get_if<create_result>(&in.value);
      return translate(fsm_.on_create(ec, r ? r->path : std::string{}, r ? r->stat.czxid : 0));
    }
    case asked::list: {
      auto r = in.children();
      // The session's view: a listing merged once however many contenders it answers (its
      // version says); the dir gone, nothing in it.
      if (!ec && r) c_.view->merge({r->stat.czxid, r->stat.pzxid}, r->children);
      else if (ec == zk_errc::no_node) c_.view->clear();
      // A waiter in a deep queue evaluates the view's few names for its node, not every name
      // (the queue would cost the session O(N^2) otherwise).
      if (!ec && fsm_.takes_view_listing())
        return translate(fsm_.on_children(ec, c_.view->listing_for(node_name(fsm_.node()), fsm_.kind(),
                                                                    static_cast<std::size_t>(fsm_.max_watched()),
                                                                    fsm_.counted_as_readers())));
      return translate(fsm_.on_children(ec, r ? r->children : std::vector<std::string>{}));
    }
    case asked::parent_dir: {
      if (ec != zk_errc::no_node) return translate(fsm_.on_parents(ec == zk_errc::node_exists ? error_code{} : ec));
      // Its parent is missing too: the dir and every ancestor, pipelined in one round trip.
      std::vector<std::string> paths;
      for (std::string p = dir_; !p.empty() && p != "/"; p = parent_path(p)) paths.push_back(p);
      chain_left_ = paths.size();
      chain_error_ = {};
      requests out;
      for (auto p = paths.rbegin(); p != paths.rend(); ++p)
        out.push_back({.type = sansio::request::create, .tag = ask(asked::parent_chain), .path = *p, .mode = create_mode::container});
      return out;
    }
    case asked::parent_chain:
      if (ec && ec != zk_errc::node_exists && !chain_error_) chain_error_ = ec;
      if (--chain_left_ == 0) return translate(fsm_.on_parents(chain_error_));
      return {};
    case asked::blocker: {
      if (ec == zk_errc::no_node) heard_gone(a.path);
      const node_stat* s = nullptr;
      if (auto d = in.data()) s = &d->stat;
      if (auto c = in.children()) s = &c->stat;
      auto slot = blocker_slots_.find(a.path);
      const bool waits = !ec && slot != blocker_slots_.end();
      requests out;
      if (waits) out.push_back(sansio::request::wait_for(watch_tag + slot->second, slot->second));
      if (ec && slot != blocker_slots_.end()) free_blocker(a.path);
      for (auto& r : translate(fsm_.on_watch_set(a.path, ec, s ? s->ephemeral_owner : 0))) out.push_back(std::move(r));
      return out;
    }
    case asked::own: {
      own_pending_ = false;
      auto d = in.data();
      own_reply_ = d ? *d : data_result{};
      if (!ec) own_read_ = own_reply_;
      // Granted before this reply came: the hold took the watch over.
      if (fsm_.done()) return {sansio::request::outcome_on(outcome::own_watch_reply, a.path, ec)};
      auto out = translate(fsm_.on_own_watch_set(ec));
      if (!ec && !fsm_.done()) out.push_back(sansio::request::wait_for(watch_tag + own_slot, own_slot));
      return out;
    }
    case asked::dir_watch: {
      requests out;
      if (!ec) out.push_back(sansio::request::wait_for(watch_tag + dir_slot, dir_slot));
      auto r = in.children();
      for (auto& q : translate(fsm_.on_dir_watch_set(ec, r ? r->children : std::vector<std::string>{})))
        out.push_back(std::move(q));
      return out;
    }
    case asked::removal: {
      auto slot = static_cast<std::uint8_t>(a.extra);
      if ((!ec || ec == zk_errc::no_watcher) && slot >= first_blocker_slot) free_blocker(a.path);
      if (fsm_.done() && slot == dir_slot && ec == condition::connection_lost) {
        // The lease dir's, lost after the grant (which did not wait for it): the C client sets
        // the watch again on the reconnect, so remove it then.
        if (connected_) return {sansio::request::remove_watch_of(ask(asked::removal, dir_, dir_slot), dir_slot)};
        dir_removal_lost_ = true;
        return {sansio::request::follow(follow_tag)};
      }
      return translate(fsm_.on_watch_removed(a.path, ec));
    }
    case asked::delete_node: return translate(fsm_.on_deleted(ec));
    case asked::stat: {
      if (!ec && !st) ec = zk_errc::no_node;
      bool ours = st && st->ephemeral_owner == c_.session_id();
      return translate(fsm_.on_stat(ec, st ? st->czxid : 0, ours));
    }
    case asked::writer_owner:
      // (one segment with the mark's: the replies come in order, so the mark's finds it)
      writer_owner_ = st ? st->ephemeral_owner : 0;
      return {};
    case asked::mark:
      if (ec == zk_errc::no_node) ec = {};  // (not there: owner 0)
      return translate(fsm_.on_downgrade_checked(a.path, ec, writer_owner_, st ? st->ephemeral_owner : 0));
    case asked::refresh: return translate(fsm_.on_refreshed(ec, st.has_value()));
    case asked::beacon:
    case asked::beacon_retry: {
      if (!ec || ec == zk_errc::node_exists) return {};
      if (ec == zk_errc::no_node && a.what == asked::beacon) {
        // The beacons' dir and its ancestors, then the beacon again, pipelined in one round
        // trip (the server applies them in order): it exists before our node does.
        std::vector<std::string> dirs;
        for (std::string p = parent_path(a.path); !p.empty() && p != "/"; p = parent_path(p)) dirs.push_back(p);
        requests out;
        for (auto p = dirs.rbegin(); p != dirs.rend(); ++p)
          out.push_back({.type = sansio::request::create, .tag = ask(asked::ignored), .path = *p, .mode = create_mode::container});
        for (auto& r : beacon(true)) out.push_back(std::move(r));
        return out;
      }
      if (*c_.beacon_session == a.extra) *c_.beacon_session = 0;  // the next acquire tries again
      return {sansio::request::outcome_on(outcome::beacon_failed, a.path, ec)};
    }
    case asked::owner:
      if (!ec && !st) ec = zk_errc::no_node;
      return translate(fsm_.on_owner(a.path, ec, st ? st->ephemeral_owner : 0));
    case asked::session_check: return translate(fsm_.on_session_checked(a.extra, ec, st ? st->ephemeral_owner : 0));
    case asked::reconnect:
    case asked::ignored: return {};
  }
  return {};
}

acquire_machine::requests acquire_machine::translate(acquire_fsm::actions actions) {
  requests out;
  for (const auto& a : actions) append(out, a);
  return out;
}

void acquire_machine::append(requests& out, const acquire_action& a) {
  auto add = [&out](requests more) {
    for (auto& r : more) out.push_back(std::move(r));
  };
  auto list = [&] { out.push_back(sansio::request::get_children_of(ask(asked::list), dir_)); };
  switch (a.type) {
    case acquire_action::create_and_list:
      out.push_back({.type = sansio::request::create, .tag = ask(asked::create), .path = a.path, .data = c_.node_data,
                     .mode = create_mode::ephemeral_sequential});
      return list();
    case acquire_action::sync_and_list:
      out.push_back({.type = sansio::request::sync, .tag = ask(asked::ignored), .path = a.path});  // the listing's reply tells
      return list();
    case acquire_action::list: return list();
    case acquire_action::ensure_parents:
      // The dir alone first: its parents nearly always exist, and a create of an existing node
      // is a failed write the server still logs.
      out.push_back({.type = sansio::request::create, .tag = ask(asked::parent_dir), .path = dir_, .mode = create_mode::container});
      return;
    case acquire_action::watch_blocker: {
      // The nearest blocker by getData, the others by getChildren (acquire_fsm.hpp, step 4).
      out.push_back(sansio::request::outcome_on(outcome::waited, a.path));
      auto slot = blocker_slot(a.path);
      auto tag = ask(asked::blocker, a.path);
      out.push_back(a.nearest ? sansio::request::get_data_of(tag, a.path, slot) : sansio::request::get_children_of(tag, a.path, slot));
      return;
    }
    case acquire_action::ask_view: {
      auto v = c_.view->nearest(node_name(a.path), fsm_.kind(), static_cast<std::size_t>(fsm_.max_watched()),
                                fsm_.counted_as_readers());
      v.alone = c_.view.use_count() == 1;  // (no other acquire of this session on the dir)
      return add(translate(fsm_.on_view(v)));
    }
    case acquire_action::watch_own:
      own_pending_ = true;
      own_read_.reset();
      slot_paths_[own_slot] = a.path;
      out.push_back(sansio::request::get_data_of(ask(asked::own, a.path), a.path, own_slot));
      return;
    case acquire_action::requeued:
      heard_gone(a.path);  // (deleted by someone else)
      out.push_back(sansio::request::outcome_on(outcome::requeued, a.path));
      return;
    case acquire_action::watch_dir:
      out.push_back(sansio::request::outcome_on(outcome::waited, a.path));
      slot_paths_[dir_slot] = a.path;
      out.push_back(sansio::request::get_children_of(ask(asked::dir_watch, a.path), a.path, dir_slot));
      return;
    case acquire_action::remove_watch: {
      auto it = blocker_slots_.find(a.path);
      std::uint8_t slot = it != blocker_slots_.end() ? it->second : dir_slot;
      out.push_back(sansio::request::remove_watch_of(ask(asked::removal, a.path, slot), slot));
      return;
    }
    case acquire_action::delete_node:
      out.push_back({.type = sansio::request::remove, .tag = ask(asked::delete_node), .path = a.path, .version = -1});
      return;
    case acquire_action::stat_node: out.push_back(sansio::request::exists_of(ask(asked::stat), a.path)); return;
    case acquire_action::check_downgrade:
      out.push_back(sansio::request::exists_of(ask(asked::writer_owner), a.path));
      out.push_back(sansio::request::exists_of(ask(asked::mark, a.path), downgrade_mark_path(a.path)));
      return;
    case acquire_action::wait_reconnect:
      // Connected already (its change heard): answered after this step; otherwise the
      // session's next change is the answer.
      if (connected_)
        out.push_back(sansio::request::connection(ask(asked::reconnect, {}, static_cast<std::int64_t>(session_changes_))));
      return;
    case acquire_action::check_grant: return add(translate(fsm_.on_grant_check(c_.at_grant())));
    case acquire_action::refresh_contact: out.push_back(sansio::request::exists_of(ask(asked::refresh), a.path)); return;
    case acquire_action::answer_early:
      out.push_back(sansio::request::stop_timer(timeout_timer));
      out.push_back(sansio::request::outcome_on(outcome::answer_early, {}, a.ec));
      return;
    case acquire_action::wait_stop_answer:
      out.push_back(sansio::request::timer_after(stop_tag, stop_answer_timer, a.delay));
      return;
    case acquire_action::backoff_delete: out.push_back(sansio::request::timer_after(backoff_tag, backoff_timer, a.delay)); return;
    case acquire_action::report_cleanup_failed:
      out.push_back(sansio::request::outcome_on(outcome::cleanup_failed, a.path, a.ec));
      return;
    case acquire_action::complete:
      out.push_back(sansio::request::stop_timer(timeout_timer));
      out.push_back(sansio::request::stop_timer(lock_delay_timer));
      out.push_back(sansio::request::stop_timer(stop_answer_timer));
      out.push_back(sansio::request::unfollow());
      out.push_back(sansio::request::done(fsm_.result().ec));
      return;
    case acquire_action::create_beacon: return add(beacon(false));
    case acquire_action::read_owner: out.push_back(sansio::request::exists_of(ask(asked::owner, a.path), a.path)); return;
    case acquire_action::check_session:
      out.push_back(sansio::request::exists_of(ask(asked::session_check, {}, a.owner), a.path));
      return;
    case acquire_action::start_lock_delay:
      out.push_back(sansio::request::outcome_on(outcome::lock_delay_started, a.path));
      delay_tag_ = next_tag_++;  // (a restart replaces the wait; one already due is stale)
      out.push_back(sansio::request::timer_after(delay_tag_, lock_delay_timer, a.delay));
      return;
  }
}

// Lock-delay: our session's beacon (acquire_fsm.hpp), once per session and lock object; its
// parent a container, made when missing. Best effort: without it our releases are delayed.
acquire_machine::requests acquire_machine::beacon(bool parent_made) {
  auto sid = c_.session_id();
  if (!parent_made && *c_.beacon_session == sid) return {};
  *c_.beacon_session = sid;
  auto path = lock_delay_beacon(dir_, sid);
  auto tag = ask(parent_made ? asked::beacon_retry : asked::beacon, path, sid);
  return {{.type = sansio::request::create, .tag = tag, .path = std::move(path), .mode = create_mode::ephemeral}};
}

std::uint64_t acquire_machine::ask(asked what, std::string path, std::int64_t extra) {
  auto tag = next_tag_++;
  asked_.emplace(tag, asking{what, std::move(path), extra});
  return tag;
}

std::uint8_t acquire_machine::blocker_slot(const std::string& path) {
  if (auto it = blocker_slots_.find(path); it != blocker_slots_.end()) return it->second;
  std::size_t slot = first_blocker_slot;
  while (slot < slot_used_.size() && slot_used_[slot]) ++slot;
  if (slot == slot_used_.size()) {
    slot_used_.push_back(false);
    slot_paths_.emplace_back();
  }
  slot_used_[slot] = true;
  slot_paths_[slot] = path;
  return blocker_slots_[path] = static_cast<std::uint8_t>(slot);
}

void acquire_machine::free_blocker(const std::string& path) {
  auto it = blocker_slots_.find(path);
  if (it == blocker_slots_.end()) return;
  slot_used_[it->second] = false;
  blocker_slots_.erase(it);
}

// A node of the dir known gone: out of the session's view.
void acquire_machine::heard_gone(const std::string& path) {
  if (parent_path(path) == dir_) c_.view->gone(node_name(path));
}

}  // namespace zklock::detail
