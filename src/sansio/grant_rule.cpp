#include "sansio/grant_rule.hpp"

#include <algorithm>

namespace zklock::detail {

std::vector<queued_node> queue_order(const std::vector<std::string>& children) {
  std::vector<queued_node> q;
  q.reserve(children.size());
  for (const auto& c : children)
    if (auto p = parse_contender(c)) q.push_back({c, p->sequence, p->kind});
  std::sort(q.begin(), q.end(), [](const queued_node& a, const queued_node& b) {
    return a.sequence != b.sequence ? a.sequence < b.sequence : a.name < b.name;
  });
  return q;
}

std::optional<blockers> find_blockers(const std::vector<queued_node>& q, std::size_t mine, lock_kind kind,
                                      int max_leases) noexcept {
  if (kind == lock_kind::lease) {
    if (mine < static_cast<std::size_t>(std::max(max_leases, 1))) return std::nullopt;
    return blockers{mine - 1, mine};
  }
  if (kind != lock_kind::read) {
    if (mine == 0) return std::nullopt;
    return blockers{mine - 1, mine};
  }
  std::optional<blockers> b;
  for (std::size_t i = 0; i < mine && i < q.size(); ++i)
    if (q[i].kind != lock_kind::read) b = blockers{i, b ? b->count + 1 : 1};
  return b;
}

std::vector<std::size_t> all_blockers(const std::vector<queued_node>& q, std::size_t mine, lock_kind kind,
                                      int max_leases) {
  std::vector<std::size_t> r;
  if (!find_blockers(q, mine, kind, max_leases)) return r;
  for (std::size_t i = 0; i < mine && i < q.size(); ++i)
    if (kind != lock_kind::read || q[i].kind != lock_kind::read) r.push_back(i);
  return r;
}

std::vector<std::size_t> current_holders(const std::vector<queued_node>& q, int max_leases) {
  std::vector<std::size_t> r;
  for (std::size_t i = 0; i < q.size(); ++i)
    if (!find_blockers(q, i, q[i].kind, max_leases)) r.push_back(i);
  return r;
}

}  // namespace zklock::detail
