#include "sansio/hold_machine.hpp"

#include "sansio/session_end.hpp"

#include <utility>

namespace zklock::detail {

namespace {
void append(hold_machine::actions& out, hold_machine::actions more) {
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}
sansio::request remove_node(std::uint64_t tag, std::string path) { return {.type = sansio::request::remove, .tag = tag, .path = std::move(path)}; }
}  // namespace

lock_status hold_machine::status(session_state now) const noexcept {
  auto st = fsm_.status();
  if (st != lock_status::held && st != lock_status::maybe_lost) return st;
  switch (now) {
    case session_state::suspended:
    case session_state::connecting: return lock_status::maybe_lost;
    case session_state::expired:
    case session_state::closed:
    case session_state::disconnected: return lock_status::lost;
    default: return st;
  }
}

hold_clock hold_machine::clock() const {
  const auto st = seen_.state;
  return {.now = seen_.now,
          .valid_until = seen_.valid_until,
          .last_acknowledged = seen_.last_acknowledged,
          .session_timeout = seen_.session_timeout,
          .connected = is_connected(st),
          .ended = st == session_state::expired || st == session_state::closed || st == session_state::disconnected};
}

hold_machine::actions hold_machine::start(const view& now) {
  seen_ = now;
  actions out{sansio::request::follow()};
  append(out, held(fsm_.on_clock(clock())));
  return out;
}

hold_machine::actions hold_machine::on(const sansio::input& in) {
  seen_ = in.seen;
  switch (in.type) {
    case sansio::input::session: return on_session(in.state);
    case sansio::input::timer_due:
      if (in.tag == hold_fsm::backoff_due) return held(fsm_.on_backoff_due());
      return held(fsm_.on_clock(clock()));
    case sansio::input::watch_fired:
      if (in.tag == node_event) return on_node_event(in);
      if (in.tag > revoke_event && in.tag < revoke_removed) {
        revoke_watch_set_ = false;
        return revoking(revocation_.on_watch_event(in.tag - revoke_event, in.ec, in.event));
      }
      return {};
    case sansio::input::reply: return on_reply(in);
    case sansio::input::connection:
      if (in.ec) return {};  // the session is over: its end reaches us by following it
      if (in.tag == revocation_connection) return revoking(revocation_.on_connected());
      if (in.tag == write_back_connection && owns(seen_.state) && kept_)
        return {sansio::request::set_data_of(write_back, node_, *kept_, revocation_.reported_version())};
      return {};
    default: return {};
  }
}

// The one ladder from the session's state to the hold's: the state a change told, the session's
// id as it is now (another id: the session was replaced, our node was the old one's).
hold_machine::actions hold_machine::on_session(session_state told) {
  const bool replaced = seen_.session_id != session_id_;
  actions out;
  if (told == session_state::suspended) {
    out = held(fsm_.on_suspended());
  } else if (is_connected(told)) {
    out = held(fsm_.on_connected(!replaced));
    if (!owns(seen_.state)) append(out, remove_mark());  // one a loss could not delete while disconnected
    // our node's watch lost with the connection: setting it again checks the node too
    if (told == session_state::reconnected && !local_)
      append(out, node_watch_set_ || node_read_pending_ ? check_node() : watch_node());
  } else if ((told == session_state::expired || told == session_state::closed) && !local_) {
    out = held(fsm_.on_session_ended(make_lock_lost(lost_cause_of(told, replaced))));
  }
  append(out, held(fsm_.on_clock(clock())));
  return out;
}

hold_machine::actions hold_machine::on_reply(const sansio::input& in) {
  const auto t = in.tag;
  if (t == hold_fsm::keepalive) return held(fsm_.on_keepalive_reply(in.ec, node_ours(in), clock()));
  if (t == check) return held(fsm_.on_node_checked(in.ec, node_ours(in)));
  if (t == node_read) return on_node_read(in.ec, in.data());
  if (t == plain_read) {
    auto d = in.data();
    return answer_revocation_read(std::exchange(rev_read_, 0), in.ec, d ? std::string_view(d->data) : std::string_view{},
                                  d ? d->stat.version : 0);
  }
  if (t == release_reply) return held(fsm_.on_release_reply(in.ec));
  if (t == mark_removed) {
    // Best effort: a mark that stays (the connection lost) goes with the release's retry or with
    // the session; until then it is the mark of a node that is gone, which nobody reads.
    bool gone = !in.ec || in.ec == zk_errc::no_node || in.ec == condition::session_lost;
    if (gone && mark_ == mark_removing_) mark_.clear();
    return {};
  }
  if (t == write_back) {
    // Over the request just read only (its version): a later write is read, and answered, in
    // turn. Then watch again. A write lost with the connection is made again once connected.
    if (!owns(seen_.state)) return {};
    if (in.ec != condition::connection_lost) return revoking(revocation_.add_waiter());
    return {sansio::request::connection(write_back_connection)};
  }
  if (t > revoke_read && t < revoke_event) {  // a local hold's own revocation read
    const auto g = t - revoke_read;
    auto d = in.data();
    actions out;
    if (!in.ec && !revocation_.ended()) {
      // hear when it fires (or the session takes it): only after a successful read
      revoke_watch_set_ = true;
      out.push_back(sansio::request::wait_for(revoke_event + g, revoke_watch));
    }
    append(out, revoking(revocation_.on_data(g, in.ec, d ? std::string_view(d->data) : std::string_view{},
                                             d ? d->stat.version : 0, connected())));
    if (!in.ec && revocation_.ended()) {
      // the hold ended while this read was in flight: its watch was set after the end
      revoke_watch_set_ = true;
      append(out, drop_revoke_watch());
    }
    return out;
  }
  if (t > revoke_removed) {
    revoke_watch_set_ = in.ec == condition::connection_lost;  // (the C client keeps it then)
    return revoking(revocation_.on_watch_removed(t - revoke_removed, in.ec, connected()));
  }
  return {};
}

// The reply to the getData that sets our node's watch (ours, or the acquire's): no node means
// deleted by someone else.
hold_machine::actions hold_machine::on_node_read(error_code ec, const data_result* d) {
  node_read_pending_ = false;
  const auto g = std::exchange(rev_read_, 0);  // a revocation read waiting for this reply
  actions out;
  if (ec) node_watch_set_ = false;  // getData sets no watch when it fails
  if (ec == zk_errc::no_node) {
    out = held(fsm_.on_node_deleted());
  } else if (!ec && d->stat.ephemeral_owner != session_id_) {
    out = held(fsm_.on_node_checked({}, false));  // another session's
  } else if (!ec) {
    node_data_ = node_read_result{d->data, d->stat.version};
    node_watch_set_ = true;
    out.push_back(sansio::request::wait_for(node_event, node_watch));
  }
  // (lost with the connection: set again after the reconnect)
  append(out, answer_revocation_read(g, ec, d && !ec ? std::string_view(d->data) : std::string_view{},
                                     d && !ec ? d->stat.version : 0));
  return out;
}

hold_machine::actions hold_machine::on_node_event(const sansio::input& in) {
  if (in.ec) return {};  // the session's end reaches us by following it
  node_watch_set_ = false;  // spent
  node_data_.reset();
  if (in.event == watch_event_type::deleted) return held(fsm_.on_node_deleted());
  // written to (a Revoker's "__REVOKE__", an operator's set): still ours, watch it again; a
  // revocation read that follows is answered by that read
  if (in.event != watch_event_type::changed) return {};
  actions out = watch_node();
  if (auto g = std::exchange(rev_watching_, 0)) append(out, revoking(revocation_.on_watch_event(g, {}, in.event)));
  return out;
}

hold_machine::actions hold_machine::watch_node() {
  if (!owns(seen_.state) || local_ || !watches_node_ || node_read_pending_) return {};
  node_read_pending_ = true;
  node_data_.reset();
  return {sansio::request::get_data_of(node_read, node_, node_watch)};
}

// After a reconnect: our node must still be there and still our session's (CURATOR-696: a
// holder that finds a node of an older session is not the holder). Only the owner's delete or
// the session's expiry removes it, so this finds an administrator's delete or a replaced session.
hold_machine::actions hold_machine::check_node() {
  if (!owns(seen_.state)) return {};
  return {sansio::request::exists_of(check, node_)};
}

hold_machine::actions hold_machine::remove_mark() {
  if (mark_.empty()) return {};
  mark_removing_ = mark_;
  return {remove_node(mark_removed, mark_)};
}

hold_machine::actions hold_machine::held(const hold_fsm::actions& in) {
  actions out;
  for (const auto& a : in) {
    if (a.type == sansio::request::exists) {  // the keepalive: exists on our own node
      out.push_back(sansio::request::exists_of(a.tag, node_));
      continue;
    }
    if (a.type != sansio::request::notify) {
      out.push_back(a);
      continue;
    }
    switch (a.outcome_kind<hold_outcome>()) {
      case hold_outcome::send_release:
        // A plain delete (its *deleted* event is our successor's turn when we were its last
        // blocker); the downgrade mark first, so that a release seen complete leaves nothing.
        append(out, remove_mark());
        out.push_back(remove_node(release_reply, node_));
        break;
      case hold_outcome::report_lost:
        out.push_back(sansio::request::stop_timer(hold_fsm::clock_timer));
        out.push_back(a);  // the lost and deadline waiters
        append(out, revoking(revocation_.on_hold_ended(a.ec)));
        append(out, remove_mark());  // no longer a holder: readers must not count on it
        out.push_back(sansio::request::outcome(hold_outcome::signal_lost));
        break;
      default: out.push_back(a);
    }
  }
  return out;
}

hold_machine::actions hold_machine::revoking(const revocation_fsm::actions& in) {
  actions out;
  for (const auto& a : in) {
    switch (a.type) {
      case sansio::request::get_data:  // our node's data, with a watch: tagged with its generation
        if (!local_) append(out, read_through_node_watch(a.tag));
        else out.push_back(sansio::request::get_data_of(revoke_read + a.tag, node_, revoke_watch));
        break;
      case sansio::request::remove_watch:
        if (local_) {
          out.push_back(sansio::request::remove_watch_of(revoke_removed + a.tag, revoke_watch));
          break;
        }
        // our node's watch stays for the hold's life: nothing to remove
        if (rev_watching_ == a.tag) rev_watching_ = 0;
        append(out, revoking(revocation_.on_watch_removed(a.tag, {}, connected())));
        break;
      case sansio::request::await_connection: out.push_back(sansio::request::connection(revocation_connection)); break;
      case sansio::request::notify:
        if (a.outcome_kind<revocation_outcome>() == revocation_outcome::check_node) {
          append(out, check_node());
          break;
        }
        out.push_back(sansio::request::outcome(hold_outcome::revoked, 0, a.ec));
        if (kept_ && !a.ec) out.push_back(sansio::request::set_data_of(write_back, node_, *kept_, revocation_.reported_version()));
        break;
      default: break;  // (revocation_fsm makes no other request)
    }
  }
  return out;
}

// A hold's revocation reads go through its node's watch, which it keeps anyway: one data watch
// on the node, and no request when no write came since the watch's read (a grant's revocation
// read is answered by the acquire's read of its node).
hold_machine::actions hold_machine::read_through_node_watch(std::uint64_t generation) {
  if (node_watch_set_ && node_data_ && !node_read_pending_)
    return answer_revocation_read(generation, {}, node_data_->data, node_data_->version);
  rev_read_ = generation;  // answered by the reply of the getData that sets the watch
  if (node_read_pending_) return {};
  if (node_watch_set_) return {sansio::request::get_data_of(plain_read, node_)};  // set, its read unknown: no second watch
  auto out = watch_node();
  if (!node_read_pending_) {
    // nothing sent (the hold has ended): the read fails as the session's end would
    rev_read_ = 0;
    return revoking(revocation_.on_data(generation, errc::lock_lost, {}, 0, connected()));
  }
  return out;
}

// What a read of our node said, given to the revocation read of `generation` (none: 0) that it
// answers: a successful read's watch is node_watch, whose change is then that read's event.
hold_machine::actions hold_machine::answer_revocation_read(std::uint64_t generation, error_code ec,
                                                          std::string_view data, std::int32_t version) {
  if (generation == 0) return {};
  if (!ec) rev_watching_ = generation;
  return revoking(revocation_.on_data(generation, ec, data, version, connected()));
}

// A local hold's node stays when the hold ends (the queue hands it to the next local holder):
// its data watch goes with the hold, or it would stay registered and fire for a request meant
// for a later holder. (A hold's own node is deleted at its end, which takes the watch.)
hold_machine::actions hold_machine::drop_revoke_watch() {
  if (!local_ || !revoke_watch_set_) return {};
  revoke_watch_set_ = false;
  return {sansio::request::remove_watch_of(revoke_watch_dropped, revoke_watch)};
}

hold_machine::actions hold_machine::release(bool caller_waits, const view& now) {
  seen_ = now;
  // The session's changes reach us posted: a caller that saw it suspended first (its own
  // async_wait_state) releases before we heard. The release goes by the state as it is now: while
  // disconnected it completes at once (release_pending), its delete owed until the reconnect,
  // not sent into a connection that is being made again.
  actions out;
  if (now.state == session_state::suspended && fsm_.hears_connected()) out = on_session(session_state::suspended);
  append(out, held(fsm_.release(caller_waits)));
  return out;
}

hold_machine::actions hold_machine::end_released(const view& now) {
  seen_ = now;
  actions out{sansio::request::stop_timer(hold_fsm::clock_timer)};
  append(out, revoking(revocation_.on_hold_ended(errc::already_released)));
  append(out, drop_revoke_watch());
  return out;
}

hold_machine::actions hold_machine::lose(error_code why) { return held(fsm_.on_session_ended(why)); }

hold_machine::actions hold_machine::add_deadline_waiter(std::uint64_t id, std::chrono::steady_clock::duration lead,
                                                        const view& now) {
  seen_ = now;
  fsm_.add_deadline_waiter(id, lead);
  return held(fsm_.on_clock(clock()));  // due at once when the deadline is already that close
}

hold_machine::actions hold_machine::add_revocation_waiter(const view& now) {
  seen_ = now;
  return revoking(revocation_.add_waiter());
}

hold_machine::actions hold_machine::remove_revocation_waiter(const view& now) {
  seen_ = now;
  return revoking(revocation_.remove_waiter());
}

hold_machine::actions hold_machine::keep_data(std::string data, const view& now) {
  seen_ = now;
  kept_ = std::move(data);
  return revoking(revocation_.add_waiter());  // counted as a waiter: the watch stays set while we hold
}

hold_machine::actions hold_machine::adopt_node_watch(bool set, bool reply_pending, const data_result* last_read,
                                                     const view& now) {
  seen_ = now;
  if (!set) return watch_node();
  if (reply_pending) {
    node_read_pending_ = true;
    return {};
  }
  node_watch_set_ = true;
  if (last_read) node_data_ = node_read_result{last_read->data, last_read->stat.version};
  return {sansio::request::wait_for(node_event, node_watch)};
}

}  // namespace zklock::detail
