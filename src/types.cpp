// The names of the vocabulary's values (include/zklock/types.hpp), for logs and messages.
#include <zklock/types.hpp>

namespace zklock {

const char* to_string(session_state s) noexcept {
  switch (s) {
    case session_state::disconnected: return "disconnected";
    case session_state::connecting: return "connecting";
    case session_state::connected: return "connected";
    case session_state::suspended: return "suspended";
    case session_state::reconnected: return "reconnected";
    case session_state::expired: return "expired";
    case session_state::closed: return "closed";
  }
  return "?";
}

const char* to_string(watch_event_type t) noexcept {
  switch (t) {
    case watch_event_type::created: return "created";
    case watch_event_type::deleted: return "deleted";
    case watch_event_type::changed: return "changed";
    case watch_event_type::child: return "child";
    case watch_event_type::not_watching: return "not_watching";
  }
  return "?";
}

const char* to_string(lock_kind k) noexcept {
  switch (k) {
    case lock_kind::exclusive: return "exclusive";
    case lock_kind::read: return "read";
    case lock_kind::write: return "write";
    case lock_kind::lease: return "lease";
    case lock_kind::candidate: return "candidate";
  }
  return "?";
}

const char* to_string(lock_status s) noexcept {
  switch (s) {
    case lock_status::held: return "held";
    case lock_status::maybe_lost: return "maybe_lost";
    case lock_status::lost: return "lost";
    case lock_status::released: return "released";
  }
  return "?";
}

}  // namespace zklock
