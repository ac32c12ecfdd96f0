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
  actions out;
  // A retry waiting out its delay now waits for the network too: do not make the caller wait.
  if (delete_ == delete_state::backoff) complete(out, errc::release_pending);
  return out;
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
  if (delete_ == delete_state::failed) {
    delete_ = delete_state::done;  // the node the server kept went with the session at last
  } else if (delete_ != delete_state::done) {
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
  if (delete_ == delete_state::failed) {
    complete(out, failure_);  // a lost hold whose owed delete the server refused
    return out;
  }
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
  if (!ec) {
    delete_ = delete_state::done;
    complete(out, {});
  } else if (ec == zk_errc::no_node) {
    // On a retry the first request committed (our session lives, and only its delete or its
    // expiry removes our ephemeral node). On the first try someone else deleted it.
    delete_ = delete_state::done;
    complete(out, attempts_ > 1 ? error_code{} : error_code(errc::lock_lost));
  } else if (ec == condition::session_lost) {
    delete_ = delete_state::done;  // the node goes with the session
    complete(out, errc::lock_lost);
  } else if ((ec == zk_errc::throttled_op || ec == zk_errc::system_error) && retries_ < max_release_retries) {
    // Refused for now (the server throttles; the C client failed locally): the node is still
    // ours to delete. The caller, if any, keeps waiting for the outcome.
    delete_ = delete_state::backoff;
    out.push_back({hold_action::retry_release, ec, std::chrono::milliseconds(100 << retries_)});
    ++retries_;
  } else {
    // Refused for good (no_auth: the lock dir's ACL lacks DELETE; or the retries ran out): our
    // node blocks the lock until the session ends. Never counted as done, never silent.
    delete_ = delete_state::failed;
    failure_ = ec;
    complete(out, ec);
    out.push_back({hold_action::report_release_failed, ec});
  }
  return out;
}

hold_fsm::actions hold_fsm::on_retry_due() {
  if (delete_ != delete_state::backoff) return {};
  delete_ = delete_state::wanted;
  return send_if_connected();  // or after the reconnect
}

}  // namespace zklock::detail
