// zklock locks and holders: how a contender and a lock directory are written, as JSON and as
// text (locks.hpp declares them).
#include "locks.hpp"

#include "command.hpp"

#include <zklock/lock_view.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace zklock_cli {

using zklock::contender;

std::string session_str(std::int64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, static_cast<std::uint64_t>(id));
  return buf;
}

std::string age_str(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  return buf;
}

// A JSON string: a node's data is bytes, not always UTF-8; a byte that is not part of a
// well-formed sequence is given as the code point of the same value (\u00XX, as Latin-1).
std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (std::size_t i = 0; i < s.size();) {
    auto ch = static_cast<unsigned char>(s[i]);
    if (ch == '"' || ch == '\\') {
      (r += '\\') += static_cast<char>(ch);
    } else if (ch >= 0x20 && ch < 0x7f) {
      r += static_cast<char>(ch);
    } else if (std::size_t n = ch >= 0x80 ? utf8_length(s.substr(i)) : 0) {
      r += s.substr(i, n);
      i += n;
      continue;
    } else {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", ch);
      r += esc;
    }
    ++i;
  }
  return r + "\"";
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string contender_json(const contender& c, std::int64_t now, std::string_view node_prefix) {
  double age = std::max<double>(0, static_cast<double>(now - c.stat.ctime) / 1000.0);
  return "{\"node\":" + json_string(std::string(node_prefix) + c.node) + ",\"kind\":" + json_string(zklock::to_string(c.kind)) +
         ",\"session\":" + json_string(session_str(c.stat.ephemeral_owner)) +
         ",\"identity\":" + json_string(c.identity) +
         ",\"parent\":" + (c.parent ? json_string(session_str(c.parent)) : std::string("null")) +
         ",\"age\":" + json_number(age) + "}";
}

std::string view_json(const zklock::lock_dir_view& v, const std::vector<contender>& holders, std::int64_t now) {
  auto list = [&](const std::vector<contender>& cs) {
    std::string r = "[";
    for (const auto& c : cs) r += (r.size() > 1 ? "," : "") + contender_json(c, now, {});
    return r + "]";
  };
  bool campaign = v.kind == zklock::lock_dir_kind::leader_election;
  std::optional<double> oldest_wait;
  if (!campaign)
    for (const auto& c : v.waiters)
      oldest_wait = std::max(oldest_wait.value_or(0), std::max<double>(0, static_cast<double>(now - c.stat.ctime) / 1000.0));
  static const std::vector<contender> none;
  return "{\"path\":" + json_string(v.path) + ",\"kind\":" + json_string(zklock::to_string(v.kind)) +
         ",\"holders\":" + list(holders) + ",\"waiters\":" + list(campaign ? none : v.waiters) +
         ",\"campaigning\":" + list(campaign ? v.waiters : none) +
         ",\"oldest_wait\":" + (oldest_wait ? json_number(*oldest_wait) : std::string("null")) + "}";
}

std::string contender_text(const contender& c) {
  return session_str(c.stat.ephemeral_owner) + " (" + line_field(c.identity, "()") + ")";
}

}  // namespace zklock_cli
