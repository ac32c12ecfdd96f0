// A session's view of one lock dir, without I/O: the contenders its listings of the dir showed
// that it has not yet seen go, in queue order. Every acquire of the session on the dir shares it
// (the session keeps it while one runs: session_impl::view_of): a listing is merged once, however
// many contenders it answers, and a node's deletion heard by any of them (a watch's event, a
// no_node reply) takes it out for all.
//
// What it is for (acquire_fsm.hpp, step 4): a waiter whose watched blockers went while more stood
// behind them in its listing asks the view for its nearest blockers still there, instead of
// listing the whole dir again: O(log N + K) on the client, and single watch requests to the
// server, so a release costs the same at any depth.
//
// Why its answer is safe: a node ahead of ours can only go (sequence numbers only grow, so no node
// created after ours is ahead of it), so every blocker of a waiter's latest listing is still in
// the view or known gone. A name leaves only when it is known gone (an event, a no_node reply, a
// newer listing without it); a name still here may be gone unheard (its deletion heard by no
// watch of this session): a watch request on it finds no_node, which takes it out.
#pragma once

#include "sansio/node_name.hpp"

#include <zklock/types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zklock::detail {

/// A waiter's nearest blockers in the view (dir_view::nearest).
struct view_blockers {
  std::vector<std::string> names;  ///< up to K node names, in queue order (the nearest last)
  bool more = false;               ///< more blockers than these are in the view
  /// The first contender of the view: a writer whose downgrade a reader may have to check
  /// (acquire_fsm.hpp, step 5). Empty when the view has none.
  std::string head;
  /// No other acquire of the session waits on the dir: the view hears only the asker's own
  /// watches, so every name beyond its window may be gone unheard, and one listing costs less
  /// than asking each of them (acquire_fsm lists then). Set by the view's keeper (the runner).
  bool alone = false;
};

class dir_view {
 public:
  /// Which listing of the dir a reply is (the dir's czxid, then its pzxid): a newer one
  /// replaces the view, the same one again (another asker of a coalesced listing) or an older
  /// one changes nothing.
  using listing_version = std::pair<std::int64_t, std::int64_t>;

  /// A listing's reply: the view becomes its contenders. False when it was not newer than the
  /// last merged (nothing done).
  bool merge(listing_version v, const std::vector<std::string>& children) {
    if (merged_ && v <= version_) return false;
    merged_ = true;
    version_ = v;
    nodes_.clear();
    marks_.clear();
    for (const auto& c : children)
      if (auto p = parse_contender(c)) nodes_.emplace(key{p->sequence, c}, p->kind);
      else if (c.starts_with(mark_prefix)) marks_.push_back(c);
    ++merges_;
    return true;
  }
  /// The node `name` is known gone (a deletion event, a no_node reply).
  void gone(std::string_view name) {
    auto seq = lock_sequence(name);
    if (seq) nodes_.erase(key{*seq, std::string(name)});
  }
  /// The dir is gone (a listing's no_node): so is every node that was in it.
  void clear() noexcept {
    nodes_.clear();
    marks_.clear();
    merged_ = false;
  }

  /// The nearest `k` blockers of our node `own` of `kind` still in the view (the grant rule:
  /// every contender ahead for a mutex or a writer; for a reader the writers ahead, but those
  /// in `counted_as_readers`, proven downgraded), and whether more are there.
  view_blockers nearest(std::string_view own, lock_kind kind, std::size_t k,
                        const std::vector<std::string>& counted_as_readers = {}) const {
    view_blockers r;
    if (!nodes_.empty()) r.head = nodes_.begin()->first.name;
    auto seq = lock_sequence(own);
    if (!seq) return r;
    auto it = nodes_.lower_bound(key{*seq, std::string()});
    std::vector<std::string> found;
    while (it != nodes_.begin()) {
      --it;
      if (kind == lock_kind::read && (it->second == lock_kind::read ||
                                      std::find(counted_as_readers.begin(), counted_as_readers.end(),
                                                it->first.name) != counted_as_readers.end()))
        continue;
      if (found.size() == k) {
        r.more = true;
        break;
      }
      found.push_back(it->first.name);
    }
    r.names.assign(found.rbegin(), found.rend());
    return r;
  }

  /// A listing as one waiter needs it (acquire_fsm evaluates it as the whole): the head, its
  /// downgrade mark when the latest listing had it, our node `own` when still here, and our
  /// nearest `k` + 1 blockers (one more than a window: it says the queue is deeper). The grant
  /// rule gives the same answer on it as on the whole listing, for O(log N + K) instead of each
  /// waiter parsing every name of a deep queue. Not for what needs every name (lock-delay's
  /// owners, a lease's count, finding a node by its prefix).
  std::vector<std::string> listing_for(std::string_view own, lock_kind kind, std::size_t k,
                                       const std::vector<std::string>& counted_as_readers = {}) const {
    auto b = nearest(own, kind, k + 1, counted_as_readers);
    std::vector<std::string> r = std::move(b.names);
    if (!b.head.empty() && b.head != own && std::find(r.begin(), r.end(), b.head) == r.end()) r.push_back(b.head);
    if (!b.head.empty()) {
      auto mark = downgrade_mark_name(b.head);
      if (!mark.empty() && std::find(marks_.begin(), marks_.end(), mark) != marks_.end()) r.push_back(mark);
    }
    if (contains(own)) r.emplace_back(own);
    return r;
  }

  std::size_t size() const noexcept { return nodes_.size(); }
  bool contains(std::string_view name) const {
    auto seq = lock_sequence(name);
    return seq && nodes_.count(key{*seq, std::string(name)}) > 0;
  }
  /// Listings merged (not the same or an older one again).
  std::uint64_t merges() const noexcept { return merges_; }

 private:
  struct key {
    std::int64_t sequence;
    std::string name;
    bool operator<(const key& o) const { return sequence != o.sequence ? sequence < o.sequence : name < o.name; }
  };
  static constexpr std::string_view mark_prefix = "zklock-downgraded-";
  std::map<key, lock_kind> nodes_;
  std::vector<std::string> marks_;  // the latest listing's downgrade marks (a writer's)
  listing_version version_{};
  bool merged_ = false;
  std::uint64_t merges_ = 0;
};

}  // namespace zklock::detail
