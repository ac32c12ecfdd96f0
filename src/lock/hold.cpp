#include "lock/hold.hpp"
#include "lock/local_queue.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"
#include "sansio/session_end.hpp"

#include <boost/asio/post.hpp>

namespace zklock::detail {

hold::hold(std::shared_ptr<session_impl> session, bool connected, bool local)
    : s(std::move(session)), fsm(connected, local), deadline_timer(s->executor()), backoff_timer(s->executor()) {}

lock_status hold::status() const noexcept {
  // The session's state is told to its state handlers before our (posted) listener has run:
  // say what it implies now, so that a handler of `suspended` sees maybe_lost.
  auto st = fsm.status();
  if (st != lock_status::held && st != lock_status::maybe_lost) return st;
  switch (s->state()) {
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
  session_id = s->session_id();
  listener = session_listener(s, weak_from_this(), &hold::on_session_state);
  check_clock();
}

void hold::on_session_state(session_state st) {
  if (st == session_state::suspended) {
    run(fsm.on_suspended());
  } else if (is_connected(st)) {
    run(fsm.on_connected(s->session_id() == session_id));
    if (!owns()) remove_downgrade_mark();  // one a loss could not delete while disconnected
    if (st == session_state::reconnected) {
      // our node's watch lost with the connection: setting it again checks the node too
      if (node_watch) check_node();
      else watch_node();
    }
  } else if (st == session_state::expired || st == session_state::closed) {
    run(fsm.on_session_ended(make_lock_lost(lost_cause_of(st, s->session_id() != session_id))));
  }
  check_clock();
}

hold_clock hold::clock() const {
  auto st = s->state();
  return {.now = std::chrono::steady_clock::now(),
          .valid_until = s->valid_until(),
          .last_acknowledged = s->last_acknowledged(),
          .session_timeout = s->negotiated_timeout(),
          .connected = is_connected(st),
          .ended = st == session_state::expired || st == session_state::closed || st == session_state::disconnected};
}

// The validity deadline (see lock_guard::valid_until) and its keepalive: hold_fsm::on_clock decides.
void hold::check_clock() { run(fsm.on_clock(clock())); }

void hold::wait_deadline(std::chrono::steady_clock::duration lead, pending<void(error_code)>::ptr op) {
  auto id = ++next_waiter;
  deadline_waiters.push_back({id, std::move(op)});
  fsm.add_deadline_waiter(id, lead);
  check_clock();  // completes it at once when the deadline is already that close
}

void hold::forget_deadline_waiter(const pending<void(error_code)>* op) {
  std::erase_if(deadline_waiters, [&](const deadline_waiter& w) {
    if (w.op.get() != op) return false;
    fsm.remove_deadline_waiter(w.id);
    return true;
  });
}

// exists on our own node: refreshes the deadline, and finds a node deleted under us.
void hold::send_keepalive() {
  s->exists(node, nullptr, exists_handler([self = shared_from_this()](error_code ec, std::optional<node_stat> st) {
    self->run(self->fsm.on_keepalive_reply(ec, self->node_ours(st), self->clock()));
  }));
}

// After a reconnect: our node must still be there and still our session's (CURATOR-696: a
// holder that finds a node of an older session is not the holder). Only the owner's delete or
// the session's expiry removes it, so this finds an administrator's delete or a replaced session.
void hold::check_node() {
  if (!owns()) return;
  s->exists(node, nullptr, exists_handler([self = shared_from_this()](error_code ec, std::optional<node_stat> st) {
    self->run(self->fsm.on_node_checked(ec, self->node_ours(st)));
  }));
}

void hold::adopt_node_watch(boost::intrusive_ptr<watch_state> w, bool reply_pending, const data_result* last_read) {
  node_watch = std::move(w);
  if (!node_watch) return watch_node();
  if (reply_pending) {
    node_read_pending = true;
    return;
  }
  if (last_read) node_data = node_read{last_read->data, last_read->stat.version};
  follow_node_watch();
}

void hold::watch_node() {
  if (!owns() || is_local() || !watches_node || node_read_pending) return;
  node_read_pending = true;
  node_data.reset();
  s->get_data(node, &node_watch, data_handler([weak = weak_from_this()](error_code ec, data_result d) {
    if (auto self = weak.lock()) self->on_node_watch_reply(ec, d);
  }));
}

void hold::on_node_watch_reply(error_code ec, const data_result& d) {
  node_read_pending = false;
  const auto g = std::exchange(revoke_read, 0);  // a revocation read waiting for this reply
  if (ec) node_watch = nullptr;  // getData sets no watch when it fails
  if (ec == zk_errc::no_node) run(fsm.on_node_deleted());
  else if (!ec && d.stat.ephemeral_owner != session_id) run(fsm.on_node_checked({}, false));  // another session's
  else if (!ec) {
    node_data = node_read{d.data, d.stat.version};
    follow_node_watch();
  }
  // (lost with the connection: set again after the reconnect)
  answer_revocation_read(g, ec, d.data, d.stat.version);
}

void hold::follow_node_watch() {
  s->wait_watch(node_watch, watch_handler([weak = weak_from_this(), w = node_watch](error_code ec, watch_event ev) {
    auto self = weak.lock();
    if (!self || self->node_watch != w || ec) return;  // the session's end reaches us by its listener
    self->node_watch = nullptr;  // spent
    self->node_data.reset();
    if (ev.type == watch_event_type::deleted) return self->run(self->fsm.on_node_deleted());
    // written to (a Revoker's "__REVOKE__", an operator's set): still ours, watch it again; a
    // revocation read that follows is answered by that read
    if (ev.type != watch_event_type::changed) return;
    self->watch_node();
    if (auto g = std::exchange(self->revoke_watching, 0))
      self->run_revocation(self->revocation.on_watch_event(g, {}, ev.type));
  }));
}

void hold::complete_lost_waiters(error_code ec) {
  auto waiters = std::move(lost_waiters);
  lost_waiters.clear();
  for (auto& w : waiters) w->complete(ec);
  auto deadline = std::move(deadline_waiters);
  deadline_waiters.clear();
  for (auto& w : deadline) w.op->complete(ec);
  run_revocation(revocation.on_hold_ended(ec));
}

void hold::run(const hold_fsm::actions& actions) {
  for (const auto& a : actions) {
    switch (a.type) {
      case hold_action::send_release:
        send_release();
        break;
      case hold_action::report_lost:
        deadline_timer.cancel();
        metrics.lost();
        complete_lost_waiters(a.ec);  // errc::lock_lost naming its cause
        remove_downgrade_mark();  // no longer a holder: readers must not count on it
        lost_signal.emit(asio::cancellation_type::terminal);
        break;
      case hold_action::complete_release:
        if (auto w = std::move(release_waiter)) w->complete(a.ec);
        break;
      case hold_action::backoff_release:
        // The session keeps us meanwhile (the delete is still owed): a strong reference is no cycle.
        backoff_timer.expires_after(a.delay);
        backoff_timer.async_wait([self = shared_from_this()](error_code ec) {
          if (!ec) self->run(self->fsm.on_backoff_due());
        });
        break;
      case hold_action::arm_timer:
        deadline_timer.expires_at(a.at);
        deadline_timer.async_wait([weak = weak_from_this()](error_code ec) {
          if (ec) return;
          if (auto self = weak.lock()) self->check_clock();
        });
        break;
      case hold_action::stop_timer:
        deadline_timer.cancel();
        break;
      case hold_action::send_keepalive:
        send_keepalive();
        break;
      case hold_action::deadline_near:
        for (auto it = deadline_waiters.begin(); it != deadline_waiters.end(); ++it)
          if (it->id == a.waiter) {
            auto op = std::move(it->op);
            deadline_waiters.erase(it);
            op->complete({});
            break;
          }
        break;
      case hold_action::report_release_failed:
        // Nobody may wait for the outcome (a guard destroyed without release): never silent.
        s->log(log_level::error, "zklock: the server refused to delete lock node " + node + " (" + a.ec.message() +
                                     "); it blocks the lock until the session ends");
        break;
    }
  }
  // (callers hold a strong reference: dropping this one never destroys us mid-call)
  if (owed && !fsm.release_owed()) {
    owed = false;
    s->drop_owed(this);
  }
}

void hold::release_one(void_handler h) {
  pending<void(error_code)>::ptr op;
  if (h) op = pending<void(error_code)>::make(std::move(h), s->executor());
  if (fsm.status() != lock_status::released && --count > 0) {
    if (op) op->complete({});
    return;
  }
  // A local hold's node is its queue's: a local handoff or the node's release, the queue decides.
  if (is_local()) return release_local_hold(*local_queue_owner, shared_from_this(), std::move(op));
  bool was_open = fsm.status() != lock_status::released;
  if (op) {
    if (release_waiter) release_waiter->complete(errc::already_released);
    release_waiter = op;
  }
  run(fsm.release(static_cast<bool>(op)));
  if (fsm.release_owed() && !owed) {
    owed = true;
    s->keep_owed(shared_from_this());
  }
  if (was_open) end_released();
}

void hold::end_released() {
  metrics.released();  // (a lost one counted its loss already)
  deadline_timer.cancel();
  complete_lost_waiters(errc::already_released);
  drop_revoke_watch();
}

// The release: a plain delete. Its *deleted* event is our successor's turn when we were its
// last blocker (no data write ever grants: see contender_marker).
void hold::send_release() {
  session_impl::send_batch together(s.get());
  remove_downgrade_mark();  // first: a release seen complete leaves nothing
  s->remove(node, -1, void_handler([self = shared_from_this()](error_code ec) {
    self->run(self->fsm.on_release_reply(ec));
  }));
}

lock_guard make_guard(std::shared_ptr<hold> h) {
  auto ex = h->s->executor();
  return access::construct<lock_guard>(std::move(h), std::move(ex));
}

}  // namespace zklock::detail
