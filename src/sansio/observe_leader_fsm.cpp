#include "sansio/observe_leader_fsm.hpp"

#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"
#include "sansio/revocation_fsm.hpp"
#include "sansio/session_end.hpp"

#include <zklock/path.hpp>

#include <utility>

namespace zklock::detail {

namespace {
bool lost_connection(const error_code& ec) { return ec == condition::connection_lost; }
}  // namespace

observe_leader_fsm::actions observe_leader_fsm::on(const sansio::input& in) {
  static const std::vector<std::string> none;
  switch (in.type) {
    case sansio::input::reply:
      switch (in.tag) {
        case tag::children: return on_children(in.ec, in.children() ? in.children()->children : none);
        case tag::data: {
          auto d = in.data();
          return on_data(in.ec, d ? std::string_view(d->data) : std::string_view(), d ? d->stat.ctime : 0);
        }
        case tag::exists: return on_exists(in.ec, in.node_exists());
        case tag::watch_removed: return on_watch_removed(in.ec);
        default: return {};
      }
    case sansio::input::watch_fired: return on_watch_fired(in.ec);
    case sansio::input::timer_due: return on_restore_timeout();
    case sansio::input::connection: return in.ec ? on_session_ended(in.ec) : on_connected();
    case sansio::input::cancelled: return cancel(in.ec, in.total, in.connected);
    case sansio::input::session: break;  // (never asked for: it follows the session by await_connection)
  }
  return {};
}

observe_leader_fsm::actions observe_leader_fsm::start(session_state st) {
  if (auto ec = session_end_error(st)) {
    phase_ = phase::finished;
    return complete(ec, std::nullopt);
  }
  return list();
}

observe_leader_fsm::actions observe_leader_fsm::list() {
  phase_ = phase::listing;
  return {sansio::request::get_children_of(tag::children, path_)};
}

observe_leader_fsm::actions observe_leader_fsm::decide(std::optional<leader_info> now) {
  if (mode_ == mode::read_once || now != known_) {
    phase_ = phase::finished;
    return complete({}, std::move(now));
  }
  // The leader is `known_`: set the watch that tells when it is not.
  phase_ = phase::arming;
  if (known_) {
    purpose_ = purpose::leader;
    return {sansio::request::get_data_of(tag::data, known_->node, watch_slot)};
  }
  purpose_ = purpose::nobody;
  return {sansio::request::get_children_of(tag::children, path_, watch_slot)};
}

observe_leader_fsm::actions observe_leader_fsm::remove_then(next then) {
  phase_ = phase::removing;
  then_ = then;
  return {sansio::request::remove_watch_of(tag::watch_removed, watch_slot)};
}

observe_leader_fsm::actions observe_leader_fsm::await_connection(next then) {
  if (cancelled_ && !remove_when_connected_) {  // nothing left to clean up
    phase_ = phase::finished;
    return complete({}, std::nullopt);
  }
  phase_ = phase::awaiting_connection;
  then_ = then;
  actions out{sansio::request::connection(tag::connection)};
  if (early_completion_allowed(false)) {
    auto c = complete({}, std::nullopt);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

observe_leader_fsm::actions observe_leader_fsm::fail(error_code ec) {
  phase_ = phase::finished;
  return complete(ec == condition::session_lost ? session_end_error(ec) : ec, std::nullopt);
}

observe_leader_fsm::actions observe_leader_fsm::complete(error_code ec, std::optional<leader_info> r) {
  if (completed_) return {};
  completed_ = true;
  if (cancelled_) ec = cancel_reason_, r.reset();
  completion_ = std::move(r);
  return {sansio::request::done(ec)};
}

// A request answered after cancellation: the watch it may have set goes, then the completion.
observe_leader_fsm::actions observe_leader_fsm::after_cancel() {
  if (phase_ == phase::arming) return remove_then(next::complete);
  phase_ = phase::finished;  // a plain read: nothing set
  return complete({}, std::nullopt);
}

observe_leader_fsm::actions observe_leader_fsm::on_children(error_code ec, const std::vector<std::string>& children) {
  if (phase_ == phase::listing) {
    if (cancelled_) return after_cancel();
    if (ec == zk_errc::no_node) return decide(std::nullopt);
    if (lost_connection(ec)) return await_connection(next::list);
    if (ec) return fail(ec);
    auto q = queue_order(children);
    if (q.empty()) return decide(std::nullopt);
    head_ = leader_info{{}, join_path(path_, q.front().name), 0};
    phase_ = phase::reading_head;
    return {sansio::request::get_data_of(tag::data, head_->node)};
  }
  if (phase_ != phase::arming || purpose_ != purpose::nobody) return {};
  if (cancelled_) return after_cancel();
  if (ec == zk_errc::no_node) {
    // No path: watch for its creation (exists sets a watch on a missing node).
    purpose_ = purpose::creation;
    return {sansio::request::exists_of(tag::exists, path_, watch_slot)};
  }
  if (lost_connection(ec)) return remove_then(next::list);
  if (ec) return fail(ec);
  if (queue_order(children).empty()) {
    phase_ = phase::watching;
    return {sansio::request::wait_for(tag::watch_fired, watch_slot)};
  }
  return remove_then(next::list);  // a candidate came meanwhile: look again
}

observe_leader_fsm::actions observe_leader_fsm::on_data(error_code ec, std::string_view data, std::int64_t ctime) {
  if (phase_ == phase::reading_head) {
    if (cancelled_) return after_cancel();
    if (ec == zk_errc::no_node) return list();  // the leader went meanwhile: look again
    if (lost_connection(ec)) return await_connection(next::list);
    if (ec) return fail(ec);
    head_->identity = data;
    head_->since = ctime;
    if (data == revoke_message) {
      // A revocation request, not an identity: the node we knew keeps the one we knew; a new
      // leader is read again once it has written its identity back.
      if (known_ && known_->node == head_->node) {
        head_->identity = known_->identity;
        return decide(head_);
      }
      phase_ = phase::arming;
      purpose_ = purpose::restore;
      return {sansio::request::get_data_of(tag::data, head_->node, watch_slot)};
    }
    return decide(head_);
  }
  if (phase_ != phase::arming || (purpose_ != purpose::leader && purpose_ != purpose::restore)) return {};
  if (cancelled_) return after_cancel();
  if (lost_connection(ec) || ec == zk_errc::no_node) return remove_then(next::list);
  if (ec) return fail(ec);
  if (purpose_ == purpose::leader ? (data == known_->identity || data == revoke_message) : data == revoke_message) {
    // Unchanged (the reply that set the watch still shows it): wait for the watch.
    phase_ = phase::watching;
    actions out{sansio::request::wait_for(tag::watch_fired, watch_slot)};
    if (purpose_ == purpose::restore) out.push_back(sansio::request::timer_after(tag::restore_due, restore_timer, restore_wait_));
    return out;
  }
  return remove_then(next::list);  // changed meanwhile (or written back): look again
}

observe_leader_fsm::actions observe_leader_fsm::on_exists(error_code ec, bool exists) {
  if (phase_ != phase::arming || purpose_ != purpose::creation) return {};
  if (cancelled_) return after_cancel();
  if (lost_connection(ec)) return remove_then(next::list);
  if (ec) return fail(ec);
  if (exists) return remove_then(next::list);  // created meanwhile (the watch is set on it)
  phase_ = phase::watching;
  return {sansio::request::wait_for(tag::watch_fired, watch_slot)};
}

observe_leader_fsm::actions observe_leader_fsm::on_watch_fired(error_code ec) {
  if (phase_ != phase::watching) return {};
  actions out;
  if (purpose_ == purpose::restore) out.push_back(sansio::request::stop_timer(restore_timer));
  auto next = ec ? fail(ec) : list();
  out.insert(out.end(), next.begin(), next.end());
  return out;
}

observe_leader_fsm::actions observe_leader_fsm::on_restore_timeout() {
  if (phase_ != phase::watching || purpose_ != purpose::restore) return {};
  // Never written back: report the data it has.
  result_ = head_;
  return remove_then(next::complete);
}

observe_leader_fsm::actions observe_leader_fsm::on_watch_removed(error_code ec) {
  if (phase_ != phase::removing) return {};
  // The C client keeps the watcher and sets it again on the reconnect: remove it then.
  if (lost_connection(ec)) {
    remove_when_connected_ = true;
    return await_connection(then_);
  }
  if (ec == condition::session_lost) return fail(ec);  // the watch went with the session
  // removed, or it had fired or was never registered
  if (then_ == next::list && !cancelled_) return list();
  phase_ = phase::finished;
  return complete({}, std::move(result_));
}

observe_leader_fsm::actions observe_leader_fsm::on_connected() {
  if (phase_ != phase::awaiting_connection) return {};
  if (std::exchange(remove_when_connected_, false)) {
    phase_ = phase::removing;  // then_ is still what comes after the removal
    return {sansio::request::remove_watch_of(tag::watch_removed, watch_slot)};
  }
  if (cancelled_) {
    phase_ = phase::finished;
    return complete({}, std::nullopt);
  }
  return list();
}

observe_leader_fsm::actions observe_leader_fsm::on_session_ended(error_code ec) {
  if (phase_ != phase::awaiting_connection) return {};
  return fail(ec);  // its watches went with it
}

observe_leader_fsm::actions observe_leader_fsm::cancel(error_code reason, bool total, bool connected) {
  if (completed_ || cancelled_ || phase_ == phase::idle || phase_ == phase::finished) return {};
  cancelled_ = true;
  cancel_reason_ = reason;
  total_ = total;
  actions out;
  switch (phase_) {
    case phase::watching:
      if (purpose_ == purpose::restore) out.push_back(sansio::request::stop_timer(restore_timer));
      out.push_back(remove_then(next::complete).front());
      break;
    case phase::awaiting_connection:
      if (!remove_when_connected_) {  // no watch to remove
        phase_ = phase::finished;
        return complete({}, std::nullopt);
      }
      break;
    default:  // a request in flight: its reply goes on with the cleanup
      break;
  }
  if (early_completion_allowed(connected)) {
    auto c = complete({}, std::nullopt);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

}  // namespace zklock::detail
