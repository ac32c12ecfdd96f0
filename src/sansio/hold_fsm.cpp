#include "sansio/hold_fsm.hpp"

#include <algorithm>

namespace zklock::detail {

namespace {
sansio::request arm_timer_at(std::chrono::steady_clock::time_point at) {
  return sansio::request::timer_at(hold_fsm::tag::clock, hold_fsm::clock_timer, at);
}
sansio::request deadline_near(std::uint64_t waiter) { return sansio::request::outcome(hold_outcome::deadline_near, waiter); }
}  // namespace

void hold_fsm::complete(actions& out, error_code ec) {
  if (!caller_waits_) return;
  caller_waits_ = false;
  out.push_back(sansio::request::outcome(hold_outcome::complete_release, 0, ec));
}

hold_fsm::actions hold_fsm::lose(error_code why) {
  if (status_ != lock_status::held && status_ != lock_status::maybe_lost) return {};
  status_ = lock_status::lost;
  lost_ = why;
  deadline_waiters_.clear();  // report_lost answers them
  return {sansio::request::outcome(hold_outcome::report_lost, 0, why)};
}

hold_fsm::actions hold_fsm::send_if_connected() {
  if (delete_ != delete_state::wanted || link_ != link::connected) return {};
  delete_ = delete_state::in_flight;
  ++attempts_;
  return {sansio::request::outcome(hold_outcome::send_release)};
}

hold_fsm::actions hold_fsm::on_suspended() {
  if (link_ == link::ended) return {};
  link_ = link::suspended;
  if (status_ == lock_status::held) status_ = lock_status::maybe_lost;
  actions out;
  // A delete backing off now waits for the network too: do not make the caller wait.
  if (delete_ == delete_state::backoff) complete(out, errc::release_pending);
  return out;
}

hold_fsm::actions hold_fsm::on_connected(bool same_session) {
  if (link_ == link::ended) return {};
  if (!same_session) return on_session_ended(make_lock_lost(lost_cause::session_replaced));
  link_ = link::connected;
  if (status_ == lock_status::maybe_lost) status_ = lock_status::held;
  // A release that waited for the connection (or was lost with it) goes now; so does the
  // delete owed by a hold reported lost whose session turned out to survive.
  return send_if_connected();
}

hold_fsm::actions hold_fsm::on_session_ended(error_code why) {
  if (link_ == link::ended) return {};
  link_ = link::ended;
  actions out = lose(why);
  if (delete_ == delete_state::failed) {
    delete_ = delete_state::done;  // the node the server kept went with the session at last
  } else if (delete_ != delete_state::done) {
    delete_ = delete_state::done;  // the node went with the session
    complete(out, why);
  }
  return out;
}

hold_fsm::actions hold_fsm::on_node_deleted() {
  if (status_ == lock_status::released || link_ == link::ended) return {};
  actions out = lose(make_lock_lost(lost_cause::node_deleted));
  // A delete owed by a hold lost earlier (its deadline) has nothing left to do; one in flight
  // is settled by its reply.
  if (delete_ == delete_state::none || delete_ == delete_state::wanted || delete_ == delete_state::backoff)
    delete_ = delete_state::done;
  return out;
}

hold_fsm::actions hold_fsm::on_deadline() {
  actions out = lose(make_lock_lost(lost_cause::deadline_passed));
  if (out.empty()) return out;
  // Our node may outlive the deadline (the session may survive): it is owed a delete, which
  // goes as soon as the connection allows.
  if (delete_ == delete_state::none) delete_ = delete_state::wanted;
  auto send = send_if_connected();
  out.insert(out.end(), send.begin(), send.end());
  return out;
}

hold_fsm::actions hold_fsm::release(bool caller_waits) {
  actions out;
  const bool was_lost = status_ == lock_status::lost;
  if (status_ == lock_status::released) {
    if (caller_waits) out.push_back(sansio::request::outcome(hold_outcome::complete_release, 0, errc::already_released));
    return out;
  }
  status_ = lock_status::released;
  caller_waits_ = caller_waits;
  deadline_waiters_.clear();  // the runner answers them (already_released)
  if (local_) {
    // Its node is its queue's, which decides between a local handoff and the node's release:
    // nothing to delete, nothing owed.
    delete_ = delete_state::done;
    complete(out, was_lost ? lost_ : error_code{});
    return out;
  }
  if (delete_ == delete_state::failed) {
    complete(out, failure_);  // a lost hold whose owed delete the server refused
    return out;
  }
  if (link_ == link::ended || delete_ == delete_state::done) {
    complete(out, lost_ ? lost_ : error_code(errc::lock_lost));  // the node went with the session
    return out;
  }
  if (was_lost) {
    // The caller learns the lock was lost (and why); the owed delete goes on in the background.
    complete(out, lost_);
  } else if (link_ != link::connected) {
    complete(out, errc::release_pending);  // do not make the caller wait for the network
  }
  if (delete_ == delete_state::none) delete_ = delete_state::wanted;
  auto send = send_if_connected();
  out.insert(out.end(), send.begin(), send.end());
  return out;
}

hold_fsm::actions hold_fsm::on_release_reply(error_code ec) {
  if (delete_ != delete_state::in_flight) return {};
  actions out;
  if (ec == condition::connection_lost) {
    // Its outcome is unknown: send it again after the reconnect. The caller does not wait.
    delete_ = delete_state::wanted;
    complete(out, errc::release_pending);
    return out;
  }
  if (!ec) {
    delete_ = delete_state::done;
    complete(out, {});
  } else if (ec == zk_errc::no_node) {
    // On a later attempt (a resend or a backoff) the first request committed (our session lives, and only its delete or its
    // expiry removes our ephemeral node). On the first try someone else deleted it.
    delete_ = delete_state::done;
    complete(out, attempts_ > 1 ? error_code{} : make_lock_lost(lost_cause::node_deleted));
  } else if (ec == condition::session_lost) {
    delete_ = delete_state::done;  // the node goes with the session
    complete(out, make_lock_lost(ec == zk_errc::closing || ec == errc::session_closed ? lost_cause::session_closed
                                                                                        : lost_cause::session_expired));
  } else if (auto delay = backoff_.after_refusal(ec)) {
    // Refused for now (node_delete_backoff.hpp): the caller, if any, keeps waiting for the outcome.
    delete_ = delete_state::backoff;
    out.push_back(sansio::request::timer_after(tag::backoff_due, backoff_timer, *delay));
  } else {
    // Refused for good (no_auth: the lock dir's ACL lacks DELETE; or the backoffs ran out): our
    // node blocks the lock until the session ends. Never counted as done, never silent.
    delete_ = delete_state::failed;
    failure_ = ec;
    complete(out, ec);
    out.push_back(sansio::request::outcome(hold_outcome::report_release_failed, 0, ec));
  }
  return out;
}

hold_fsm::actions hold_fsm::on_backoff_due() {
  if (delete_ != delete_state::backoff) return {};
  delete_ = delete_state::wanted;
  return send_if_connected();  // or after the reconnect
}

hold_fsm::actions hold_fsm::on_clock(const hold_clock& c) {
  if ((status_ != lock_status::held && status_ != lock_status::maybe_lost) || c.ended)
    return {sansio::request::stop_timer(clock_timer)};
  if (!local_ && c.valid_until <= c.now) return on_deadline();
  actions out;
  // async_wait_deadline: the deadline is within its lead and no reply has moved it on
  auto next = c.valid_until;
  std::erase_if(deadline_waiters_, [&](const deadline_waiter& w) {
    if (c.valid_until - w.lead <= c.now) {
      out.push_back(deadline_near(w.id));
      return true;
    }
    next = std::min(next, c.valid_until - w.lead);
    return false;
  });
  if (local_) {
    // Served only while the deadline (kept by the node's hold) is ahead.
    if (c.valid_until > c.now && !deadline_waiters_.empty()) out.push_back(arm_timer_at(next));
    return out;
  }
  // The keepalive: a third of the session timeout without a reply (the C client's own ping
  // cadence), and the connection up to carry it.
  auto refresh = contact_refresh_due(c.last_acknowledged, c.session_timeout);
  if (refresh <= c.now && c.connected && !keepalive_in_flight_) {
    keepalive_in_flight_ = true;
    out.push_back(sansio::request::exists_of(tag::keepalive, {}));
  }
  if (refresh > c.now) next = std::min(next, refresh);
  out.push_back(arm_timer_at(next));
  return out;
}

hold_fsm::actions hold_fsm::on_keepalive_reply(error_code ec, bool node_ours, const hold_clock& c) {
  keepalive_in_flight_ = false;
  actions out = on_node_checked(ec, node_ours);
  auto next = on_clock(c);
  out.insert(out.end(), next.begin(), next.end());
  return out;
}

hold_fsm::actions hold_fsm::on_node_checked(error_code ec, bool node_ours) {
  // Only the owner's delete or the session's end removes our node: gone (or another session's)
  // means deleted by someone else, or a replaced session.
  if (ec || status_ == lock_status::released || node_ours) return {};
  return on_node_gone();
}

void hold_fsm::add_deadline_waiter(std::uint64_t id, std::chrono::steady_clock::duration lead) {
  deadline_waiters_.push_back({id, lead});
}

void hold_fsm::remove_deadline_waiter(std::uint64_t id) {
  std::erase_if(deadline_waiters_, [id](const deadline_waiter& w) { return w.id == id; });
}

}  // namespace zklock::detail
