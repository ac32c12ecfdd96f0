// The oracle the acquire properties judge a completion by: the grant rule written out again (an
// oracle of its own, not the library's find_blockers) and the checks of a completion against the
// simulated lock dir as it is then. A broken check is returned as a message.
#pragma once

#include "lock_dir_sim.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::testing {

/// The grant rule, written out again (not find_blockers: an oracle of its own): whether the
/// node at `mine` of the queue `q` holds a lock of `kind`. `downgraded`: writers whose holder
/// downgraded (they hold the read side: readers may join them). Decided by what happened to the
/// nodes, never by their data (which anyone may write).
inline bool oracle_granted(const std::vector<detail::queued_node>& q, std::size_t mine, lock_kind kind, int max_leases,
                           const std::set<std::string>& downgraded = {}) {
  if (kind == lock_kind::lease) return mine < static_cast<std::size_t>(max_leases);
  for (std::size_t i = 0; i < mine; ++i) {
    if (kind == lock_kind::exclusive || kind == lock_kind::write) return false;
    bool reads = q[i].kind == lock_kind::read || downgraded.count(q[i].name);
    if (!reads) return false;
  }
  return true;
}

/// The checks at a completion, against the dir as it is then. A grant: our one node, the
/// grant rule holds, the fencing token is the node's czxid, no watch left behind. A failure
/// (the session alive): no node of ours and no watch left (cleanup before the completion).
inline std::optional<std::string> check_completion(const sim& s, lock_kind kind, int max_leases, bool expired) {
  const auto& r = s.fsm.result();
  if (r.ec) {
    if (expired) return std::nullopt;  // the node and the watch went with the session
    if (s.ours() != 0 && s.cleanup_failures == 0)  // a node the server refused to delete is reported
      return "completed with " + r.ec.message() + " before deleting our node";
    if (s.cleanup_failures > 0 && s.ours() != 1 && s.operator_deletes == 0)
      return "a cleanup failure reported for a node not left";
    for (const auto& w : s.watches)
      // (a node the server refused to delete keeps its watch, as it keeps the node)
      if (s.cleanup_failures == 0 || w != s.our_path())
        return "completed with " + r.ec.message() + " before removing the watch on " + w;
    return std::nullopt;
  }
  if (s.granted_node_heard_gone) return "granted on a node the machine was told is gone: " + r.node;
  // Deleted after the grant was decided (the listing that granted predates it): the hold hears
  // it first thing (its watch's event or reply on the way, or the watch it sets when it has none).
  // (Or its watch's request went out with the connection down: the hold sets it again, or looks
  // at our node, after the reconnect.)
  if (s.ours() == 0 && s.operator_deletes > 0 &&
      (s.ours_news_at_completion > 0 || s.own_watch_failing_at_completion > 0 ||
       s.fsm.own_node_watch() == acquire_fsm::own_watch::none))
    return std::nullopt;
  if (s.ours() != 1) return "granted with " + std::to_string(s.ours()) + " nodes of ours";
  auto q = detail::queue_order(s.listing());
  std::size_t mine = 0;
  for (std::size_t i = 0; i < q.size(); ++i)
    if (q[i].name.starts_with(s.fsm.node_prefix())) mine = i;
  if (!oracle_granted(q, mine, kind, max_leases, s.downgraded))
    return "granted against the grant rule (" + std::string(to_string(kind)) + ", position " + std::to_string(mine) + ")";
  if (r.node != join_path(s.dir, q[mine].name)) return "granted with the wrong node " + r.node;
  if (r.fencing_token != s.children.at(q[mine].name)) return "granted with a fencing token not the node's czxid";
  // The one watch left is on our node: the hold takes it over (or its request is on its way;
  // with none, the hold sets one), so a holder hears of our node's deletion from its first
  // event or reply after it.
  for (const auto& w : s.watches)
    if (w != r.node) return "granted with a watch left on " + w;
  bool own_set = s.own_watch_set_at_completion;
  auto own = s.fsm.own_node_watch();
  // (set, or its reply on its way; a reply that will say the connection was lost leaves the hold
  // to set the watch again after the reconnect)
  bool failing = own == acquire_fsm::own_watch::setting && s.own_watch_failing_at_completion > 0;
  if (own_set != (own != acquire_fsm::own_watch::none) && !(failing && !own_set))
    return "our node's watch: the machine and the server disagree";
  return std::nullopt;
}

}  // namespace zklock::testing
