// The shared lock's own operation: downgrading a write hold. (Its acquires are the lock
// runner's, with the read and write grant rules of src/sansio/queue.hpp.)
#include "lock/hold.hpp"
#include "sansio/queue.hpp"

#include <zklock/shared_mutex.hpp>

namespace zklock::detail {

// The node keeps its place in the queue (writers behind it keep waiting) and says it is a
// reader now: zklock readers behind it read the mark and are granted.
void downgrade(const std::shared_ptr<hold>& h, void_handler handler) {
  on_executor(h->s->executor(), [h, handler = std::move(handler)]() mutable {
    auto op = pending<void(error_code)>::make(std::move(handler), h->s->executor());
    switch (h->fsm.status()) {
      case lock_status::released: return op->complete(errc::already_released);
      case lock_status::lost: return op->complete(errc::lock_lost);
      default: break;
    }
    if (h->kind != lock_kind::write) return op->complete(errc::not_downgradable);
    h->s->set_data(h->node, std::string(downgraded_marker), -1,
                   stat_handler([h, op](error_code ec, node_stat) {
                     if (!ec && h->fsm.status() != lock_status::released) h->kind = lock_kind::read;
                     if (ec == zk_errc::no_node) ec = errc::lock_lost;  // deleted under us
                     op->complete(ec);
                   }));
  });
}

}  // namespace zklock::detail
