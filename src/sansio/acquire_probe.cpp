// The try-lock's look before it writes: the listing alone decides a busy lock (nothing written),
// and a reader's one blocker, a head writer with its downgrade mark listed, is checked first.
#include "sansio/acquire_fsm.hpp"
#include <zklock/path.hpp>

#include <algorithm>

namespace zklock::detail {

probe_result acquire_fsm::probe(const std::vector<std::string>& children, lock_kind kind, int max_leases) {
  auto q = queue_order(children);
  q.push_back({{}, 0, kind});  // where our node would go: behind everyone
  auto b = find_blockers(q, q.size() - 1, kind, max_leases);
  if (!b) return probe_result::looks_free;
  // A reader's one blocker at the head may be a writer that downgraded (it holds the read
  // side; a blocking read would be granted beside it): with its mark listed, check the mark
  // first. Only the head can be one: a writer holds (and may downgrade) with nobody ahead of
  // it, and none can get ahead later; a second writer ahead of us waits, so it blocks us.
  if (kind == lock_kind::read && b->count == 1 && b->nearest == 0 &&
      std::find(children.begin(), children.end(), downgrade_mark_name(q[0].name)) != children.end())
    return probe_result::check_head_mark;
  return probe_result::busy;
}

acquire_fsm::actions acquire_fsm::busy() {
  phase_ = phase::done;
  result_ = {errc::lock_busy, {}, 0};
  return {{acquire_action::complete, {}}};
}

acquire_fsm::actions acquire_fsm::on_downgrade_checked(const std::string& writer, error_code ec, std::int64_t writer_owner,
                                                 std::int64_t mark_owner) {
  if (phase_ == phase::done || !in_flight_.take(request::check_downgrade)) return {};
  if (phase_ == phase::cleaning) return finish_cleaning_if_idle();
  if (is_connection_loss(ec)) return after_connection_loss(resend::list);  // look again
  if (ec) return fail(failure(ec));
  // Proven: evaluate counts it as a reader from now on. A mark of another session's (or none
  // left) proves nothing: the writer still blocks.
  const bool proven = downgrade_proven(writer_owner, mark_owner);
  if (proven) downgraded_.emplace_back(node_name(writer));
  if (probing_) {
    if (!proven && writer_owner != 0) return busy();
    // Downgraded, or gone: the create-and-list decides, as for a dir that looks free.
    probing_ = false;
    return create_and_list();
  }
  if (!proven || phase_ != phase::acquiring) return {};
  auto it = blockers_.find(writer);
  if (it == blockers_.end()) return list_again();  // not watched now: look again
  if (it->second != blocker_watch::set) return {};  // its watch's reply decides (on_watch_set)
  // Not our blocker any more: remove its watch (nothing left behind), then look again.
  it->second = blocker_watch::removing;
  return {{acquire_action::remove_watch, writer}};
}

}  // namespace zklock::detail
