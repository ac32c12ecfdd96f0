// The validity deadline moves only on replies a server sent (issue 22, bug 3).
#include "engine/contact.hpp"

#include <catch2/catch.hpp>

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
