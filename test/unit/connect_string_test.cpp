// The connect string's grammar (path.hpp): what parse_connect_string takes apart, and errors
// that name the bad entry.
#include <zklock/path.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <utility>

using namespace zklock;

TEST_CASE("parse_connect_string: servers in order, IPv6 without brackets, the chroot", "[unit][connect]") {
  error_code ec;
  auto parts = parse_connect_string("zk1.example.com:2181,10.0.0.2:2182,[::1]:2183/app/locks", ec);
  REQUIRE_FALSE(ec);
  REQUIRE(parts.endpoints.size() == 3);
  CHECK(parts.endpoints[0].entry == "zk1.example.com:2181");
  CHECK(parts.endpoints[0].host == "zk1.example.com");
  CHECK(parts.endpoints[0].port == 2181);
  CHECK(parts.endpoints[1].host == "10.0.0.2");
  CHECK(parts.endpoints[1].port == 2182);
  CHECK(parts.endpoints[2].entry == "[::1]:2183");
  CHECK(parts.endpoints[2].host == "::1");
  CHECK(parts.endpoints[2].port == 2183);
  CHECK(parts.chroot == "/app/locks");
  parts = parse_connect_string("127.0.0.1:2181/", ec);
  REQUIRE_FALSE(ec);
  CHECK(parts.chroot.empty());
}

TEST_CASE("parse_connect_string: each error names the bad entry and keeps its code", "[unit][connect]") {
  struct bad {
    const char* connect;
    errc code;
    const char* names;  // part of the message
  };
  for (auto [connect, code, names] : {
           bad{"", errc::empty_connect_string, "empty"},
           bad{"/chroot", errc::malformed_connect_string, "no host:port before the chroot"},
           bad{"a:1,,b:2", errc::malformed_connect_string, "entry 2 is empty"},
           bad{"a:1,", errc::malformed_connect_string, "entry 2 is empty"},
           bad{"a:1,zk2", errc::malformed_connect_string, "'zk2' has no port"},
           bad{"[::1]", errc::malformed_connect_string, "'[::1]' has no port"},
           bad{":2181", errc::malformed_connect_string, "':2181' has no host"},
           bad{"a:1,zk 2:2181", errc::malformed_connect_string, "the host 'zk 2' of 'zk 2:2181'"},
           bad{"::1:2181", errc::malformed_connect_string, "the host '::1' of '::1:2181'"},
           bad{"a:1,b:x", errc::malformed_connect_string, "the port 'x' of 'b:x' is not a number in 1..65535"},
           bad{"b:0", errc::malformed_connect_string, "the port '0' of 'b:0'"},
           bad{"b:65536", errc::malformed_connect_string, "the port '65536' of 'b:65536'"},
           bad{"b:", errc::malformed_connect_string, "the port '' of 'b:'"},
           bad{"a:1/app/", errc::path_trailing_slash, "the chroot '/app/'"},
       }) {
    INFO("'" << connect << "'");
    error_code ec;
    auto parts = parse_connect_string(connect, ec);
    CHECK(ec == code);
    CHECK(parts.endpoints.empty());
    INFO(ec.message());
    CHECK(ec.message().find(names) != std::string::npos);
    if (*connect) CHECK(ec.message().find(std::string("'") + connect + "'") != std::string::npos);  // quoted whole
    CHECK(validate_connect_string(connect) == code);
  }
}

TEST_CASE("connect string validation", "[unit][path]") {
  const std::pair<std::string, error_code> cases[] = {
      {"127.0.0.1:2181", {}},
      {"a:1,b.example.com:2181,[::1]:2182", {}},
      {"h1:2181,h2:2181/app/locks", {}},
      {"", errc::empty_connect_string},
      {"localhost", errc::malformed_connect_string},
      {"localhost:", errc::malformed_connect_string},
      {"localhost:0", errc::malformed_connect_string},
      {"localhost:70000", errc::malformed_connect_string},
      {"localhost:12x", errc::malformed_connect_string},
      {"a:1,,b:2", errc::malformed_connect_string},
      {":2181", errc::malformed_connect_string},
      {"/chroot", errc::malformed_connect_string},
      {"a:1/chroot/", errc::path_trailing_slash},
  };
  for (const auto& [connect, want] : cases) {
    CAPTURE(connect);
    CHECK(validate_connect_string(connect) == want);
  }
}
