#include "sansio/revocation_fsm.hpp"

#include <utility>

namespace zklock::detail {

revocation_fsm::actions revocation_fsm::read() {
  watch_ = watch::reading;
  return {sansio::request::get_data_of(++generation_, {}, watch_slot)};
}

revocation_fsm::actions revocation_fsm::remove() {
  watch_ = watch::removing;
  fired_while_removing_ = false;
  return {sansio::request::remove_watch_of(generation_, watch_slot)};
}

revocation_fsm::actions revocation_fsm::complete(error_code ec) {
  if (waiters_ == 0) return {};
  waiters_ = 0;
  return {sansio::request::outcome(revocation_outcome::complete_waiters, 0, ec)};
}

revocation_fsm::actions revocation_fsm::add_waiter() {
  if (ended_) return {};
  ++waiters_;
  // Set lazily, on the first wait; a watch already set (or being set) covers this waiter too:
  // every write since its read fires it.
  if (watch_ == watch::none) return read();
  return {};
}

revocation_fsm::actions revocation_fsm::remove_waiter() {
  if (ended_ || waiters_ == 0) return {};
  --waiters_;
  // Nobody waits: take the watch back (a read in flight is taken back when it answers; one
  // waiting for the connection is removed, or not read, after it).
  if (waiters_ == 0 && watch_ == watch::set) return remove();
  return {};
}

revocation_fsm::actions revocation_fsm::on_hold_ended(error_code ec) {
  if (ended_) return {};
  ended_ = true;
  return complete(ec);
}

revocation_fsm::actions revocation_fsm::on_data(std::uint64_t generation, error_code ec, std::string_view data,
                                                std::int32_t version, bool connected) {
  if (ended_ || watch_ != watch::reading || generation != generation_) return {};
  if (!ec) {
    watch_ = watch::set;  // the read registered its watch
    actions out;
    // (reported only to someone: a request read while nobody waits stays for the next waiter)
    if (waiters_ > 0 && data == revoke_message && version > reported_version_) {
      reported_version_ = version;
      out = complete({});
    }
    // Nobody waits (all cancelled meanwhile, or just told): no watch stays behind.
    if (waiters_ == 0) {
      auto r = remove();
      out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  }
  watch_ = watch::none;  // a failed read registers no watch
  if (ec == zk_errc::no_node) return {sansio::request::outcome(revocation_outcome::check_node)};
  if (ec == condition::connection_lost) {
    if (waiters_ == 0) return {};
    if (connected) return read();
    watch_ = watch::awaiting_connection;
    after_ = after_connection::read;
    return {sansio::request::connection()};
  }
  // The session is gone (the hold's end follows), or the server refused the read.
  return complete(ec == condition::session_lost ? error_code(errc::lock_lost) : ec);
}

revocation_fsm::actions revocation_fsm::on_watch_event(std::uint64_t generation, error_code ec,
                                                       watch_event_type type) {
  if (ended_ || generation != generation_) return {};
  if (watch_ == watch::removing) {
    // Fired before the removal, whose reply decides what comes next (no_watcher; or a lost
    // connection, after which no watch is left to set again).
    fired_while_removing_ = true;
    if (!ec && type == watch_event_type::deleted) return {sansio::request::outcome(revocation_outcome::check_node)};
    return {};
  }
  // reading: not registered yet, cannot fire
  if (watch_ != watch::set && !(watch_ == watch::awaiting_connection && after_ == after_connection::remove)) return {};
  watch_ = watch::none;  // a one-shot watch: fired, or taken with the session
  if (ec) return complete(ec == condition::session_lost ? error_code(errc::lock_lost) : ec);
  if (type == watch_event_type::deleted) return {sansio::request::outcome(revocation_outcome::check_node)};
  // changed (or dropped by someone else's removal): read again while someone waits
  if (waiters_ > 0) return read();
  return {};
}

revocation_fsm::actions revocation_fsm::on_watch_removed(std::uint64_t generation, error_code ec, bool connected) {
  if (ended_ || watch_ != watch::removing || generation != generation_) return {};
  const bool fired = std::exchange(fired_while_removing_, false);
  if (ec == condition::connection_lost && !fired) {
    // The C client keeps the watcher and sets it again after the reconnect.
    if (waiters_ > 0) {
      watch_ = watch::set;  // still registered: it covers the new waiters
      return {};
    }
    if (connected) return remove();
    watch_ = watch::awaiting_connection;
    after_ = after_connection::remove;
    return {sansio::request::connection()};
  }
  // removed, already fired (no_watcher), or gone with the session
  watch_ = watch::none;
  if (ec == condition::session_lost) return complete(errc::lock_lost);
  if (waiters_ > 0) return read();
  return {};
}

revocation_fsm::actions revocation_fsm::on_connected() {
  if (ended_ || watch_ != watch::awaiting_connection) return {};
  if (after_ == after_connection::read) {
    watch_ = watch::none;
    if (waiters_ > 0) return read();
    return {};
  }
  // a watch whose removal was lost with the connection: still registered
  watch_ = watch::set;
  if (waiters_ == 0) return remove();
  return {};
}

}  // namespace zklock::detail
