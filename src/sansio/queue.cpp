#include "sansio/queue.hpp"

#include <algorithm>

namespace zklock::detail {

std::optional<parsed_name> parse_contender(std::string_view name) noexcept {
  // "<anything><marker>(-?<10 digits>)": the patterns of kazoo's locks (with
  // extra_lock_patterns naming Curator's markers), plus Curator's unprotected "lock-<seq>".
  if (name.size() < 10) return std::nullopt;
  std::string_view digits = name.substr(name.size() - 10);
  for (char c : digits)
    if (c < '0' || c > '9') return std::nullopt;
  std::string_view head = name.substr(0, name.size() - 10);
  auto marker_kind = [](std::string_view h) -> std::optional<lock_kind> {
    if (h == "lock-" || h.ends_with("-lock-") || h.ends_with("__lock__")) return lock_kind::exclusive;
    if (h.ends_with("__READ__") || h.ends_with("__rlock__")) return lock_kind::read;
    if (h.ends_with("__WRIT__")) return lock_kind::write;
    if (h == "lease-" || h.ends_with("-lease-")) return lock_kind::lease;
    if (h == "latch-" || h.ends_with("-latch-")) return lock_kind::candidate;  // Curator LeaderLatch
    return std::nullopt;
  };
  bool negative = false;
  auto kind = marker_kind(head);
  if (!kind && head.ends_with("-")) {
    kind = marker_kind(head.substr(0, head.size() - 1));
    negative = true;
  }
  if (!kind) return std::nullopt;
  std::int64_t v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return parsed_name{negative ? -v : v, *kind};
}

std::optional<std::int64_t> lock_sequence(std::string_view name) noexcept {
  if (auto p = parse_contender(name)) return p->sequence;
  return std::nullopt;
}

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
