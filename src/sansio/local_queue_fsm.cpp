#include "sansio/local_queue_fsm.hpp"

#include "sansio/grant_rule.hpp"

#include <algorithm>
#include <utility>

namespace zklock::detail {

namespace {
sansio::request act(local_outcome k, std::uint64_t waiter = 0, error_code ec = {}, std::uint32_t value = 0) {
  return sansio::request::outcome(k, waiter, ec, value);
}
}  // namespace

// Hand the node to the next local waiter without asking anyone? Only while the fairness
// budget lasts, or while a fresh listing showed nobody else queued.
bool local_queue_fsm::may_hand_off() const noexcept {
  if (grants_ >= max_generations) return false;
  return grants_ < max_grants_ || others_ == others::none;
}

void local_queue_fsm::grant_head(actions& out) {
  holder_ = queue_.front().id;
  queue_.pop_front();
  out.push_back(act(local_outcome::grant, *holder_, {}, grants_));
  ++grants_;
  // Learn early (while the holder works) whether another process waits: the next handoff
  // then needs no round trip.
  if (!queue_.empty() && others_ == others::unknown && !listing_) {
    listing_ = true;
    out.push_back(sansio::request::get_children_of(0, {}, queue_watch_slot));
  }
}

void local_queue_fsm::release_node(actions& out) {
  node_ = node_state::releasing;
  others_ = others::unknown;
  listing_ = false;
  out.push_back(act(local_outcome::release_node));
}

void local_queue_fsm::fail_all(actions& out, error_code ec) {
  for (const auto& w : queue_) out.push_back(act(local_outcome::fail, w.id, ec));
  queue_.clear();
}

void local_queue_fsm::next(actions& out) {
  if (holder_) {
    if (node_ == node_state::held && !queue_.empty() && others_ == others::unknown && !listing_) {
      listing_ = true;
      out.push_back(sansio::request::get_children_of(0, {}, queue_watch_slot));
    }
    return;
  }
  if (queue_.empty()) {
    if (node_ == node_state::held || node_ == node_state::lost) {
      release_node(out);
    } else if (node_ == node_state::acquiring && !cancel_sent_) {
      cancel_sent_ = true;
      out.push_back(act(local_outcome::cancel_node));
    }
    return;
  }
  switch (node_) {
    case node_state::none:
      node_ = node_state::acquiring;
      cancel_sent_ = false;
      acquire_try_ = queue_.front().try_once;
      out.push_back(act(local_outcome::acquire_node, 0, {}, queue_.front().try_once ? 1 : 0));
      return;
    case node_state::acquiring:
    case node_state::releasing:
      return;  // its completion calls us again
    case node_state::lost:
      release_node(out);
      return;
    case node_state::held:
      if (may_hand_off()) {
        grant_head(out);
      } else if (grants_ < max_generations && others_ == others::unknown) {
        if (!listing_) {
          listing_ = true;
          out.push_back(sansio::request::get_children_of(0, {}, queue_watch_slot));
        }
      } else {
        release_node(out);  // someone else waits (or the generations ran out): queue again behind them
      }
      return;
  }
}

local_queue_fsm::actions local_queue_fsm::enqueue(std::uint64_t id, bool try_once) {
  actions out;
  if (try_once && (holder_ || !queue_.empty())) {
    out.push_back(act(local_outcome::fail, id, errc::lock_busy));
    return out;
  }
  queue_.push_back({id, try_once});
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::cancel(std::uint64_t id, error_code reason) {
  actions out;
  auto it = std::find_if(queue_.begin(), queue_.end(), [id](const waiter& w) { return w.id == id; });
  if (it == queue_.end()) return out;
  queue_.erase(it);
  out.push_back(act(local_outcome::fail, id, reason));
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::release(std::uint64_t id) {
  actions out;
  if (holder_ != id) return out;
  holder_.reset();
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::on_node_acquired(error_code ec) {
  actions out;
  if (node_ != node_state::acquiring) return out;
  const bool cancelled = std::exchange(cancel_sent_, false);
  node_ = node_state::none;
  if (ec && acquire_try_) {
    // A try-once acquire failed (busy, or no connection to ask through): its waiter (if still
    // there) fails with that; the others, queued behind it meanwhile, get a waiting acquire.
    if (!queue_.empty() && queue_.front().try_once) {
      out.push_back(act(local_outcome::fail, queue_.front().id, ec));
      queue_.pop_front();
    }
  } else if (!ec) {
    node_ = node_state::held;
    grants_ = 0;
    others_ = others::unknown;
    listing_ = false;
  } else if (!cancelled) {
    fail_all(out, ec);  // what every waiter of the mutex would get (session ended, no_auth, ...)
  }
  // (cancelled by us: nobody was waiting for it; waiters that came since get a new acquire,
  // which meets the same error if it was not the cancellation's)
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::on_node_released() {
  actions out;
  if (node_ != node_state::releasing) return out;
  node_ = node_state::none;
  grants_ = 0;
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::on_node_lost(error_code session_end) {
  actions out;
  if (node_ != node_state::held) return out;
  node_ = node_state::lost;
  others_ = others::unknown;
  listing_ = false;
  if (holder_) out.push_back(act(local_outcome::lose_holder, *holder_, errc::lock_lost));
  if (session_end) fail_all(out, session_end);
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::on_session_ended(error_code ec) {
  if (node_ == node_state::held) return on_node_lost(ec);
  // No node held (none, acquiring, releasing) or lost already, its holder told: only the
  // waiters are left to fail; next() cancels an acquire nobody waits for any more.
  actions out;
  fail_all(out, ec);
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::on_queue(bool others_waiting) {
  actions out;
  if (node_ != node_state::held || !listing_) return out;
  listing_ = false;
  others_ = others_waiting ? others::some : others::none;
  next(out);
  return out;
}

local_queue_fsm::actions local_queue_fsm::on_queue_error() { return on_queue(true); }

local_queue_fsm::actions local_queue_fsm::on_queue_changed() {
  actions out;
  if (node_ != node_state::held || listing_) return out;
  others_ = others::unknown;
  next(out);  // lists again if a local waiter needs to know (only the holder's process watches)
  return out;
}

local_queue_machine::actions local_queue_machine::step(const local_queue_fsm::actions& in) const {
  actions out;
  for (const auto& a : in) {
    if (a.type == sansio::request::get_children) out.push_back(sansio::request::get_children_of(epoch_, dir_, local_queue_fsm::queue_watch_slot));
    else out.push_back(a);
  }
  return out;
}

local_queue_machine::actions local_queue_machine::on(const sansio::input& in) {
  if (in.tag != epoch_) return {};  // of a node given up
  if (in.type == sansio::input::reply) {
    if (in.ec) return step(fsm_.on_queue_error());
    bool others = false;
    if (auto r = in.children())
      for (const auto& q : queue_order(r->children))
        if (q.name != node_name_) others = true;
    // the listing's watch waited for first: a listing its answer asks for replaces it
    actions out{sansio::request::wait_for(epoch_, local_queue_fsm::queue_watch_slot)};
    auto next = step(fsm_.on_queue(others));
    out.insert(out.end(), next.begin(), next.end());
    return out;
  }
  if (in.type == sansio::input::watch_fired && !in.ec && in.event == watch_event_type::child)
    return step(fsm_.on_queue_changed());
  return {};  // (the session's changes: the queue's hook looked at them, before_input)
}

}  // namespace zklock::detail
