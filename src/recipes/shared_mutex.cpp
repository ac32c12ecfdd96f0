// The shared lock's own operation: downgrading a write hold, and its mark's cleanup. (Its
// acquires are the lock runner's, with the read and write grant rules of src/sansio/grant_rule.hpp.)
#include "lock/hold.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"

#include <zklock/shared_mutex.hpp>

namespace zklock::detail {

// The node keeps its place in the queue (writers behind it keep waiting) and says it is a
// reader now, in one transaction: the downgrade mark (downgrade_mark_name), EPHEMERAL, so that
// its owner proves the downgrade is our session's, and the downgraded marker in our node's
// data, whose write wakes the readers watching our node. Both keep the node's identity, read
// back from the node (the hold does not carry it): one more round trip on a downgrade, none on
// an acquire.
void downgrade(const std::shared_ptr<hold>& h, void_handler handler) {
  on_open_hold(h, std::move(handler), [h](pending<void(error_code)>::ptr op) {
    if (h->kind() != lock_kind::write) return op->complete(errc::not_downgradable);
    h->session()->get_data(h->node(), nullptr, data_handler([h, op](error_code ec, data_result d) {
      if (ec == zk_errc::no_node) return op->complete(errc::lock_lost);  // deleted under us
      if (ec) return op->complete(ec);
      if (h->machine().status() == lock_status::released) return op->complete(errc::already_released);
      // Only a zklock marker's identity is ours: anything else was written by someone else
      // (a Revoker's "__REVOKE__").
      auto parts = parse_node_data(d.data);
      std::string_view identity = parts.marker.empty() ? std::string_view{} : parts.identity;
      auto data = make_node_data(downgraded_marker, identity);
      auto mark = downgrade_mark_path(h->node());
      // From now on our release deletes the mark too (a release sent before the transaction's
      // reply comes behind it on the wire).
      h->set_downgrade_mark(mark);
      h->session()->multi({multi_op::create(mark, data, create_mode::ephemeral), multi_op::set_data(h->node(), data)},
                        multi_handler([h, op, mark](error_code ec2, std::vector<multi_result> results) {
                          const bool mark_taken = !results.empty() && results[0].ec == zk_errc::node_exists;
                          if (ec2 && mark_taken) {
                            // Ours from a try whose reply was lost with the connection (then both
                            // writes committed), or another session's: only ours proves anything.
                            return h->session()->exists(mark, nullptr,
                                                      exists_handler([h, op, mark](error_code ec3, std::optional<node_stat> st) {
                                                        if (!ec3 && st && st->ephemeral_owner == h->node_session()) {
                                                          h->downgraded();
                                                          return op->complete({});
                                                        }
                                                        if (!ec3) h->forget_downgrade_mark(mark);
                                                        op->complete(ec3 ? ec3 : error_code(zk_errc::node_exists));
                                                      }));
                          }
                          if (!ec2) h->downgraded();
                          // Failed for sure (not lost with the connection): no mark of ours to delete.
                          if (ec2 && ec2 != condition::connection_lost) h->forget_downgrade_mark(mark);
                          if (ec2 == zk_errc::no_node) ec2 = errc::lock_lost;  // deleted under us
                          op->complete(ec2);
                        }));
    }));
  });
}

}  // namespace zklock::detail
