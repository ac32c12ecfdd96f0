// The simulated session hold_fsm runs against: it carries out the machine's requests (the
// release's delete, the keepalive, the timer), answers them when told, moves the clock and the
// connection, and records what was asked and what broke a rule of its own. No Catch2 here.
#pragma once

#include "driver_rules.hpp"
#include "sansio/hold_fsm.hpp"

#include <boost/asio/error.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::testing {

using detail::hold_outcome;
namespace sansio = detail::sansio;
using detail::hold_fsm;

/// Drives one hold_fsm and records what it asks for.
struct hold_driver : driver_rules {
  using time_point = std::chrono::steady_clock::time_point;
  hold_fsm fsm;
  int sends = 0, losts = 0, completions = 0, retries = 0, failures = 0;
  error_code last_completion;
  error_code lost_error;  // what report_lost said
  bool in_flight = false;
  bool backoff_pending = false;  // a backoff_release's delay is running
  // The clock and the session's contact (on_clock): a session timeout of 3 s, a margin of 1 s.
  time_point now{std::chrono::seconds(1000)}, last_ack = now;
  std::chrono::milliseconds session_timeout{3000};
  bool connected = true, ended = false;
  std::optional<time_point> timer;  // armed by arm_timer
  int keepalives = 0;
  bool keepalive_in_flight = false;
  std::map<std::uint64_t, std::chrono::milliseconds> deadline_waiters;  // id -> lead, not yet answered
  std::uint64_t next_waiter = 0;
  int deadline_answers = 0;

  explicit hold_driver(bool connected = true, bool local = false)
      : fsm(connected, local), connected(connected) {}

  time_point valid_until() const { return last_ack + session_timeout - std::chrono::seconds(1); }
  detail::hold_clock clock() const {
    return {.now = now, .valid_until = valid_until(), .last_acknowledged = last_ack, .session_timeout = session_timeout,
            .connected = connected && !ended, .ended = ended};
  }
  void tick() { apply(fsm.on_clock(clock())); }
  void add_waiter(std::chrono::milliseconds lead) {
    deadline_waiters[++next_waiter] = lead;
    fsm.add_deadline_waiter(next_waiter, lead);
    tick();
  }
  // Time passes; the timer fires on the way, at its time, each time it is due.
  void advance(std::chrono::milliseconds d) {
    auto until = now + d;
    for (int i = 0; i < 100 && timer && *timer <= until; ++i) {
      now = std::max(now, *timer);
      timer.reset();
      tick();
    }
    now = until;
  }
  // The keepalive's reply: from the server (contact) or lost with the connection.
  void keepalive_reply(error_code ec, bool node_ours = true) {
    if (!keepalive_in_flight) forbid("a keepalive reply without a request");
    keepalive_in_flight = false;
    if (!ec) last_ack = now;
    apply(fsm.on_keepalive_reply(ec, node_ours, clock()));
  }

  void apply(const hold_fsm::actions& actions) {
    for (const auto& a : actions) {
      if (a.type == sansio::request::timer && a.slot == detail::hold_fsm::backoff_timer) {  // backoff_release
        if (a.tag != detail::hold_fsm::tag::backoff_due) forbid("a backoff timer with another tag");
        if (backoff_pending) forbid("a second backoff while one is due");
        if (in_flight) forbid("a backoff while a release is in flight");
        backoff_pending = true;
        ++retries;
      } else if (a.type == sansio::request::timer) {  // arm_timer
        if (a.slot != detail::hold_fsm::clock_timer || a.tag != detail::hold_fsm::tag::clock)
          forbid("a timer of neither slot");
        if (a.at > valid_until()) forbid("a timer armed past the validity deadline");
        timer = a.at;
      } else if (a.type == sansio::request::cancel_timer) {  // stop_timer
        if (a.slot != detail::hold_fsm::clock_timer) forbid("the backoff timer stopped");
        timer.reset();
      } else if (a.type == sansio::request::exists) {  // send_keepalive
        if (a.tag != detail::hold_fsm::tag::keepalive || !a.path.empty()) forbid("a keepalive not on our node");
        if (keepalive_in_flight) forbid("a second keepalive while one is in flight");
        if (!connected || ended) forbid("a keepalive sent while the connection is down");
        if (last_ack + session_timeout / 3 > now) forbid("a keepalive before a third of the session timeout passed");
        keepalive_in_flight = true;
        ++keepalives;
      } else if (a.type != sansio::request::notify) {
        forbid("a request hold_fsm never makes");
      } else {
        switch (a.outcome_kind<hold_outcome>()) {
          case hold_outcome::send_release:
            if (in_flight) forbid("a second release request while one is in flight");
            in_flight = true;
            ++sends;
            break;
          case hold_outcome::report_lost:
            ++losts;
            lost_error = a.ec;
            if (a.ec != errc::lock_lost || lock_lost_cause(a.ec) == lost_cause::unknown)
              forbid("a loss reported without its cause: " + a.ec.message());
            break;
          case hold_outcome::complete_release:
            ++completions;
            last_completion = a.ec;
            break;
          case hold_outcome::report_release_failed:
            ++failures;
            break;
          case hold_outcome::deadline_near: {
            auto it = deadline_waiters.find(a.id);
            if (it == deadline_waiters.end()) {
              forbid("a deadline waiter answered twice (or never added)");
              break;
            }
            if (valid_until() - it->second > now) forbid("a deadline waiter answered before its lead");
            deadline_waiters.erase(it);
            ++deadline_answers;
            break;
          }
          case hold_outcome::signal_lost:
            if (losts == 0) forbid("the lost signal before the loss was reported");
            break;
          case hold_outcome::revoked:  // the revocation waiters: the runner's (runner_test)
            break;
        }
      }
      // The runner answers the waiters left with the loss (report_lost) or the release.
      if (a.type == sansio::request::notify && a.outcome_kind<hold_outcome>() == hold_outcome::report_lost)
        deadline_waiters.clear(), timer.reset();
    }
  }
  // the delay of backoff_release passed
  void backoff_due() {
    if (!backoff_pending) return;
    backoff_pending = false;
    apply(fsm.on_backoff_due());
  }
  void reply(error_code ec) {
    if (!in_flight) forbid("a reply without a request");
    in_flight = false;
    apply(fsm.on_release_reply(ec));
  }
  // the C client fails requests in flight when the connection drops
  void drop_connection() {
    connected = false;
    if (in_flight) reply(zk_errc::connection_loss);
    if (keepalive_in_flight) keepalive_reply(zk_errc::connection_loss);
    apply(fsm.on_suspended());
  }
};

}  // namespace zklock::testing
