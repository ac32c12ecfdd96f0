#include "sansio/node_name.hpp"

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

}  // namespace zklock::detail
