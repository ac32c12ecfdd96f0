// After a lost connection: what is sent again on the reconnect, a create whose outcome is
// unknown found by its id (behind a sync), our node's czxid learnt (on_stat), and the session's
// expiry, which ends everything.
#include "sansio/acquire_fsm.hpp"

namespace zklock::detail {

acquire_fsm::actions acquire_fsm::list_dir() {
  in_flight_.insert(request::list);
  // A lost create may have reached another server of the ensemble than the one we reconnected
  // to; sync first, so a lagging follower cannot hide it (we would queue a second node behind
  // our own first one).
  return {{create_outcome_unknown_ ? acquire_action::sync_and_list : acquire_action::list, dir_}};
}

acquire_fsm::actions acquire_fsm::after_connection_loss(resend what) {
  resend_ = what;
  return {{acquire_action::wait_reconnect, {}}};
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

}  // namespace zklock::detail
