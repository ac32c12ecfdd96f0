// The C client's server list: numeric addresses only, without the endpoints that are not
// ZooKeeper servers, and refreshed by a new lookup of the names.
#include "engine/server_list.hpp"

#include <catch2/catch.hpp>

using namespace zklock;
using namespace zklock::detail;

namespace {
resolved_server server(std::string host, std::uint16_t port, std::vector<std::string> addresses) {
  return {{host + ":" + std::to_string(port), host, port}, std::move(addresses)};
}
}  // namespace

TEST_CASE("numeric_host_list: every address, never a name, and a dropped endpoint leaves the list", "[unit][connect]") {
  std::vector<resolved_server> servers{server("zk1", 2181, {"10.0.0.1:2181"}), server("127.0.0.1", 9000, {"127.0.0.1:9000"}),
                                       server("zk2", 2182, {"10.0.0.2:2182"})};
  CHECK(numeric_host_list(servers, {}) == "10.0.0.1:2181,127.0.0.1:9000,10.0.0.2:2182");
  CHECK(numeric_host_list(servers, {"127.0.0.1:9000"}) == "10.0.0.1:2181,10.0.0.2:2182");
  CHECK(numeric_host_list(servers, {"10.0.0.1:2181", "127.0.0.1:9000"}) == "10.0.0.2:2182");
  CHECK(numeric_host_list(servers, {"10.0.0.7:2181"}) == numeric_host_list(servers, {}));  // not one of ours
}

TEST_CASE("numeric_host_list: nothing left, or nothing resolved: empty (the caller keeps its list)", "[unit][connect]") {
  std::vector<resolved_server> servers{server("zk1", 2181, {"10.0.0.1:2181"}), server("web", 80, {"10.0.0.9:80"})};
  CHECK(numeric_host_list(servers, {"10.0.0.1:2181", "10.0.0.9:80"}).empty());
  CHECK(numeric_host_list({server("unresolved", 2181, {})}, {}).empty());
  // a server that did not resolve is left out, the others stay
  CHECK(numeric_host_list({server("unresolved", 2181, {}), server("zk", 2182, {"10.0.0.2:2182"})}, {}) == "10.0.0.2:2182");
}

TEST_CASE("numeric_host_list: IPv6 addresses as the C client takes them, every address of a name", "[unit][connect]") {
  std::vector<resolved_server> servers{server("both", 2181, {"127.0.0.1:2181", "[::1]:2181"}),
                                       server("zk", 2182, {"10.0.0.2:2182"})};
  CHECK(numeric_host_list(servers, {}) == "127.0.0.1:2181,::1:2181,10.0.0.2:2182");
  CHECK(numeric_host_list(servers, {"127.0.0.1:2181"}) == "::1:2181,10.0.0.2:2182");
  CHECK(numeric_host_list(servers, {"[::1]:2181"}) == "127.0.0.1:2181,10.0.0.2:2182");
  CHECK(host_list_entry("[fe80::1%eth0]:2181") == "fe80::1%eth0:2181");
  CHECK(host_list_entry("10.0.0.1:2181") == "10.0.0.1:2181");
}

TEST_CASE("refreshed: a server takes its new addresses and one that did not resolve keeps its old", "[unit][connect]") {
  std::vector<resolved_server> known{server("zk1", 2181, {"10.0.0.1:2181"}), server("zk2", 2181, {"10.0.0.2:2181"})};
  std::vector<resolved_server> fresh{server("zk1", 2181, {"10.0.0.11:2181"}), server("zk2", 2181, {})};
  auto r = refreshed(known, fresh);
  CHECK(numeric_host_list(r, {}) == "10.0.0.11:2181,10.0.0.2:2181");
  CHECK(all_addresses(r) == std::set<std::string>{"10.0.0.11:2181", "10.0.0.2:2181"});
  // a server that did not resolve at the connect is added when it does
  std::vector<resolved_server> first{server("zk1", 2181, {"10.0.0.1:2181"}), server("late", 2181, {})};
  std::vector<resolved_server> later{server("zk1", 2181, {"10.0.0.1:2181"}), server("late", 2181, {"10.0.0.3:2181"})};
  CHECK(numeric_host_list(refreshed(first, later), {}) == "10.0.0.1:2181,10.0.0.3:2181");
}
