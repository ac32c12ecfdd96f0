// The validity deadline moves only on replies a server sent.
#include "engine/contact.hpp"
#include "engine/handshake.hpp"

#include <catch2/catch.hpp>

using zklock::detail::implausible_handshake_bytes;
using zklock::detail::proves_contact;

TEST_CASE("only replies a server sent prove contact: an allow-list", "[unit][engine]") {
  for (int rc : {ZOK, ZNONODE, ZNOAUTH, ZBADVERSION, ZNOCHILDRENFOREPHEMERALS, ZNODEEXISTS, ZNOTEMPTY, ZINVALIDACL,
                 ZNOWATCHER, ZEPHEMERALONLOCALSESSION, ZRECONFIGDISABLED}) {
    INFO("rc " << rc);
    CHECK(proves_contact(rc));
  }
  // made up by the C client (connection loss, socket() failing, cleanup of a dead handle, ...),
  // or sent without proof that the session was touched
  for (int rc : {ZSYSTEMERROR, ZRUNTIMEINCONSISTENCY, ZDATAINCONSISTENCY, ZCONNECTIONLOSS, ZMARSHALLINGERROR,
                 ZUNIMPLEMENTED, ZOPERATIONTIMEOUT, ZBADARGUMENTS, ZINVALIDSTATE, ZNEWCONFIGNOQUORUM,
                 ZRECONFIGINPROGRESS, ZSSLCONNECTIONERROR, ZAPIERROR, ZSESSIONEXPIRED, ZINVALIDCALLBACK, ZAUTHFAILED,
                 ZCLOSING, ZNOTHING, ZSESSIONMOVED, ZNOTREADONLY, ZSESSIONCLOSEDREQUIRESASLAUTH, ZTHROTTLEDOP}) {
    INFO("rc " << rc);
    CHECK_FALSE(proves_contact(rc));
  }
  // a code this client version does not know extends nothing either
  for (int rc = -1000; rc < 0; ++rc)
    if (rc < -127 || rc > -100 || rc == -104 || rc == -105 || rc == -106 || rc == -107 || rc == -109 || rc == -122 ||
        rc == -125 || rc == -126)
      CHECK_FALSE(proves_contact(rc));
  CHECK_FALSE(proves_contact(1));
}

namespace {
// A ConnectResponse as a server sends it: length 37, protocol 0, timeout, session id,
// password length 16, password, read-only flag.
std::string connect_response(std::int32_t timeout_ms, std::int64_t session_id) {
  std::string r;
  auto put32 = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) r += static_cast<char>((v >> shift) & 0xff);
  };
  put32(37);
  put32(0);
  put32(static_cast<std::uint32_t>(timeout_ms));
  put32(static_cast<std::uint32_t>(static_cast<std::uint64_t>(session_id) >> 32));
  put32(static_cast<std::uint32_t>(session_id));
  put32(16);
  r += std::string(16, '\x5a');
  r += '\0';
  return r;
}
}  // namespace

TEST_CASE("the answer to a connect request: a ZooKeeper reply passes at every length, anything else is named",
          "[unit][engine]") {
  using namespace std::chrono_literals;
  auto good = connect_response(4000, 0x100001e74a60000);
  REQUIRE(good.size() == zklock::detail::handshake_reply_size);
  for (std::size_t n = 1; n <= good.size(); ++n) {  // however much of it arrived so far
    INFO("first " << n << " bytes");
    CHECK_FALSE(implausible_handshake_bytes(4000ms, std::string_view(good).substr(0, n), false));
  }
  // A server that expired the session we resume answers with a timeout and an id of 0: ZooKeeper's
  // answer, which the C client must read (the session ends); not on a first connect.
  auto expired = connect_response(0, 0);
  CHECK_FALSE(implausible_handshake_bytes(4000ms, expired, true));
  CHECK(implausible_handshake_bytes(4000ms, expired, false));
  // Text: an HTTP server's answer, named by what it said.
  auto http = implausible_handshake_bytes(4000ms, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", true);
  REQUIRE(http);
  CHECK(http->find("HTTP/1.1 400 Bad Request") != std::string::npos);
  CHECK(implausible_handshake_bytes(4000ms, "SSH-", false));  // four bytes are enough
  // Binary, but not ZooKeeper's: another protocol version, a password of another size, a
  // session timeout of days.
  auto other_version = good;
  other_version[7] = 1;
  CHECK(implausible_handshake_bytes(4000ms, other_version, false));
  auto other_password = good;
  other_password[23] = 8;
  CHECK(implausible_handshake_bytes(4000ms, other_password, false));
  CHECK(implausible_handshake_bytes(4000ms, connect_response(0x20343030, 0x2042616420526571), true));
}
