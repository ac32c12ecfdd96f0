// The state machines' properties, shared by the seeded Catch2 tests (test/unit/fsm_property_test.cpp)
// and the libFuzzer driver (test/fuzz): one run of acquire_fsm against the simulated lock dir
// (lock_dir_sim.hpp), judged by the oracle (oracle.hpp), and one run of hold_fsm against its
// simulated session (hold_sim.hpp), each drawing its inputs from a Source (sources.hpp). A broken
// invariant is returned as a message.
//
// The draws changed when node data, foreign writes and downgrades came in: a seed printed
// by a failure before it replays another run.
#pragma once

#include "hold_sim.hpp"
#include "lock_dir_sim.hpp"
#include "oracle.hpp"
#include "sources.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace zklock::testing {

/// One run of the lock property: random kind, mode, K (blockers watched), queue, releases,
/// arrivals, data changes, deletions of any contender's node ours included (an operator's),
/// cancellation, expiry (and with `faults`, connection drops and reconnects) in random order.
/// Data changes: foreign writes to any contender, the holder included ("__REVOKE__", anything,
/// a forged downgrade with or without a forged mark: never a grant), the head writer's
/// downgrade (its mark and its marker: readers may join it), the release transaction
/// of a zklock 2 holder (setData then delete).
/// Invariants: one completion and nothing after it; never two nodes of ours; no request the
/// state forbids (sim::violation: among them a second watch on a node, queueing again while our
/// node exists); check_completion at the completion (no grant without our node, its watch
/// handed over); at the end, with the
/// connection back and every contender gone, a waiting acquire completes. Returns the first
/// broken one. `watch_own_node` false: the machine never watches its own node (the semaphore's
/// internal mutex); a grant on a node deleted by someone else is then allowed (nothing told it).
template <class Source>
std::optional<std::string> run_lock_property(Source& rng, bool faults, bool watch_own_node = true) {
  const std::string prefixes[] = {mutex_prefix, reader_prefix, writer_prefix, lease_prefix};
  const lock_kind kinds[] = {lock_kind::exclusive, lock_kind::read, lock_kind::write, lock_kind::lease};
  lock_kind kind = kinds[rng() % 4];
  auto mode_draw = rng() % 8;
  lock_mode mode = mode_draw < 2 ? lock_mode::try_once : mode_draw == 2 ? lock_mode::try_after_probe : lock_mode::wait;
  int max_leases = 1 + static_cast<int>(rng() % 3);
  int max_watched = 1 + static_cast<int>(rng() % 4);  // K: 1 (the nearest only) to 4
  sim s;
  s.fsm = acquire_fsm(s.dir, our_id, mode, kind, max_leases, max_watched);
  s.fsm.set_watch_own_node(watch_own_node);
  s.glue = true;
  auto foreign_prefix = [&] {
    // leases only meet leases (their own dir); the others meet every lock kind
    return kind == lock_kind::lease ? prefixes[3] : prefixes[rng() % 3];
  };
  // A contender arrives, with its node's data: a mutex node is Curator's or kazoo's (no
  // marker), a zklock 2 one or a zklock 3 one; shared nodes carry the shared marker.
  auto arrive = [&] {
    auto prefix = foreign_prefix();
    std::string_view d;
    if (prefix == mutex_prefix) {
      std::string_view markers[] = {{}, detail::contender_marker_v2, detail::contender_marker};
      d = markers[rng() % 3];
    } else if (prefix != lease_prefix) {
      d = detail::shared_marker;
    }
    return s.add_foreign(prefix, d);
  };
  std::vector<std::string> foreign;
  for (int i = rng() % 4; i > 0; --i) foreign.push_back(arrive());
  bool cancelled = false, expired = false, checked = false;
  s.contact_stale = [&] { return rng() % 3 == 0; };
  s.throttle_delete = [&] { return rng() % 3 == 0; };  // sometimes until the retries run out
  // Rarely, the session ended under the grant (its state event still queued): no grant.
  s.session_over_at_grant = [&]() -> error_code {
    if (expired || rng() % 16 != 0) return {};
    expired = true;
    s.watches.clear();
    for (auto it = s.children.begin(); it != s.children.end();)
      it = it->first.starts_with(s.fsm.node_prefix()) ? s.children.erase(it) : std::next(it);
    return errc::session_closed;
  };
  s.apply(s.fsm.start());
  auto check = [&]() -> std::optional<std::string> {
    if (!s.violation.empty()) return s.violation;
    if (s.ours() > 1) return "two nodes of ours";
    if (s.completions > 1) return "two completions";
    if (s.completed && !checked) {
      checked = true;
      if (!s.fsm.result().ec && s.fsm.answered_early()) return "granted after the caller was answered";
      return check_completion(s, kind, max_leases, expired);
    }
    return std::nullopt;
  };
  for (int steps = 0; steps < 200 && !s.completed && !rng.exhausted(); ++steps) {
    switch (rng() % (faults ? 11 : 9)) {
      case 0:
        if (rng() % 5 == 0) {
          // someone else deletes our node (an operator, a reaper): we must queue again
          s.delete_ours();
        } else if (!foreign.empty()) {
          auto i = rng() % foreign.size();
          s.delete_foreign(foreign[i]);
          foreign.erase(foreign.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      case 1:
        if (rng() % 3 == 0) foreign.push_back(arrive());
        break;
      case 4:
        if (!foreign.empty()) {
          auto i = rng() % foreign.size();
          switch (rng() % 3) {
            case 0:
              // A foreign write to any contender, the holder included (Curator's Revoker,
              // an operator's set): the holder still holds, nobody may be granted by it.
              switch (rng() % 4) {
                case 0: s.change_data(foreign[i], "__REVOKE__"); break;
                case 1: s.change_data(foreign[i], "operator data"); break;
                // a forged downgrade: the marker written by another session, with or without
                // a mark of its own (never a grant: the writer still holds the write side)
                case 2: s.change_data(foreign[i], detail::downgraded_marker); break;
                default:
                  s.forge_mark(foreign[i]);
                  s.change_data(foreign[i], detail::downgraded_marker);
                  break;
              }
              break;
            case 1:
              s.downgrade_head();  // the head writer downgrades (when the head is one)
              break;
            default:
              if (s.data_of(foreign[i]) == detail::contender_marker_v2) {
                // a zklock 2 holder's release: data changed, then gone; only the head holds
                // (a zklock 2 waiter that gives up deletes its node without the marker)
                if (detail::queue_order(s.listing()).front().name == foreign[i])
                  s.release_zklock(foreign[i]);
                else
                  s.delete_foreign(foreign[i]);
                foreign.erase(foreign.begin() + static_cast<std::ptrdiff_t>(i));
              } else {
                s.change_data(foreign[i], "x");
              }
              break;
          }
        }
        break;
      case 2:
        if (!cancelled && rng() % 6 == 0) {
          cancelled = true;
          switch (rng() % 3) {
            case 0: s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, detail::stop_kind::total, s.connected)); break;
            case 1: s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, detail::stop_kind::at_once, s.connected)); break;
            default: s.apply(s.fsm.on_timeout(s.connected)); break;
          }
        } else if (cancelled && rng() % 6 == 0) {
          // a second cancellation (terminal after a total one, or after the timeout)
          s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, detail::stop_kind::at_once, s.connected));
        }
        break;
      case 3:
        if (!expired && rng() % 40 == 0) {
          expired = true;
          s.replies.clear();
          s.ours_news = 0;
          s.held_events.clear();
          s.watches.clear();
          for (auto it = s.children.begin(); it != s.children.end();)
            it = it->first.starts_with(s.fsm.node_prefix()) ? s.children.erase(it) : std::next(it);
          s.apply(s.fsm.on_expired());
        }
        break;
      case 5:
        s.backoff_delete_due();  // the delay of a refused cleanup delete passed
        break;
      case 9: {
        bool was = s.connected;
        s.drop_connection([&] { return rng() % 2 == 0; });
        if (was) s.apply(s.fsm.on_suspended());
        // a try-acquire never waits for a reconnect: it has answered by now
        if (was && mode != lock_mode::wait && !s.completed && s.early_answers == 0)
          return "a try-acquire still waiting after the connection dropped";
        break;
      }
      case 10:
        s.reconnect();
        break;
      default:
        if (!s.step() && foreign.empty() && !cancelled && s.connected) {
          cancelled = true;  // nothing left to happen: give up, which must still clean up
          s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
        }
        break;
    }
    if (auto bad = check()) return bad;
  }
  // Settle: the connection back, the late replies (ignored after a completion), every
  // contender gone; whatever was still waiting must now complete.
  s.reconnect();
  s.drain();
  for (int i = 0; i < 10 && s.backoff_due; ++i) s.backoff_delete_due(), s.drain();
  if (auto bad = check()) return bad;
  if (!s.completed && !expired) {
    for (auto& f : foreign) s.delete_foreign(f);
    foreign.clear();
    s.drain();
    for (int i = 0; i < 10 && s.backoff_due; ++i) s.backoff_delete_due(), s.drain();
    if (auto bad = check()) return bad;
    if (!s.completed) return "still waiting with the connection up and no contender left";
  }
  if (s.completed && !expired && !s.fsm.result().ec && s.ours() != 1 && s.operator_deletes == 0)
    return "our granted node vanished";
  if (s.completed && !expired && s.fsm.result().ec && s.ours() != 0 && s.cleanup_failures == 0)
    return "a node of ours left after the failure, not reported";
  if (s.backoff_due && s.completed) return "a delete backoff due after the completion";
  return std::nullopt;
}

/// One run of the hold property. Inputs at random, among them the clock: time passing (the
/// timer fires when due), contact (a reply moves the deadline), the keepalive's reply, waiters
/// of async_wait_deadline. After each step: at most one request in flight, nothing sent while
/// the connection is down or after the session ended, at most one lost report, a release's
/// answer only to a waiting caller; a hold that owns never has its deadline behind it, keeps a
/// timer armed at or before it, and has answered every deadline waiter whose lead is reached;
/// at most one keepalive in flight, none before a third of the session timeout. At the end,
/// with the connection back and replies applied, a hold whose session lives has its node
/// deleted if it was released or lost, and every release that waited got exactly one answer.
template <class Source>
std::optional<std::string> run_hold_property(Source& rng) {
  using namespace std::chrono_literals;
  hold_driver d(rng() % 4 != 0);
  bool released = false;
  bool node_gone = false;  // deleted by someone else (or by our release)
  int expected_completions = 0;  // every release that waits is answered exactly once
  d.tick();                      // hold::start
  for (int step = 0; step < 30 && !rng.exhausted(); ++step) {
    int sends_before = d.sends, keepalives_before = d.keepalives;
    switch (rng() % 13) {
      case 0:
        d.drop_connection();
        d.tick();
        break;
      case 1: {
        bool same = rng() % 8 != 0;
        d.apply(d.fsm.on_connected(same));
        if (!d.ended) d.connected = true;
        if (!same) d.ended = true, d.connected = false;
        d.tick();
        break;
      }
      case 2:
        d.apply(d.fsm.on_session_ended());
        d.ended = true;
        d.connected = false;
        d.in_flight = false;  // requests of a dead session never answer
        d.keepalive_in_flight = false;
        d.tick();
        break;
      case 3:
        d.advance(std::chrono::milliseconds(rng() % 4000));  // past the deadline, sometimes
        break;
      case 4: {
        bool waits = rng() % 2 == 0;
        int before = d.completions;
        d.apply(d.fsm.release(waits));
        expected_completions += waits;
        if (released && waits && d.completions != before + 1) return "a second release not answered at once";
        if (released && waits && d.last_completion != errc::already_released) return "a second release not already_released";
        released = true;
        d.deadline_waiters.clear();  // hold::release_one answers them (already_released)
        d.timer.reset();             // and cancels the timer
        d.tick();
        break;
      }
      case 5: {
        // the server's answers: applied, gone, refused for now (throttled), refused for good
        static const error_code replies[] = {{}, {}, zk_errc::no_node, zk_errc::throttled_op, zk_errc::no_auth, {}};
        if (!d.in_flight) break;
        auto r = node_gone ? error_code(zk_errc::no_node) : replies[rng() % 6];
        if (!r && !node_gone) {
          // our delete: our node's watch fires before the reply; it is no loss
          int losts = d.losts;
          node_gone = true;
          d.apply(d.fsm.on_node_deleted());
          if (d.losts != losts) return "our own delete reported as a loss";
        }
        d.reply(r);
        break;
      }
      case 6:
        if (d.in_flight || d.keepalive_in_flight) d.drop_connection(), d.tick();
        break;
      case 7:
        d.backoff_due();
        break;
      case 8:
        d.advance(std::chrono::milliseconds(rng() % 1200));
        break;
      case 9:
        if (d.connected && !d.ended) d.last_ack = d.now;  // another request's reply: contact
        break;
      case 10:
        // the keepalive's reply: our node, rarely gone (an administrator's delete)
        if (d.keepalive_in_flight) d.keepalive_reply({}, rng() % 8 != 0);
        break;
      case 11: {
        static const std::chrono::milliseconds leads[] = {0ms, 500ms, 1500ms, 5000ms};
        auto st = d.fsm.status();
        if (st == lock_status::held || st == lock_status::maybe_lost) d.add_waiter(leads[rng() % 4]);
        break;
      }
      case 12: {
        // someone else deletes our node; the watch on it (or the getData setting it) tells at once
        if (node_gone || d.ended || !d.connected) break;  // (events come while connected)
        node_gone = true;
        auto st = d.fsm.status();
        int losts = d.losts;
        d.apply(d.fsm.on_node_deleted());
        if ((st == lock_status::held || st == lock_status::maybe_lost) &&
            (d.losts != losts + 1 || lock_lost_cause(d.lost_error) != lost_cause::node_deleted))
          return "a holder not lost (node_deleted) at its node's deletion";
        if (st == lock_status::released && d.losts != losts) return "a released hold reported lost";
        break;
      }
    }
    if (!d.violation.empty()) return d.violation;
    if (d.sends > sends_before && !(d.connected && !d.ended)) return "a release sent while the connection is down";
    if (d.keepalives > keepalives_before + 1) return "two keepalives in one step";
    if (d.losts > 1) return "the loss reported twice";
    if (d.completions > expected_completions) return "a release answered twice";
    if (d.failures > 1) return "a refused delete reported twice";
    if (d.failures != (d.fsm.release_failure() ? 1 : 0)) return "a refused delete not kept for the guard";
    auto st = d.fsm.status();
    if ((st == lock_status::held || st == lock_status::maybe_lost) && !d.ended) {
      if (d.valid_until() <= d.now) return "owns the lock past its validity deadline";
      if (!d.timer) return "owns the lock with no timer armed";
      for (auto& [id, lead] : d.deadline_waiters)
        if (d.valid_until() - lead <= d.now) return "a deadline waiter not answered at its lead";
    }
  }
  // settle: connection back, replies answered, retries due
  if (!d.ended) {
    d.connected = true;
    d.apply(d.fsm.on_connected(true));
    while (d.in_flight || d.backoff_pending) {
      if (d.in_flight) d.reply(node_gone ? error_code(zk_errc::no_node) : error_code{});
      d.backoff_due();
    }
    // a node left behind is either deleted or reported (the server refused it for good)
    if ((released || d.fsm.status() == lock_status::lost) && !d.fsm.finished() && !d.fsm.release_failure())
      return "released or lost, the session alive, and the node neither deleted nor reported";
    // with no reply any more, time runs out: a hold that still owns is lost at its deadline
    auto st = d.fsm.status();
    if (st == lock_status::held || st == lock_status::maybe_lost) {
      for (int i = 0; i < 10 && d.losts == 0; ++i) d.advance(1000ms);
      if (d.losts != 1) return "still owns the lock long after its deadline";
    }
  } else if (d.fsm.release_owed()) {
    return "a delete still owed by a session that ended";
  }
  if (!d.violation.empty()) return d.violation;
  if (d.completions != expected_completions)
    return std::to_string(expected_completions) + " waiting releases, " + std::to_string(d.completions) + " answers";
  return std::nullopt;
}

}  // namespace zklock::testing
