// A stop (cancellation, the timeout, a failure): our watches removed, our node deleted (with the
// backoff shared with the hold: node_delete_backoff.hpp), then the completion; with the
// connection down a stop that may answer at once does, the cleanup going on behind.
#include "sansio/acquire_fsm.hpp"

#include <utility>

namespace zklock::detail {

acquire_fsm::actions acquire_fsm::on_timeout(bool connected) {
  return cancel(connected ? error_code(errc::lock_timeout) : error_code(errc::connection_unavailable), stop_kind::at_once,
                connected);
}

acquire_fsm::actions acquire_fsm::on_suspended() {
  // An at_once stop taken while connected: its cleanup now waits for the reconnect.
  if (phase_ == phase::cleaning && early_reason_) return answer_stop_early();
  if (mode_ == lock_mode::wait) return {};
  return cancel(errc::connection_unavailable, stop_kind::at_once, false);
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
  // Refused (node_delete_backoff.hpp): for now, sent again after a growing delay; for good, our
  // node blocks the lock until the session ends, and the runner logs it.
  if (auto delay = delete_backoff_.after_refusal(ec)) {
    acquire_action a{acquire_action::backoff_delete, node_};
    a.ec = ec;
    a.delay = *delay;
    in_flight_.insert(request::delete_delay);
    return {a};
  }
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
  // Connected, it waits for the cleanup at most stop_answer_wait (a server may have stopped
  // answering), and no longer once the connection drops (on_suspended).
  if (phase_ == phase::cleaning && kind == stop_kind::at_once && !answered_early_) {
    const bool armed = static_cast<bool>(early_reason_);
    early_reason_ = reason;
    if (!connected) {
      auto early = answer_stop_early();
      out.insert(out.end(), early.begin(), early.end());
    } else if (!armed) {
      acquire_action a{acquire_action::wait_stop_answer, {}};
      a.delay = stop_answer_wait;
      out.push_back(a);
    }
  }
  return out;
}

acquire_fsm::actions acquire_fsm::on_stop_answer_due() {
  if (phase_ != phase::cleaning || !early_reason_) return {};
  return answer_stop_early();
}

acquire_fsm::actions acquire_fsm::answer_stop_early() {
  answered_early_ = true;
  return {{acquire_action::answer_early, {}, std::exchange(early_reason_, {})}};
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
