// The C client's server list without the endpoints that are not ZooKeeper servers.
#include "engine/server_list.hpp"

#include <catch2/catch.hpp>

using namespace zklock;
using namespace zklock::detail;

namespace {
resolved_server server(std::string host, std::uint16_t port, std::vector<std::string> addresses) {
  return {{host + ":" + std::to_string(port), host, port}, std::move(addresses)};
}
}  // namespace

TEST_CASE("servers_without: a dropped endpoint leaves the list, the others keep their names", "[unit][connect]") {
  std::vector<resolved_server> servers{server("zk1", 2181, {"10.0.0.1:2181"}), server("127.0.0.1", 9000, {"127.0.0.1:9000"}),
                                       server("zk2", 2182, {"10.0.0.2:2182"})};
  CHECK(servers_without(servers, {"127.0.0.1:9000"}) == "zk1:2181,zk2:2182");
  CHECK(servers_without(servers, {"10.0.0.1:2181", "127.0.0.1:9000"}) == "zk2:2182");
}

TEST_CASE("servers_without: nothing to drop, or nothing left: no change", "[unit][connect]") {
  std::vector<resolved_server> servers{server("zk1", 2181, {"10.0.0.1:2181"}), server("web", 80, {"10.0.0.9:80"})};
  CHECK_FALSE(servers_without(servers, {}));
  CHECK_FALSE(servers_without(servers, {"10.0.0.7:2181"}));  // not one of ours
  CHECK_FALSE(servers_without(servers, {"10.0.0.1:2181", "10.0.0.9:80"}));
  CHECK_FALSE(servers_without({server("unresolved", 2181, {})}, {"10.0.0.1:2181"}));
}

TEST_CASE("servers_without: a name with a dropped address is replaced by its other addresses", "[unit][connect]") {
  std::vector<resolved_server> servers{server("both", 2181, {"127.0.0.1:2181", "[::1]:2181"}),
                                       server("zk", 2182, {"10.0.0.2:2182"})};
  CHECK(servers_without(servers, {"127.0.0.1:2181"}) == "::1:2181,zk:2182");  // the C client's IPv6 form
  CHECK(servers_without(servers, {"[::1]:2181"}) == "127.0.0.1:2181,zk:2182");
  std::vector<resolved_server> v6{server("::1", 2181, {"[::1]:2181"}), server("zk", 2182, {"10.0.0.2:2182"})};
  CHECK(servers_without(v6, {"10.0.0.2:2182"}) == "::1:2181");  // an IPv6 host as the C client takes it
}
