// A held lock's life after the grant, as a sans-I/O state machine: lost-tracking, the
// validity deadline with its keepalive, and the release. Inputs: the session's state changes,
// the clock (on_clock: a timer fired, a state changed, a reply came), the keepalive's reply, the
// release request, the release's reply; outputs: arm the timer, send a keepalive, report the
// loss, send the release, complete the release (request.hpp's requests and hold_outcome).
// hold_machine (with the session's state, our node's watch and revocation) wraps it for the
// runner, which carries them out for `hold`; unit tests walk every interleaving without a server.
//
// Rules it keeps:
//  - A hold that was not released always gets its node deleted while its session lives, even
//    after it was reported lost (a long disconnection that the session survived): a lost hold
//    left in place would block every contender for the life of the session.
//  - A release whose request was lost with the connection is sent again after the reconnect;
//    if that resend finds the node gone while our session lives, the first one committed: the
//    release succeeded (only our session's delete or its expiry removes our ephemeral node).
//  - A release never waits for the network while the connection is down: it completes with
//    errc::release_pending and finishes in the background.
//  - A delete the server refuses is never counted as done: one it may accept later
//    (throttled_op, the C client's system_error) is sent again after a growing delay, a few
//    times; one it refuses for good (no_auth: the lock dir's ACL lacks DELETE, and any other
//    error, or the backoffs used up) leaves our node blocking the lock until the session ends,
//    and says so: the release's caller gets the error, release_failure() keeps it for the
//    guard, and report_release_failed asks the runner to log it (nobody may wait).
//  - The validity deadline (lock_guard::valid_until: the last reply + the session timeout - a
//    margin) is kept ahead while the connection is idle by a keepalive of our own (an exists on
//    our node, which also finds a node deleted under us) once a third of the session timeout
//    passed without a reply; when it passes the hold is lost. The timer is always armed at or
//    before the deadline. A local hold (mutex_options::local_queue) neither sends nor loses on
//    its own: its node's hold does; it only serves its async_wait_deadline waiters. Its release
//    deletes nothing (the node is its queue's, which hands it on or releases it).
//  - A holder learns its node's deletion from the first event or reply after it: the runner
//    watches the node for the hold's whole life (on_node_deleted), whatever else the session
//    does; the keepalive's and the reconnect's checks stay as a second way.
#pragma once

#include "sansio/node_delete_backoff.hpp"
#include "sansio/request.hpp"

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace zklock::detail {

/// When our contact with the server is stale and a request of ours is due to refresh it: a third
/// of the session timeout after the last reply (the C client's own ping cadence). The hold's
/// keepalive and the acquire's refresh before a grant (grant_view::contact_stale) go by it.
inline std::chrono::steady_clock::time_point contact_refresh_due(
    std::chrono::steady_clock::time_point last_acknowledged, std::chrono::milliseconds session_timeout) noexcept {
  return last_acknowledged + session_timeout / 3;
}

/// What the session says of its contact with the server when an input arrives.
struct hold_clock {
  using time_point = std::chrono::steady_clock::time_point;
  time_point now;
  time_point valid_until;          ///< last reply + negotiated timeout - margin
  time_point last_acknowledged;    ///< the last reply the server sent
  std::chrono::milliseconds session_timeout{0};  ///< the negotiated one
  bool connected = false;          ///< the session's state right now
  bool ended = false;              ///< expired, closed or disconnected: its event is on its way
};

/// What hold_fsm asks: request.hpp's requests (timer_at in `clock_timer`: on_clock(); stop_timer;
/// timer_after in `backoff_timer`: on_backoff_due(), the server refused a delete for now;
/// exists of our node, path empty: the keepalive, its reply to on_keepalive_reply()) and these
/// outcomes (request::notify).
enum class hold_outcome : std::uint8_t {
  send_release,           ///< delete our node (the marking transaction or a plain delete)
  report_lost,            ///< the lock is lost (`ec`): tell the guard's lost waiters
  complete_release,       ///< the caller of the release gets `ec`
  report_release_failed,  ///< the server refused the delete for good (`ec`): our node stays
  deadline_near,          ///< async_wait_deadline waiter `id` is due: complete it (success)
  // (hold_machine's, beside hold_fsm's)
  revoked,                ///< every async_wait_revoked waiter completes with `ec` (empty: a request)
  signal_lost,            ///< after report_lost's waiters: emit the guard's lost signal
};

class hold_fsm {
 public:
  using actions = std::vector<sansio::request>;
  /// The tags and slots of its requests.
  enum tag : std::uint64_t { clock = 1, backoff_due, keepalive };
  static constexpr std::uint8_t clock_timer = 0, backoff_timer = 1;

  /// A hold starts held (connected) or maybe_lost (granted while the connection dropped).
  /// `local`: a local queue's hold, which keeps no deadline of its own (see above).
  explicit hold_fsm(bool connected, bool local = false) noexcept
      : status_(connected ? lock_status::held : lock_status::maybe_lost),
        link_(connected ? link::connected : link::suspended),
        local_(local) {}

  lock_status status() const noexcept { return status_; }
  /// True while our node may still exist and a delete is owed (sent or waiting to be sent).
  bool release_owed() const noexcept {
    return delete_ == delete_state::wanted || delete_ == delete_state::in_flight || delete_ == delete_state::backoff;
  }
  /// True once nothing is left to do: the node is deleted or went with the session.
  bool finished() const noexcept { return delete_ == delete_state::done; }
  /// What the hold last heard of the connection: connected (not suspended, not ended).
  bool hears_connected() const noexcept { return link_ == link::connected; }
  /// Why the server refused to delete our node for good (empty otherwise): the node stays
  /// until the session ends, and blocks the lock meanwhile.
  error_code release_failure() const noexcept { return failure_; }
  /// How often a delete the server may accept later is sent again, after 100 ms, 200 ms, ...
  /// (node_delete_backoff.hpp, shared with an acquire's cleanup).
  static constexpr int max_release_backoffs = delete_backoff::max_backoffs;

  /// Why the lock was lost (errc::lock_lost naming the cause; empty while not lost).
  error_code lost_error() const noexcept { return lost_; }

  /// The connection dropped; the session may still live.
  actions on_suspended();
  /// Connected again. `same_session` false means the ZooKeeper session was replaced: our node
  /// belonged to the old one, so this counts as its end.
  actions on_connected(bool same_session);
  /// The session expired or was closed (`why`: make_lock_lost of the cause): our node is gone with it.
  actions on_session_ended(error_code why = make_lock_lost(lost_cause::session_expired));
  /// Our node is gone although the session lives (deleted by someone else).
  actions on_node_gone() { return on_session_ended(make_lock_lost(lost_cause::node_deleted)); }
  /// Our node's watch says it was deleted (or the getData that set it found no node). After
  /// our own release's delete: nothing (its reply settles the release). Otherwise someone else
  /// deleted it: lost (node_deleted) at once, and nothing is left to delete.
  actions on_node_deleted();
  /// The validity deadline passed without a reply from the server: it may have expired the
  /// session and granted the lock to someone else.
  actions on_deadline();
  /// The time or the contact may have moved (the timer fired, a state changed, a reply came, a
  /// waiter came): lose at the deadline, send a keepalive when due, serve the deadline
  /// waiters, and arm the timer for what comes next.
  actions on_clock(const hold_clock& c);
  /// Reply to send_keepalive: `node_ours` says our node is there and our session's. Give it
  /// the clock of the reply (it moved the deadline).
  actions on_keepalive_reply(error_code ec, bool node_ours, const hold_clock& c);
  /// Reply to the check of our node after a reconnect (CURATOR-696: a node of an older
  /// session is not ours): as the keepalive's, without the clock.
  actions on_node_checked(error_code ec, bool node_ours);
  /// async_wait_deadline: `id` is due once the deadline is `lead` away (deadline_near), or
  /// dropped with the loss or the release (the runner answers those itself). Call on_clock after.
  void add_deadline_waiter(std::uint64_t id, std::chrono::steady_clock::duration lead);
  void remove_deadline_waiter(std::uint64_t id);
  bool keepalive_in_flight() const noexcept { return keepalive_in_flight_; }
  /// The owner gives the lock back. `caller_waits`: someone waits for the outcome.
  actions release(bool caller_waits);
  /// Reply to send_release.
  actions on_release_reply(error_code ec);
  /// The delay asked by backoff_release has passed.
  actions on_backoff_due();

 private:
  enum class link { connected, suspended, ended };
  // backoff: refused for now, wanted again after backoff_release's delay; failed: refused for
  // good, our node stays until the session ends
  enum class delete_state { none, wanted, in_flight, backoff, failed, done };

  actions lose(error_code why);
  actions send_if_connected();
  void complete(actions& out, error_code ec);

  lock_status status_;
  link link_;
  delete_state delete_ = delete_state::none;
  int attempts_ = 0;           // release requests sent
  delete_backoff backoff_;      // of them, resent after the server refused for now
  error_code failure_;         // see release_failure()
  error_code lost_;            // see lost_error()
  bool caller_waits_ = false;  // a caller waits for complete_release
  bool local_ = false;         // a local queue's hold: no deadline of its own
  bool keepalive_in_flight_ = false;
  struct deadline_waiter {
    std::uint64_t id;
    std::chrono::steady_clock::duration lead;
  };
  std::vector<deadline_waiter> deadline_waiters_;
};

}  // namespace zklock::detail
