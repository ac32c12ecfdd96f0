// What grants: a won lock (acquired) passes the lock-delay gate (acquire_lock_delay.cpp), learns
// its fencing token, and is checked against the session it was won on (and its contact
// refreshed) before the caller gets it. A grant from an event while our node's watch is not set
// asks one exists first.
#include "sansio/acquire_fsm.hpp"

namespace zklock::detail {

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

}  // namespace zklock::detail
