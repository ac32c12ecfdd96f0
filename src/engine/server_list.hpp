// The C client's server list without the endpoints that answered the connect request with
// something that is not ZooKeeper's (engine/loop.cpp, check_handshake_answer). The C client
// (3.8) moves two endpoints on after each failed connection (handle_error, then
// zookeeper_interest), so with two servers a reconnect keeps going back to the same one: a
// non-ZooKeeper endpoint there would hold a live session suspended until it expires. Such an
// endpoint leaves the handle's list instead (zoo_set_servers keeps the session). Sans-I/O:
// names in, the new list out.
#pragma once

#include <zklock/path.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::detail {

/// One server of the connect string and the addresses it resolved to, each named as the C
/// client names its current server ("127.0.0.1:2181", "[::1]:2181").
struct resolved_server {
  connect_endpoint server;
  std::vector<std::string> addresses;
};

/// The host list (zoo_set_servers' format: "host:port,...", IPv6 addresses without brackets,
/// no chroot) of `servers` without the addresses in `dropped`: a server keeps its name while
/// none of its addresses is dropped (the C client resolves it again on each reconnect), is left
/// out when all are, and is replaced by its other addresses when some are. nullopt when nothing
/// changes, or when nothing would be left (the list keeps what it has: the session then expires
/// as with any unreachable ensemble).
inline std::optional<std::string> servers_without(const std::vector<resolved_server>& servers,
                                                  const std::set<std::string>& dropped) {
  std::string hosts;
  bool changed = false;
  auto add = [&](const std::string& entry) { hosts += (hosts.empty() ? "" : ",") + entry; };
  for (const auto& s : servers) {
    std::vector<std::string> kept;
    for (const auto& a : s.addresses)
      if (!dropped.contains(a)) kept.push_back(a);
    if (kept.size() == s.addresses.size()) {
      add(s.server.host + ":" + std::to_string(s.server.port));
      continue;
    }
    changed = true;
    for (const auto& a : kept) {
      // "[::1]:2181" -> "::1:2181" (the C client splits at the last ':'); "127.0.0.1:2181" as is
      auto close = a.find(']');
      add(a.starts_with('[') && close != std::string::npos ? a.substr(1, close - 1) + a.substr(close + 1) : a);
    }
  }
  if (!changed || hosts.empty()) return std::nullopt;
  return hosts;
}

}  // namespace zklock::detail
