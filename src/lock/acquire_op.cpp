#include "lock/acquire_op.hpp"

#include "engine/client_id.hpp"
#include "engine/lock_metrics.hpp"
#include "lock/hold.hpp"
#include "lock/runner.hpp"
#include "sansio/acquire_machine.hpp"
#include "sansio/session_end.hpp"

#include <algorithm>
#include <utility>

namespace zklock::detail {

namespace {

// What is the acquire's own around the runner (runner.hpp carries out acquire_machine): a grant
// becomes a hold, the metrics, the log lines.
struct acquire_hook {
  using op_type = pending<void(error_code, lock_guard)>;
  using outcome = acquire_machine::outcome;

  std::shared_ptr<lock_dir> dir;
  std::optional<owner_id> owner;
  std::string node_data;       // what our node is created with
  acquire_meter metrics;       // the session's lock metrics
  std::weak_ptr<hold> granted;  // the hold our grant made

  template <class Runner>
  void on_outcome(Runner& r, const sansio::request& q) {
    auto& s = r.session();
    if (q.type == sansio::request::complete) return complete(r, q.ec);
    switch (q.outcome_kind<outcome>()) {
      case outcome::waited: return metrics.waited();
      case outcome::requeued:
        return s.log(log_level::warn,
                     "zklock: lock node " + q.path + " was deleted by someone else while it waited; queueing again");
      case outcome::cleanup_failed: return s.log(log_level::error, delete_refused_message(q.path, q.ec));
      case outcome::lock_delay_started:
        return s.log(log_level::info, "zklock: " + (q.path.empty() ? std::string("a contender ahead") : q.path) +
                                          " went with its session (or could not be told from a release): the grant of " +
                                          dir->path + " waits its lock-delay");
      case outcome::beacon_failed:
        return s.log(log_level::warn, "zklock: could not create the lock-delay beacon " + q.path + " (" + q.ec.message() +
                                          "); releases of this session will look like its end");
      case outcome::answer_early: return fail(r, q.ec);
      case outcome::own_watch_reply:
        if (auto h = granted.lock()) h->on_node_watch_reply(q.ec, r.machine().own_reply());
        return;
    }
  }

  template <class Runner>
  void complete(Runner& r, error_code ec) {
    const auto& m = r.machine();
    if (ec) {
      if (!m.fsm().answered_early()) fail(r, ec);  // answered already: counted then
      return;
    }
    const auto& res = m.fsm().result();
    auto h = hold::granted(r.session().shared_from_this(),
                           {.node = res.node, .token = res.fencing_token, .kind = m.fsm().kind(), .metrics = metrics.granted()},
                           dir->watch_own_node);
    // Our node's watch, set from its create on, is the hold's now (its reply may still come:
    // own_watch_reply).
    granted = h;
    h->adopt_node_watch(r.take_watch(acquire_machine::own_slot), m.own_reply_pending(), m.own_read());
    // A candidate's node data is its identity (an election's participant id): a revocation
    // request written over it does not change who leads.
    if (h->kind() == lock_kind::candidate) h->keep_data_through_revocation(node_data);
    if (owner) dir->owned = {h, owner};
    r.op()->complete({}, make_guard(std::move(h)));
  }

  template <class Runner>
  void fail(Runner& r, error_code ec) {
    metrics.failed(ec);
    r.op()->complete(ec, lock_guard{});
  }
};

}  // namespace

void run_acquire(std::shared_ptr<lock_dir> dir, pending<void(error_code, lock_guard)>::ptr op, acquire_params p) {
  auto s = dir->s;
  const auto session_id = s->session_id();  // the ZooKeeper session the acquire started on
  acquire_fsm fsm(dir->path,
                  dir->lock_delay.count() > 0 ? lock_delay_client_id(new_client_id(), session_id) : new_client_id(),
                  p.mode, p.kind, dir->max_leases,
                  acquire_machine::watched_blockers(dir->max_watched));
  fsm.set_lock_delay(dir->lock_delay);
  fsm.set_watch_own_node(dir->watch_own_node);
  std::string node_data = p.node_data ? *p.node_data : std::string(fsm.node_data());
  auto metrics = acquire_meter::start(*s, dir->path, fsm.kind(), dir->metering);
  acquire_machine m(
      std::move(fsm),
      {.dir = dir->path,
       .timeout = p.timeout,
       .node_data = node_data,
       .view = s->view_of(dir->path),
       .beacon_session = &dir->beacon_session,  // (the hook holds the lock dir)
       .session_id = [s = s.get()] { return s->session_id(); },
       // A grant is checked against the session it was won on: closed, expired, gone under a
       // new connect, or replaced by a new session (session_end.hpp), and its contact's age.
       .at_grant = [s = s.get(), session_id] {
         return grant_view{.session_over = session_end_error(s->state(), true, s->session_id() != session_id),
                           .contact_stale = contact_refresh_due(s->last_acknowledged(), s->negotiated_timeout()) <=
                                            std::chrono::steady_clock::now(),
                           .connected = is_connected(s->state())};
       },
       .connected = is_connected(s->state())});
  auto r = std::make_shared<runner<acquire_machine, acquire_hook>>(
      s, std::move(op), std::move(m),
      acquire_hook{.dir = dir, .owner = p.owner, .node_data = std::move(node_data), .metrics = std::move(metrics), .granted = {}});
  r->start(r->machine().start());
}

}  // namespace zklock::detail
