#include "sansio/hold_fsm.hpp"

namespace zklock::detail {

void hold_fsm::complete(actions& out, error_code ec) {
  if (!caller_waits_) return;
  caller_waits_ = false;
  out.push_back({hold_action::complete_release, ec});
}

hold_fsm::actions hold_fsm::lose() {
  if (status_ != lock_status::held && status_ != lock_status::maybe_lost) return {};
  status_ = lock_status::lost;
  return {{hold_action::report_lost, errc::lock_lost}};
}

hold_fsm::actions hold_fsm::send_if_connected() {
  if (delete_ != delete_state::wanted || link_ != link::connected) return {};
  delete_ = delete_state::in_flight;
  ++attempts_;
  return {{hold_action::send_release, {}}};
}

hold_fsm::actions hold_fsm::on_suspended() {
  if (link_ == link::ended) return {};
  link_ = link::suspended;
  if (status_ == lock_status::held) status_ = lock_status::maybe_lost;
  return {};
}

hold_fsm::actions hold_fsm::on_connected(bool same_session) {
  if (link_ == link::ended) return {};
  if (!same_session) return on_session_ended();
  link_ = link::connected;
  if (status_ == lock_status::maybe_lost) status_ = lock_status::held;
  // A release that waited for the connection (or was lost with it) goes now; so does the
  // delete owed by a hold reported lost whose session turned out to survive.
  return send_if_connected();
}

hold_fsm::actions hold_fsm::on_session_ended() {
  if (link_ == link::ended) return {};
  link_ = link::ended;
  actions out = lose();
  if (delete_ != delete_state::done) {
    delete_ = delete_state::done;  // the node went with the session
    complete(out, errc::lock_lost);
  }
  return out;
}

hold_fsm::actions hold_fsm::on_deadline() {
  actions out = lose();
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
    if (caller_waits) out.push_back({hold_action::complete_release, errc::already_released});
    return out;
  }
  status_ = lock_status::released;
  caller_waits_ = caller_waits;
  if (link_ == link::ended || delete_ == delete_state::done) {
    complete(out, errc::lock_lost);  // the node went with the session
    return out;
  }
  if (was_lost) {
    // The caller learns the lock was lost; the owed delete goes on in the background.
    complete(out, errc::lock_lost);
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
  delete_ = delete_state::done;
  if (!ec) {
    complete(out, {});
  } else if (ec == zk_errc::no_node) {
    // On a retry the first request committed (our session lives, and only its delete or its
    // expiry removes our ephemeral node). On the first try someone else deleted it.
    complete(out, attempts_ > 1 ? error_code{} : error_code(errc::lock_lost));
  } else if (ec == condition::session_lost) {
    complete(out, errc::lock_lost);
  } else {
    complete(out, ec);
  }
  return out;
}

}  // namespace zklock::detail
