// Revocation, Curator's protocol: the holder's side (hold::wait_revoked carries out
// revocation_fsm's requests and outcomes for lock_guard::async_wait_revoked) and the requester's
// (async_request_revoke, async_revoke_holders: "__REVOKE__" written into the holders' nodes).
#include "lock/hold.hpp"
#include "lock/lock_dir.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"

#include <zklock/path.hpp>
#include <zklock/revoke.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <optional>
#include <utility>

namespace zklock::detail {

void hold::wait_revoked(pending<void(error_code)>::ptr op) {
  // A request read (and written over) while only keep_data_through_revocation watched.
  if (std::exchange(revocation_.unheard, false)) return op->complete({});
  hook_cancel(*op, weak_from_this(), [raw = op.get()](hold& self, asio::cancellation_type) {
    // Taken out first, so that the actions below never complete it; then the watch goes if
    // nobody else waits.
    auto& ws = self.revocation_.waiters;
    auto it = std::find_if(ws.begin(), ws.end(), [raw](const auto& w) { return w.get() == raw; });
    if (it != ws.end()) {
      ws.erase(it);
      self.run_revocation(self.revocation_.fsm.remove_waiter());
    }
    raw->abort();
  });
  revocation_.waiters.push_back(std::move(op));
  run_revocation(revocation_.fsm.add_waiter());
}

void hold::run_revocation(const revocation_fsm::actions& actions) {
  std::weak_ptr<hold> weak = weak_from_this();
  for (const auto& a : actions) {
    switch (a.type) {
      case sansio::request::get_data: {  // our node's data, with a watch: tagged with its generation
        const auto g = a.tag;
        if (!is_local()) {
          read_through_node_watch(g);
          break;
        }
        // A local hold's node is its queue's, watched by no hold: a watch of its own.
        // The watch this read registers (filled in by get_data before it returns).
        auto registered = std::make_shared<boost::intrusive_ptr<watch_state>>();
        s_->get_data(node_, registered.get(), data_handler([weak, g, registered](error_code ec, data_result r) {
          auto self = weak.lock();
          if (!self) return;
          self->run_revocation(self->revocation_.fsm.on_data(g, ec, r.data, r.stat.version, is_connected(self->s_->state())));
          if (!ec && *registered && self->revocation_.fsm.ended()) {
            // The hold ended while this read was in flight: its watch was set after the end.
            self->revocation_.watch = *registered;
            return self->drop_revoke_watch();
          }
          // Hear when it fires (or is removed, or the session takes it): only after a
          // successful read, since a failed one registers nothing.
          if (!ec && *registered)
            self->s_->wait_watch(*registered, watch_handler([weak, g](error_code wec, watch_event ev) {
              if (auto self = weak.lock()) self->run_revocation(self->revocation_.fsm.on_watch_event(g, wec, ev.type));
            }));
        }));
        revocation_.watch = *registered;
        break;
      }
      case sansio::request::remove_watch: {
        const auto g = a.tag;
        if (!is_local()) {
          // our node's watch stays for the hold's life: nothing to remove
          if (revocation_.watching == g) revocation_.watching = 0;
          run_revocation(revocation_.fsm.on_watch_removed(g, {}, is_connected(s_->state())));
          break;
        }
        s_->remove_watch(revocation_.watch, void_handler([weak, g](error_code ec) {
          if (auto self = weak.lock())
            self->run_revocation(self->revocation_.fsm.on_watch_removed(g, ec, is_connected(self->s_->state())));
        }));
        break;
      }
      case sansio::request::await_connection:
        // (an ended session: the hold's end completes the waiters)
        detail::await_connection(s_, weak, [](hold& self, session_state st) {
          if (is_connected(st)) self.run_revocation(self.revocation_.fsm.on_connected());
        });
        break;
      case sansio::request::notify:
        if (a.outcome_kind<revocation_outcome>() == revocation_outcome::check_node) check_node();
        else complete_revocation_waiters(a.ec);
        break;
      default: break;  // (revocation_fsm makes no other request)
    }
  }
}

void hold::complete_revocation_waiters(error_code ec) {
  auto waiters = std::move(revocation_.waiters);
  revocation_.waiters.clear();
  for (auto& w : waiters) w->complete(ec);
  if (revocation_.kept_data && !ec) {
    revocation_.unheard = revocation_.unheard || waiters.empty();
    write_back_kept_data();
  }
}

// A hold's revocation reads go through its node's watch (node_watch), which it keeps anyway: one
// data watch on the node, and no request when no write came since the watch's read (a grant's
// revocation read is answered by the acquire's read of its node).
void hold::read_through_node_watch(std::uint64_t generation) {
  if (node_watch_ && node_watch_->registered && !node_watch_->fired && node_data_ && !node_read_pending_)
    return answer_revocation_read(generation, {}, node_data_->data, node_data_->version);
  revocation_.read = generation;  // answered by the reply of the getData that sets the watch
  if (node_read_pending_) return;
  if (node_watch_ && node_watch_->registered && !node_watch_->fired) {
    // set, its read unknown: a plain read (no second watch)
    s_->get_data(node_, nullptr, data_handler([weak = weak_from_this()](error_code ec, data_result d) {
      if (auto self = weak.lock())
        self->answer_revocation_read(std::exchange(self->revocation_.read, 0), ec, d.data, d.stat.version);
    }));
    return;
  }
  watch_node();
  if (!node_read_pending_) {
    // nothing sent (the hold has ended): the read fails as the session's end would
    revocation_.read = 0;
    run_revocation(revocation_.fsm.on_data(generation, errc::lock_lost, {}, 0, is_connected(s_->state())));
  }
}

// What a read of our node said, given to the revocation read of `generation` (none: 0) that it
// answers: a successful read's watch is node_watch, whose change is then that read's event.
void hold::answer_revocation_read(std::uint64_t generation, error_code ec, std::string_view data, std::int32_t version) {
  if (generation == 0) return;
  if (!ec) revocation_.watching = generation;
  run_revocation(revocation_.fsm.on_data(generation, ec, data, version, is_connected(s_->state())));
}

void hold::keep_data_through_revocation(std::string data) {
  revocation_.kept_data = std::move(data);
  run_revocation(revocation_.fsm.add_waiter());  // counted as a waiter: the watch stays set while we hold
}

// Over the request just read only (its version): a later write is read, and answered, in turn.
// Then watch again. A write lost with the connection is made again once connected.
void hold::write_back_kept_data() {
  std::weak_ptr<hold> weak = weak_from_this();
  s_->set_data(node_, *revocation_.kept_data, revocation_.fsm.reported_version(), stat_handler([weak](error_code ec, node_stat) {
    auto self = weak.lock();
    if (!self || !self->owns()) return;
    if (ec != condition::connection_lost) return self->run_revocation(self->revocation_.fsm.add_waiter());
    detail::await_connection(self->s_, weak, [](hold& h, session_state st) {
      if (h.owns() && is_connected(st)) h.write_back_kept_data();
    });
  }));
}

// A local hold's node stays when the hold ends (the queue hands it to the next local holder):
// its data watch goes with the hold, or it would stay registered and fire for a request meant
// for a later holder. (A hold's own node is deleted at its end, which takes the watch.)
void hold::drop_revoke_watch() {
  if (!is_local() || !revocation_.watch || !revocation_.watch->registered) return;
  // (a removal lost with the connection leaves one watch, whose event finds the hold ended)
  s_->remove_watch(std::exchange(revocation_.watch, nullptr), void_handler([](error_code) {}));
}

void request_revoke(const std::shared_ptr<session_impl>& s, std::string node_path, void_handler h) {
  on_executor(s->executor(), std::move(h), [s, node = std::move(node_path)](auto h) mutable {
    // A write on the wire may still apply: total cancellation is not honoured.
    auto op = pending<void(error_code)>::make(std::move(h), s->executor(),
                                              asio::cancellation_type::terminal | asio::cancellation_type::partial);
    s->set_data(std::move(node), std::string(revoke_request_data), -1,
                stat_handler([op](error_code ec, node_stat) { op->complete(ec); }));
  });
}

void revoke_holders(const std::shared_ptr<session_impl>& s, std::string lock_path, int max_leases,
                    revoked_nodes_handler h) {
  on_executor(s->executor(), std::move(h), [s, path = std::move(lock_path), max_leases](auto h) mutable {
    using op_type = pending<void(error_code, std::vector<std::string>)>;
    auto op = op_type::make(std::move(h), s->executor(), asio::cancellation_type::terminal | asio::cancellation_type::partial);
    if (max_leases < 1) return op->fail(errc::invalid_max_leases);
    auto dir = make_lock_dir(s, path, max_leases);
    list_contenders(dir, contenders_handler([op, s, path, max_leases](error_code ec, std::vector<contender> cs) {
      if (!op->active()) return;
      if (ec) return op->fail(ec);
      std::vector<queued_node> q;
      for (const auto& c : cs) q.push_back({c.node, c.sequence, c.kind});  // kind: the downgrade mark read
      auto holders = current_holders(q, max_leases);
      if (holders.empty()) return op->complete({}, {});
      struct progress {
        std::vector<std::string> nodes;
        std::vector<bool> written;
        std::size_t remaining;
        error_code first_error;
      };
      auto p = std::make_shared<progress>();
      p->remaining = holders.size();
      p->written.assign(holders.size(), false);
      session_impl::send_batch together(s.get());
      for (std::size_t k = 0; k < holders.size(); ++k) {
        p->nodes.push_back(join_path(path, q[holders[k]].name));
        s->set_data(p->nodes.back(), std::string(revoke_request_data), -1,
                    stat_handler([op, p, k](error_code ec, node_stat) {
                      if (!ec) p->written[k] = true;
                      else if (ec != zk_errc::no_node && !p->first_error) p->first_error = ec;
                      if (--p->remaining > 0) return;
                      std::vector<std::string> done;
                      for (std::size_t i = 0; i < p->nodes.size(); ++i)
                        if (p->written[i]) done.push_back(p->nodes[i]);
                      op->complete(p->first_error, std::move(done));
                    }));
      }
    }));
  });
}

void revoke_holders(const std::shared_ptr<session_impl>& s, std::string lock_path, revoke_options options,
                    revoke_result_handler h) {
  on_executor(s->executor(), std::move(h), [s, path = std::move(lock_path), options](auto h) mutable {
    auto op = pending<void(error_code, revoke_result)>::make(
        std::move(h), s->executor(), asio::cancellation_type::terminal | asio::cancellation_type::partial);
    struct state {
      asio::cancellation_signal asking;        // the requests
      std::optional<asio::steady_timer> wait;  // force_after
      revoke_result result;
    };
    auto st = std::make_shared<state>();
    hook_cancel(*op, st, [raw = op.get()](state& st, asio::cancellation_type t) {
      if (!st.wait) return st.asking.emit(t);
      st.wait->cancel();
      raw->complete(asio::error::operation_aborted, st.result);  // deletes on the wire may still apply
    });
    auto asked = [op, st, s, force_after = options.force_after](error_code ec, std::vector<std::string> nodes) {
      if (!op->active()) return;
      st->result.asked = std::move(nodes);
      if (ec || st->result.asked.empty() || force_after == std::chrono::steady_clock::duration::max())
        return op->complete(ec, st->result);
      st->wait.emplace(s->executor(), force_after);
      st->wait->async_wait([op, st, s](error_code tec) {
        if (!op->active() || tec) return;
        // Whoever still has a node still holds: delete it (no_node: released meanwhile).
        struct progress {
          std::vector<bool> deleted;
          std::size_t remaining;
          error_code first_error;
        };
        auto p = std::make_shared<progress>();
        p->deleted.assign(st->result.asked.size(), false);
        p->remaining = st->result.asked.size();
        session_impl::send_batch together(s.get());
        for (std::size_t k = 0; k < st->result.asked.size(); ++k)
          s->remove(st->result.asked[k], -1, void_handler([op, st, p, k](error_code dec) {
            if (!dec) p->deleted[k] = true;
            else if (dec != zk_errc::no_node && !p->first_error) p->first_error = dec;
            if (--p->remaining > 0) return;
            for (std::size_t i = 0; i < p->deleted.size(); ++i)
              if (p->deleted[i]) st->result.deleted.push_back(st->result.asked[i]);
            op->complete(p->first_error, st->result);
          }));
      });
    };
    revoke_holders(s, std::move(path), options.max_leases,
                   revoked_nodes_handler(asio::bind_cancellation_slot(st->asking.slot(), std::move(asked))));
  });
}

}  // namespace zklock::detail
