// Lock-delay (acquire_fsm.hpp: "Lock-delay"): the gate in front of the grant. A blocker that
// vanished is judged by its owner's beacon (check_session); an ended session (or anything that
// cannot prove a release) starts the delay; the grant waits for every check and the delay.
#include "sansio/acquire_fsm.hpp"
#include <zklock/path.hpp>

#include <algorithm>
#include <cstdio>

namespace zklock::detail {

std::string lock_delay_beacon(std::string_view lock_dir, std::int64_t session) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(session));
  return join_path(join_path(parent_path(std::string(lock_dir)), "__zklock_sessions__"), id);
}

acquire_fsm::actions acquire_fsm::blocker_vanished(const std::string& path) {
  if (lock_delay_.count() <= 0 || phase_ != phase::acquiring) return {};
  auto it = owners_.find(path);
  std::int64_t owner = it == owners_.end() ? 0 : it->second;
  if (it != owners_.end()) owners_.erase(it);
  // Gone before we read its Stat: the session its name claims (only its creator names it).
  if (owner == 0) owner = claimed_session(node_name(path));
  if (owner == 0) {
    // Its owner unknown (a node of a peer without the option): it may have ended. Safe side.
    auto out = delay_grant();
    out.front().path = path;
    return out;
  }
  ++checks_pending_;
  acquire_action a{acquire_action::check_session, lock_delay_beacon(dir_, owner)};
  a.owner = owner;
  return {a};
}

acquire_fsm::actions acquire_fsm::vanished_from(const std::vector<std::string>& children) {
  actions out;
  std::vector<std::string> gone;
  for (const auto& [path, owner] : owners_)
    if (std::find(children.begin(), children.end(), node_name(path)) == children.end()) gone.push_back(path);
  for (const auto& path : gone) {
    // a lease holder whose Stat is still on its way: on_owner decides
    if (kind_ == lock_kind::lease && owners_[path] == 0) continue;
    auto more = blocker_vanished(path);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

acquire_fsm::actions acquire_fsm::delay_grant() {
  delay_running_ = true;
  acquire_action a{acquire_action::start_lock_delay, {}};
  a.delay = lock_delay_;
  return {a};
}

acquire_fsm::actions acquire_fsm::on_owner(const std::string& path, error_code ec, std::int64_t owner) {
  auto it = owners_.find(path);
  if (phase_ != phase::acquiring || it == owners_.end() || it->second != 0) return {};
  if (!ec && owner != 0) {
    it->second = owner;
    return {};
  }
  // Gone before we learnt whose it was (or the read failed): as any vanished node.
  return blocker_vanished(path);
}

std::string lock_delay_client_id(std::string client_id, std::int64_t session) {
  char id[18];
  std::snprintf(id, sizeof id, ".%016llx", static_cast<unsigned long long>(session));
  return client_id + id;
}

std::int64_t claimed_session(std::string_view name) {
  // "_c_<uuid>.<16 hex>-<marker><seq>": the 16 hex digits between the first '.' and a '-'
  auto dot = name.find('.');
  if (dot == std::string_view::npos || name.size() < dot + 18 || name[dot + 17] != '-') return 0;
  std::uint64_t v = 0;
  for (char c : name.substr(dot + 1, 16)) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  return static_cast<std::int64_t>(v);
}

acquire_fsm::actions acquire_fsm::on_session_checked(std::int64_t owner, error_code ec, std::int64_t beacon_owner) {
  if (phase_ == phase::done || checks_pending_ == 0) return {};
  --checks_pending_;
  if (phase_ != phase::acquiring) return {};
  actions out;
  // Only a node that session owns proves it outlived the deletion (a release); anything else
  // (no beacon, another owner, the check lost) counts as its end.
  if (ec || owner == 0 || beacon_owner != owner) out = delay_grant();
  if (grant_waiting_ && !grant_held_back()) {
    grant_waiting_ = false;
    auto g = acquired();
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

acquire_fsm::actions acquire_fsm::on_lock_delay_due() {
  if (phase_ == phase::done || !delay_running_) return {};
  delay_running_ = false;
  if (phase_ != phase::acquiring || !grant_waiting_ || grant_held_back()) return {};
  grant_waiting_ = false;
  return acquired();
}

}  // namespace zklock::detail
