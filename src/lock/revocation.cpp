// Revocation, Curator's protocol: the holder's side (hold::wait_revoked: its waiters, the
// reads and watches being hold_machine's, carried out by the hold's runner) and the requester's
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
  if (std::exchange(unheard_, false)) return op->complete({});
  hook_cancel(*op, weak_from_this(), [raw = op.get()](hold& self, asio::cancellation_type) {
    // Taken out first, so that the machine's outcomes never complete it; then the watch goes
    // if nobody else waits.
    auto& ws = self.revocation_waiters_;
    auto it = std::find_if(ws.begin(), ws.end(), [raw](const auto& w) { return w.get() == raw; });
    if (it != ws.end()) {
      ws.erase(it);
      self.execute(self.r_->machine().remove_revocation_waiter(self.r_->seen()));
    }
    raw->abort();
  });
  revocation_waiters_.push_back(std::move(op));
  execute(r_->machine().add_revocation_waiter(r_->seen()));
}

void hold::complete_revocation_waiters(error_code ec) {
  auto waiters = std::move(revocation_waiters_);
  revocation_waiters_.clear();
  for (auto& w : waiters) w->complete(ec);
  // (the machine writes the kept data back: a request nobody waited for is kept for the next)
  if (r_->machine().keeps_data() && !ec) unheard_ = unheard_ || waiters.empty();
}

void hold::keep_data_through_revocation(std::string data) {
  execute(r_->machine().keep_data(std::move(data), r_->seen()));
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
