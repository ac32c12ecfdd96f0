#include "lock/hold.hpp"
#include "lock/local_queue.hpp"
#include "sansio/node_data.hpp"

namespace zklock::detail {

hold::hold(private_tag, std::shared_ptr<session_impl> s, hold_grant g)
    : s_(std::move(s)), token_(g.token), kind_(g.kind), metrics_(std::move(g.metrics)) {}

std::shared_ptr<hold> hold::make(std::shared_ptr<session_impl> s, hold_grant g, hold_machine::params p) {
  p.node = std::move(g.node);
  p.session_id = s->session_id();
  auto h = std::make_shared<hold>(private_tag{}, s, std::move(g));
  h->r_ = std::make_shared<runner_type>(std::move(s), nullptr, hold_machine(std::move(p)), hold_hook{h});
  h->r_->start(h->r_->machine().start(h->r_->seen()));  // follows the session from now on
  return h;
}

std::shared_ptr<hold> hold::granted(std::shared_ptr<session_impl> s, hold_grant g, bool watches_node) {
  const bool connected = is_connected(s->state());
  return make(std::move(s), std::move(g), {.node = {}, .session_id = 0, .connected = connected, .local = false, .watches_node = watches_node});
}

std::shared_ptr<hold> hold::local(std::shared_ptr<session_impl> s, hold_grant g, bool held,
                                  std::shared_ptr<local_queue> queue) {
  auto h = make(std::move(s), std::move(g), {.node = {}, .session_id = 0, .connected = held, .local = true, .watches_node = false});
  h->local_queue_owner_ = std::move(queue);
  return h;
}

void hold::wait_deadline(std::chrono::steady_clock::duration lead, pending<void(error_code)>::ptr op) {
  auto id = ++next_waiter_;
  deadline_waiters_.push_back({id, std::move(op)});
  execute(r_->machine().add_deadline_waiter(id, lead, r_->seen()));
}

void hold::forget_deadline_waiter(const pending<void(error_code)>* op) {
  std::erase_if(deadline_waiters_, [&](const deadline_waiter& w) {
    if (w.op.get() != op) return false;
    r_->machine().remove_deadline_waiter(w.id);
    return true;
  });
}

void hold::adopt_node_watch(boost::intrusive_ptr<watch_state> w, bool reply_pending, const data_result* last_read) {
  const bool set = w != nullptr;
  if (set) r_->adopt_watch(hold_machine::node_watch, std::move(w));
  execute(r_->machine().adopt_node_watch(set, reply_pending, last_read, r_->seen()));
}

void hold::on_node_watch_reply(error_code ec, const data_result& d) {
  r_->feed({.type = sansio::input::reply, .tag = hold_machine::node_read, .ec = ec, .value = d});
}

void hold::complete_lost_waiters(error_code ec) {
  auto waiters = std::move(lost_waiters_);
  lost_waiters_.clear();
  for (auto& w : waiters) w->complete(ec);
  auto deadline = std::move(deadline_waiters_);
  deadline_waiters_.clear();
  for (auto& w : deadline) w.op->complete(ec);
}

// (the hook holds a strong reference while calling: dropping this one never destroys us mid-call)
void hold::settle_owed() {
  if (owed_ && !machine().release_owed()) {
    owed_ = false;
    s_->drop_owed(this);
  }
}

void hold::on_outcome(const sansio::request& a) {
  switch (a.outcome_kind<hold_outcome>()) {
    case hold_outcome::send_release: break;  // (hold_machine sends it)
    case hold_outcome::report_lost:
      metrics_.lost();
      complete_lost_waiters(a.ec);  // errc::lock_lost naming its cause
      break;
    case hold_outcome::signal_lost: lost_signal_.emit(asio::cancellation_type::terminal); break;
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
      s_->log(log_level::error, delete_refused_message(node(), a.ec));
      break;
    case hold_outcome::revoked: complete_revocation_waiters(a.ec); break;
  }
}

void hold::release_one(void_handler h) {
  pending<void(error_code)>::ptr op;
  if (h) op = pending<void(error_code)>::make(std::move(h), s_->executor());
  if (machine().status() != lock_status::released && --count_ > 0) {
    if (op) op->complete({});
    return;
  }
  // A local hold's node is its queue's: a local handoff or the node's release, the queue decides.
  if (is_local()) return release_local_hold(*local_queue_owner_, shared_from_this(), std::move(op));
  bool was_open = machine().status() != lock_status::released;
  if (op) {
    if (release_waiter_) release_waiter_->complete(errc::already_released);
    release_waiter_ = op;
  }
  execute(r_->machine().release(static_cast<bool>(op), r_->seen()));
  if (machine().release_owed() && !owed_) {
    owed_ = true;
    s_->keep_owed(shared_from_this());
  }
  if (was_open) end_released();
}

void hold::end_released() {
  metrics_.released();  // (a lost one counted its loss already)
  complete_lost_waiters(errc::already_released);
  execute(r_->machine().end_released(r_->seen()));
}

void hold::local_session_ended(error_code why) { execute(r_->machine().lose(why)); }

void hold::local_release() {
  execute(r_->machine().release(false, r_->seen()));
  end_released();
}

lock_guard make_guard(std::shared_ptr<hold> h) {
  auto ex = h->session()->executor();
  return access::construct<lock_guard>(std::move(h), std::move(ex));
}

}  // namespace zklock::detail
