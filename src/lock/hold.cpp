#include "lock/hold.hpp"
#include "lock/local_queue.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"
#include "sansio/session_end.hpp"

#include <boost/asio/post.hpp>

namespace zklock::detail {

hold::hold(private_tag, std::shared_ptr<session_impl> s, hold_grant g, bool connected, bool local)
    : s_(std::move(s)),
      node_(std::move(g.node)),
      token_(g.token),
      session_id_(s_->session_id()),
      kind_(g.kind),
      fsm_(connected, local),
      deadline_timer_(s_->executor()),
      backoff_timer_(s_->executor()),
      metrics_(std::move(g.metrics)) {}

std::shared_ptr<hold> hold::granted(std::shared_ptr<session_impl> s, hold_grant g, bool watches_node) {
  const bool connected = is_connected(s->state());
  auto h = std::make_shared<hold>(private_tag{}, std::move(s), std::move(g), connected, /*local=*/false);
  h->watches_node_ = watches_node;
  h->start();
  return h;
}

std::shared_ptr<hold> hold::local(std::shared_ptr<session_impl> s, hold_grant g, bool held,
                                  std::shared_ptr<local_queue> queue) {
  auto h = std::make_shared<hold>(private_tag{}, std::move(s), std::move(g), held, /*local=*/true);
  h->local_queue_owner_ = std::move(queue);
  return h;
}

lock_status hold::status() const noexcept {
  // The session's state is told to its state handlers before our (posted) listener has run:
  // say what it implies now, so that a handler of `suspended` sees maybe_lost.
  auto st = fsm_.status();
  if (st != lock_status::held && st != lock_status::maybe_lost) return st;
  switch (s_->state()) {
    case session_state::suspended:
    case session_state::connecting: return lock_status::maybe_lost;
    case session_state::expired:
    case session_state::closed:
    case session_state::disconnected: return lock_status::lost;
    default: return st;
  }
}

bool hold::owns() const noexcept {
  auto st = status();
  return st == lock_status::held || st == lock_status::maybe_lost;
}

void hold::start() {
  listener_ = session_listener(s_, weak_from_this(), &hold::on_session_state);
  check_clock();
}

void hold::on_session_state(session_state st) {
  if (st == session_state::suspended) {
    run(fsm_.on_suspended());
  } else if (is_connected(st)) {
    run(fsm_.on_connected(s_->session_id() == session_id_));
    if (!owns()) remove_downgrade_mark();  // one a loss could not delete while disconnected
    if (st == session_state::reconnected) {
      // our node's watch lost with the connection: setting it again checks the node too
      if (node_watch_) check_node();
      else watch_node();
    }
  } else if (st == session_state::expired || st == session_state::closed) {
    run(fsm_.on_session_ended(make_lock_lost(lost_cause_of(st, s_->session_id() != session_id_))));
  }
  check_clock();
}

hold_clock hold::clock() const {
  auto st = s_->state();
  return {.now = std::chrono::steady_clock::now(),
          .valid_until = s_->valid_until(),
          .last_acknowledged = s_->last_acknowledged(),
          .session_timeout = s_->negotiated_timeout(),
          .connected = is_connected(st),
          .ended = st == session_state::expired || st == session_state::closed || st == session_state::disconnected};
}

// The validity deadline (see lock_guard::valid_until) and its keepalive: hold_fsm::on_clock decides.
void hold::check_clock() { run(fsm_.on_clock(clock())); }

void hold::wait_deadline(std::chrono::steady_clock::duration lead, pending<void(error_code)>::ptr op) {
  auto id = ++next_waiter_;
  deadline_waiters_.push_back({id, std::move(op)});
  fsm_.add_deadline_waiter(id, lead);
  check_clock();  // completes it at once when the deadline is already that close
}

void hold::forget_deadline_waiter(const pending<void(error_code)>* op) {
  std::erase_if(deadline_waiters_, [&](const deadline_waiter& w) {
    if (w.op.get() != op) return false;
    fsm_.remove_deadline_waiter(w.id);
    return true;
  });
}

// exists on our own node: refreshes the deadline, and finds a node deleted under us.
void hold::send_keepalive() {
  s_->exists(node_, nullptr, exists_handler([self = shared_from_this()](error_code ec, std::optional<node_stat> st) {
    self->run(self->fsm_.on_keepalive_reply(ec, self->node_ours(st), self->clock()));
  }));
}

// After a reconnect: our node must still be there and still our session's (CURATOR-696: a
// holder that finds a node of an older session is not the holder). Only the owner's delete or
// the session's expiry removes it, so this finds an administrator's delete or a replaced session.
void hold::check_node() {
  if (!owns()) return;
  s_->exists(node_, nullptr, exists_handler([self = shared_from_this()](error_code ec, std::optional<node_stat> st) {
    self->run(self->fsm_.on_node_checked(ec, self->node_ours(st)));
  }));
}

void hold::adopt_node_watch(boost::intrusive_ptr<watch_state> w, bool reply_pending, const data_result* last_read) {
  node_watch_ = std::move(w);
  if (!node_watch_) return watch_node();
  if (reply_pending) {
    node_read_pending_ = true;
    return;
  }
  if (last_read) node_data_ = node_read{last_read->data, last_read->stat.version};
  follow_node_watch();
}

void hold::watch_node() {
  if (!owns() || is_local() || !watches_node_ || node_read_pending_) return;
  node_read_pending_ = true;
  node_data_.reset();
  s_->get_data(node_, &node_watch_, data_handler([weak = weak_from_this()](error_code ec, data_result d) {
    if (auto self = weak.lock()) self->on_node_watch_reply(ec, d);
  }));
}

void hold::on_node_watch_reply(error_code ec, const data_result& d) {
  node_read_pending_ = false;
  const auto g = std::exchange(revocation_.read, 0);  // a revocation read waiting for this reply
  if (ec) node_watch_ = nullptr;  // getData sets no watch when it fails
  if (ec == zk_errc::no_node) run(fsm_.on_node_deleted());
  else if (!ec && d.stat.ephemeral_owner != session_id_) run(fsm_.on_node_checked({}, false));  // another session's
  else if (!ec) {
    node_data_ = node_read{d.data, d.stat.version};
    follow_node_watch();
  }
  // (lost with the connection: set again after the reconnect)
  answer_revocation_read(g, ec, d.data, d.stat.version);
}

void hold::follow_node_watch() {
  s_->wait_watch(node_watch_, watch_handler([weak = weak_from_this(), w = node_watch_](error_code ec, watch_event ev) {
    auto self = weak.lock();
    if (!self || self->node_watch_ != w || ec) return;  // the session's end reaches us by its listener
    self->node_watch_ = nullptr;  // spent
    self->node_data_.reset();
    if (ev.type == watch_event_type::deleted) return self->run(self->fsm_.on_node_deleted());
    // written to (a Revoker's "__REVOKE__", an operator's set): still ours, watch it again; a
    // revocation read that follows is answered by that read
    if (ev.type != watch_event_type::changed) return;
    self->watch_node();
    if (auto g = std::exchange(self->revocation_.watching, 0))
      self->run_revocation(self->revocation_.fsm.on_watch_event(g, {}, ev.type));
  }));
}

void hold::complete_lost_waiters(error_code ec) {
  auto waiters = std::move(lost_waiters_);
  lost_waiters_.clear();
  for (auto& w : waiters) w->complete(ec);
  auto deadline = std::move(deadline_waiters_);
  deadline_waiters_.clear();
  for (auto& w : deadline) w.op->complete(ec);
  run_revocation(revocation_.fsm.on_hold_ended(ec));
}

void hold::run(const hold_fsm::actions& actions) {
  for (const auto& a : actions) {
    switch (a.type) {
      case sansio::request::timer:
        if (a.slot == hold_fsm::backoff_timer) {
          // The session keeps us meanwhile (the delete is still owed): a strong reference is no cycle.
          backoff_timer_.expires_after(a.after);
          backoff_timer_.async_wait([self = shared_from_this()](error_code ec) {
            if (!ec) self->run(self->fsm_.on_backoff_due());
          });
          break;
        }
        deadline_timer_.expires_at(a.at);
        deadline_timer_.async_wait([weak = weak_from_this()](error_code ec) {
          if (ec) return;
          if (auto self = weak.lock()) self->check_clock();
        });
        break;
      case sansio::request::cancel_timer:
        (a.slot == hold_fsm::backoff_timer ? backoff_timer_ : deadline_timer_).cancel();
        break;
      case sansio::request::exists:  // the keepalive: exists on our node
        send_keepalive();
        break;
      case sansio::request::notify:
        on_outcome(a);
        break;
      default: break;  // (hold_fsm makes no other request)
    }
  }
  // (callers hold a strong reference: dropping this one never destroys us mid-call)
  if (owed_ && !fsm_.release_owed()) {
    owed_ = false;
    s_->drop_owed(this);
  }
}

void hold::on_outcome(const sansio::request& a) {
  switch (a.outcome_kind<hold_outcome>()) {
    case hold_outcome::send_release:
      send_release();
      break;
    case hold_outcome::report_lost:
      deadline_timer_.cancel();
      metrics_.lost();
      complete_lost_waiters(a.ec);  // errc::lock_lost naming its cause
      remove_downgrade_mark();  // no longer a holder: readers must not count on it
      lost_signal_.emit(asio::cancellation_type::terminal);
      break;
    case hold_outcome::complete_release:
      if (auto w = std::move(release_waiter_)) w->complete(a.ec);
      break;
    case hold_outcome::deadline_near:
      for (auto it = deadline_waiters_.begin(); it != deadline_waiters_.end(); ++it)
        if (it->id == a.id) {
          auto op = std::move(it->op);
          deadline_waiters_.erase(it);
          op->complete({});
          break;
        }
      break;
    case hold_outcome::report_release_failed:
      // Nobody may wait for the outcome (a guard destroyed without release): never silent.
      s_->log(log_level::error, delete_refused_message(node_, a.ec));
      break;
  }
}

void hold::release_one(void_handler h) {
  pending<void(error_code)>::ptr op;
  if (h) op = pending<void(error_code)>::make(std::move(h), s_->executor());
  if (fsm_.status() != lock_status::released && --count_ > 0) {
    if (op) op->complete({});
    return;
  }
  // A local hold's node is its queue's: a local handoff or the node's release, the queue decides.
  if (is_local()) return release_local_hold(*local_queue_owner_, shared_from_this(), std::move(op));
  bool was_open = fsm_.status() != lock_status::released;
  if (op) {
    if (release_waiter_) release_waiter_->complete(errc::already_released);
    release_waiter_ = op;
  }
  run(fsm_.release(static_cast<bool>(op)));
  if (fsm_.release_owed() && !owed_) {
    owed_ = true;
    s_->keep_owed(shared_from_this());
  }
  if (was_open) end_released();
}

void hold::end_released() {
  metrics_.released();  // (a lost one counted its loss already)
  deadline_timer_.cancel();
  complete_lost_waiters(errc::already_released);
  drop_revoke_watch();
}

// The release: a plain delete. Its *deleted* event is our successor's turn when we were its
// last blocker (no data write ever grants: see contender_marker).
void hold::send_release() {
  session_impl::send_batch together(s_.get());
  remove_downgrade_mark();  // first: a release seen complete leaves nothing
  s_->remove(node_, -1, void_handler([self = shared_from_this()](error_code ec) {
    self->run(self->fsm_.on_release_reply(ec));
  }));
}

// A local hold's machine is in its local mode: it never sends (the node is the queue's).
void hold::local_suspended() { run(fsm_.on_suspended()); }
void hold::local_connected(bool same_session) { run(fsm_.on_connected(same_session)); }
void hold::local_session_ended(error_code why) { run(fsm_.on_session_ended(why)); }

void hold::local_release() {
  run(fsm_.release(false));
  end_released();
}

// Best effort: a mark that stays (the connection lost) goes with the release's retry or with
// the session; until then it is the mark of a node that is gone, which nobody reads.
void hold::remove_downgrade_mark() {
  if (downgrade_mark_.empty()) return;
  s_->remove(downgrade_mark_, -1, void_handler([self = shared_from_this(), mark = downgrade_mark_](error_code ec) {
    bool gone = !ec || ec == zk_errc::no_node || ec == condition::session_lost;
    if (gone && self->downgrade_mark_ == mark) self->downgrade_mark_.clear();
  }));
}

lock_guard make_guard(std::shared_ptr<hold> h) {
  auto ex = h->session()->executor();
  return access::construct<lock_guard>(std::move(h), std::move(ex));
}

}  // namespace zklock::detail
