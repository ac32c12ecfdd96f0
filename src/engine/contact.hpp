// Which replies prove that the server heard from us (the validity deadline of held locks moves
// only on those). Apart from the engine so that a unit test can walk every code.
#pragma once

#include <zookeeper/zookeeper.h>

namespace zklock::detail {

// Whether a reply code came from the server, which then had our request in hand (and touched
// the session): an allow-list, so that a code the C client makes up itself, or one added
// later, never extends the deadline. Made up locally, and so absent: connection loss,
// operation timeout, ZSYSTEMERROR (socket() failed: fd exhaustion), ZMARSHALLINGERROR,
// ZRUNTIMEINCONSISTENCY, ZCLOSING, ZSESSIONEXPIRED and ZAUTHFAILED (cleanup of an
// unrecoverable handle), ZINVALIDSTATE, ZSSLCONNECTIONERROR; ZBADARGUMENTS (the C client's own
// checks return it too). Sent by a server, but absent all the same: ZSESSIONMOVED (the session
// belongs to another connection), ZNOTREADONLY (a read-only server cannot keep a global session
// alive), ZTHROTTLEDOP (not executed; that the session was touched is not promised),
// ZSESSIONCLOSEDREQUIRESASLAUTH, ZUNIMPLEMENTED, ZNEWCONFIGNOQUORUM and ZRECONFIGINPROGRESS
// (system-error range; we never reconfigure).
// The C client also completes requests with ZOK locally when it leaves a read-only server for
// a read-write one (cleanup(zh, ZOK)); our handles are never read-only (no ZOO_READONLY flag).
constexpr bool proves_contact(int rc) noexcept {
  switch (rc) {
    case ZOK:
    case ZNONODE:
    case ZNOAUTH:
    case ZBADVERSION:
    case ZNOCHILDRENFOREPHEMERALS:
    case ZNODEEXISTS:
    case ZNOTEMPTY:
    case ZINVALIDACL:
    case ZNOWATCHER:  // the C client's own "no such watcher" is returned by the call, not replied
    case ZEPHEMERALONLOCALSESSION:
    case ZRECONFIGDISABLED:
      return true;
    default:
      return false;
  }
}

}  // namespace zklock::detail
