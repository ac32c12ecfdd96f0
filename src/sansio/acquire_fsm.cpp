// An acquire's entry into the queue: its node's create and the listing pipelined with it, the
// parents made when the lock dir is missing, and a new node when ours went (requeue). The rest
// of the machine, by question (acquire_fsm.hpp has the recipe):
//   where does an acquire wait?       acquire_wait.cpp       (the blockers' and our node's watches)
//   what grants?                      acquire_grant.cpp      (the check against the session)
//   where is lock-delay?              acquire_lock_delay.cpp (the gate in front of the grant)
//   what does a stop or a failure do? acquire_cleanup.cpp    (our node's delete, its backoff)
//   what after a lost connection?     acquire_recovery.cpp   (resends, the lost create, expiry)
//   what does a try-lock look at?     acquire_probe.cpp      (the listing before any write)
#include "sansio/acquire_fsm.hpp"
#include "sansio/session_end.hpp"
#include <zklock/path.hpp>

#include <algorithm>
#include <utility>

namespace zklock::detail {

bool acquire_fsm::is_connection_loss(const error_code& ec) { return ec == condition::connection_lost; }

error_code acquire_fsm::failure(const error_code& ec) {
  return ec == condition::session_lost ? session_end_error(ec) : ec;
}

namespace {
const char* marker_of(lock_kind k) {
  switch (k) {
    case lock_kind::read: return "-__READ__";
    case lock_kind::write: return "-__WRIT__";
    case lock_kind::lease: return "-lease-";
    case lock_kind::candidate: return "-latch-";
    default: return "-lock-";
  }
}
}  // namespace

acquire_fsm::acquire_fsm(std::string dir, std::string client_id, lock_mode mode, lock_kind kind, int max_leases,
                   int max_watched)
    : dir_(std::move(dir)),
      prefix_("_c_" + client_id + marker_of(kind)),
      create_path_(join_path(dir_, prefix_)),
      mode_(mode),
      kind_(kind),
      max_leases_(max_leases),
      max_watched_(std::max(1, max_watched)) {}

std::string_view acquire_fsm::node_data() const noexcept {
  return kind_ == lock_kind::exclusive ? contender_marker : shared_marker;
}

acquire_fsm::actions acquire_fsm::start() {
  phase_ = phase::acquiring;
  // Lock-delay: our beacon exists before our node, so that our release is told from our end.
  actions out;
  if (lock_delay_.count() > 0) out.push_back({acquire_action::create_beacon, {}});
  if (mode_ == lock_mode::try_once) {
    // Look before writing: when a blocker is already there, give up on this read alone.
    probing_ = true;
    in_flight_.insert(request::list);
    out.push_back({acquire_action::list, dir_});
    return out;
  }
  auto c = create_and_list();
  out.insert(out.end(), c.begin(), c.end());
  return out;
}

acquire_fsm::actions acquire_fsm::create_and_list() {
  in_flight_.insert(request::create);
  in_flight_.insert(request::list);
  create_outcome_unknown_ = false;
  node_.clear();
  czxid_ = 0;
  own_ = own_watch::none;  // (a reply or an event of an older node of ours is ignored)
  own_gone_ = false;
  all_watched_ = false;  // blockers still watched are ahead of the new node too: they stay
  grant_waiting_ = false;  // (a lock-delay running still holds the new node's grant back)
  return {{acquire_action::create_and_list, create_path_}};
}

acquire_fsm::actions acquire_fsm::watch_own() {
  if (!watch_own_node_) return {};  // (set_watch_own_node: own_ stays none)
  own_ = own_watch::setting;
  return {{acquire_action::watch_own, node_}};
}

acquire_fsm::actions acquire_fsm::list_again() {
  // one listing at a time: a second would be taken for the first's reply
  if (in_flight_.contains(request::list) || in_flight_.contains(request::watch)) return {};
  in_flight_.insert(request::list);
  return {{acquire_action::list, dir_}};
}

acquire_fsm::actions acquire_fsm::on_create(error_code ec, const std::string& created_path, std::int64_t czxid) {
  if (phase_ == phase::done || !in_flight_.take(request::create)) return {};
  if (!ec) {
    node_ = created_path;
    czxid_ = czxid;
    if (phase_ == phase::cleaning) {
      in_flight_.erase(request::list);  // its reply is of no use now
      return finish_cleaning_if_idle();
    }
    // The pipelined listing follows; our node is watched from now on (behind the listing,
    // ahead of any blocker's watch: its deletion is heard before theirs).
    return watch_own();
  }
  in_flight_.erase(request::list);  // the pipelined listing fails the same way; ignore its reply
  if (is_connection_loss(ec)) {
    create_outcome_unknown_ = true;  // find our node by its id after the reconnect
    return after_connection_loss(resend::list);
  }
  if (phase_ == phase::cleaning) {
    node_gone_ = true;
    return finish_cleaning_if_idle();
  }
  if (ec == zk_errc::no_node && parent_attempts_ < 5) {
    ++parent_attempts_;
    return {{acquire_action::ensure_parents, dir_}};
  }
  return fail(failure(ec));
}

acquire_fsm::actions acquire_fsm::on_parents(error_code ec) {
  if (phase_ == phase::done) return {};
  if (phase_ == phase::cleaning) {
    node_gone_ = true;
    return finish_cleaning_if_idle();
  }
  if (!ec || ec == zk_errc::node_exists) return create_and_list();
  if (is_connection_loss(ec)) return after_connection_loss(resend::create);
  return fail(ec);
}

acquire_fsm::actions acquire_fsm::on_children(error_code ec, const std::vector<std::string>& children) {
  if (phase_ == phase::done || !in_flight_.take(request::list)) return {};
  if (probing_) {
    if (phase_ == phase::cleaning) return finish_cleaning_if_idle();
    if (is_connection_loss(ec)) return after_connection_loss(resend::list);
    if (ec && ec != zk_errc::no_node) return fail(failure(ec));
    if (!ec) {
      switch (probe(children, kind_, max_leases_)) {
        case probe_result::busy: return busy();
        case probe_result::check_head_mark:
          in_flight_.insert(request::check_downgrade);
          return {{acquire_action::check_downgrade, join_path(dir_, queue_order(children)[0].name)}};
        case probe_result::looks_free: break;
      }
    }
    probing_ = false;
    return create_and_list();  // looks free (or no dir yet): the create-and-list decides
  }
  if (!ec) return evaluate(children);
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);
  if (ec == zk_errc::no_node) {
    // the lock dir is gone, so is any node of ours in it
    node_.clear();
    create_outcome_unknown_ = false;
    if (phase_ == phase::cleaning) {
      node_gone_ = true;
      return finish_cleaning_if_idle();
    }
    return create_and_list();
  }
  return fail(failure(ec));
}

acquire_fsm::actions acquire_fsm::own_node_gone() {
  if (phase_ == phase::cleaning) {
    node_gone_ = true;  // nothing left to delete
    return finish_cleaning_if_idle();
  }
  if (phase_ != phase::acquiring && phase_ != phase::granting) return {};
  // Deleted by someone else (an operator, a cleanup script, a reaper): no grant on this node.
  actions out{{acquire_action::requeued, node_}};
  phase_ = phase::acquiring;
  // replies about the old node are of no use now
  in_flight_.erase(request::stat);
  in_flight_.erase(request::refresh);
  drop_waiting_grant();
  grant_waiting_ = false;  // (a lock-delay running still holds the new node's grant back)
  if (in_flight_.contains(request::list) || in_flight_.contains(request::watch)) {
    // A listing on its way may predate the deletion: it decides (as not showing our node), and
    // no second listing may be sent meanwhile.
    own_gone_ = true;
    all_watched_ = false;
    return out;
  }
  auto next = requeue();
  out.insert(out.end(), next.begin(), next.end());
  return out;
}

acquire_fsm::actions acquire_fsm::requeue() {
  drop_waiting_grant();
  return create_and_list();
}

void acquire_fsm::drop_waiting_grant() noexcept {
  // A grant decided for the old node (waiting behind a watch removal that a lost connection
  // delayed) is void: the new node waits its own turn. (A grant gone ahead of the lease dir's
  // removal stays so: the removal is still on its way.)
  if (removal_ == removal_in_flight::grant_waits_for_reply) removal_ = removal_in_flight::none;
}

}  // namespace zklock::detail
