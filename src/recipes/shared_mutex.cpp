// The shared lock's own operation: downgrading a write hold. (Its acquires are the lock
// runner's, with the read and write grant rules of src/sansio/queue.hpp.)
#include "lock/hold.hpp"
#include "sansio/queue.hpp"

#include <zklock/shared_mutex.hpp>

namespace zklock::detail {

// The node keeps its place in the queue (writers behind it keep waiting) and says it is a
// reader now: zklock readers behind it read the mark and are granted. The mark keeps the
// node's identity, read back from the node (the hold does not carry it): one more round trip
// on a downgrade, none on an acquire.
void downgrade(const std::shared_ptr<hold>& h, void_handler handler) {
  on_executor(h->s->executor(), std::move(handler), [h](auto handler) mutable {
    auto op = pending<void(error_code)>::make(std::move(handler), h->s->executor());
    switch (h->fsm.status()) {
      case lock_status::released: return op->complete(errc::already_released);
      case lock_status::lost: return op->complete(h->fsm.lost_error());
      default: break;
    }
    if (h->kind != lock_kind::write) return op->complete(errc::not_downgradable);
    h->s->get_data(h->node, nullptr, data_handler([h, op](error_code ec, data_result d) {
      if (ec == zk_errc::no_node) return op->complete(errc::lock_lost);  // deleted under us
      if (ec) return op->complete(ec);
      // Only a zklock marker's identity is ours: anything else was written by someone else
      // (a Revoker's "__REVOKE__").
      auto parts = parse_node_data(d.data);
      std::string_view identity = parts.marker.empty() ? std::string_view{} : parts.identity;
      h->s->set_data(h->node, make_node_data(downgraded_marker, identity), -1,
                     stat_handler([h, op](error_code ec2, node_stat) {
                       if (!ec2 && h->fsm.status() != lock_status::released) h->kind = lock_kind::read;
                       if (ec2 == zk_errc::no_node) ec2 = errc::lock_lost;  // deleted under us
                       op->complete(ec2);
                     }));
    }));
  });
}

}  // namespace zklock::detail
