// The C client's server list, made by us: only numeric addresses, so that its own getaddrinfo
// (zookeeper_init2, zoo_set_servers, and each zookeeper_interest between connections, under
// the lock of the process) never looks a name up. The names of the connect string are looked
// up on the session's executor (engine/connect.cpp, asio's resolver), on connect and again
// after a connection loss; a server whose addresses changed is handed over with zoo_set_servers.
// The endpoints that answered the connect request with something that is not ZooKeeper's
// (engine/loop.cpp, check_handshake_answer) leave the list as well: the C client (3.8) moves
// two endpoints on after each failed connection (handle_error, then zookeeper_interest), so
// with two servers a reconnect keeps going back to the same one, and a non-ZooKeeper endpoint
// there would hold a live session suspended until it expires. Sans-I/O: names in, lists out.
#pragma once

#include <zklock/path.hpp>

#include <set>
#include <string>
#include <vector>

namespace zklock::detail {

/// One server of the connect string and the addresses it resolved to, each named as the C
/// client names its current server ("127.0.0.1:2181", "[::1]:2181"); none when its lookup
/// failed.
struct resolved_server {
  connect_endpoint server;
  std::vector<std::string> addresses;
};

/// An address as the C client's host list takes it: "[::1]:2181" -> "::1:2181" (it splits at
/// the last ':'); "127.0.0.1:2181" as is.
inline std::string host_list_entry(const std::string& address) {
  auto close = address.find(']');
  if (address.starts_with('[') && close != std::string::npos) return address.substr(1, close - 1) + address.substr(close + 1);
  return address;
}

/// The host list for the C client (zoo_set_servers' format: "host:port,...", no chroot): every
/// address of `servers` but those in `dropped`, in the connect string's order. Empty when none
/// is left (the caller then keeps the list it has: the session expires as with any
/// unreachable ensemble) or none resolved.
inline std::string numeric_host_list(const std::vector<resolved_server>& servers, const std::set<std::string>& dropped) {
  std::string hosts;
  for (const auto& s : servers)
    for (const auto& a : s.addresses)
      if (!dropped.contains(a)) hosts += (hosts.empty() ? "" : ",") + host_list_entry(a);
  return hosts;
}

/// The servers after a new lookup: each takes its new addresses; one whose lookup failed this
/// time (a DNS server that did not answer) keeps those it had, rather than leave the list.
inline std::vector<resolved_server> refreshed(const std::vector<resolved_server>& known,
                                              const std::vector<resolved_server>& fresh) {
  std::vector<resolved_server> r = fresh;
  for (std::size_t i = 0; i < r.size() && i < known.size(); ++i)
    if (r[i].addresses.empty()) r[i].addresses = known[i].addresses;
  return r;
}

/// Every address of `servers` ("HOST:PORT", as the C client names them).
inline std::set<std::string> all_addresses(const std::vector<resolved_server>& servers) {
  std::set<std::string> r;
  for (const auto& s : servers) r.insert(s.addresses.begin(), s.addresses.end());
  return r;
}

}  // namespace zklock::detail
