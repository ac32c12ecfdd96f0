// A held lock's life after the grant, as a sans-I/O state machine: lost-tracking and the
// release. Inputs: the session's state changes, the release request, the release's reply, the
// validity deadline; outputs: send the release, report the loss, complete the release. The
// mutex's `hold` carries the actions out; unit tests walk every interleaving without a server.
//
// Rules it keeps:
//  - A hold that was not released always gets its node deleted while its session lives, even
//    after it was reported lost (a long disconnection that the session survived): a lost hold
//    left in place would block every contender for the life of the session.
//  - A release whose request was lost with the connection is sent again after the reconnect;
//    if that retry finds the node gone while our session lives, the first one committed: the
//    release succeeded (only our session's delete or its expiry removes our ephemeral node).
//  - A release never waits for the network while the connection is down: it completes with
//    errc::release_pending and finishes in the background.
//  - A delete the server refuses is never counted as done: one it may accept later
//    (throttled_op, the C client's system_error) is sent again after a growing delay, a few
//    times; one it refuses for good (no_auth: the lock dir's ACL lacks DELETE, and any other
//    error, or the retries used up) leaves our node blocking the lock until the session ends,
//    and says so: the release's caller gets the error, release_failure() keeps it for the
//    guard, and report_release_failed asks the runner to log it (nobody may wait).
#pragma once

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <vector>

namespace zklock::detail {

struct hold_action {
  enum kind {
    send_release,      ///< delete our node (the marking transaction or a plain delete)
    report_lost,       ///< the lock is lost: tell the guard's lost waiters
    complete_release,  ///< the caller of the release gets `ec`
    retry_release,     ///< call on_retry_due() after `delay` (the server refused for now)
    report_release_failed,  ///< the server refused the delete for good (`ec`): our node stays
  };
  kind type;
  error_code ec;
  std::chrono::milliseconds delay{0};
};

class hold_fsm {
 public:
  using actions = std::vector<hold_action>;

  /// A hold starts held (connected) or maybe_lost (granted while the connection dropped).
  explicit hold_fsm(bool connected) noexcept
      : status_(connected ? lock_status::held : lock_status::maybe_lost),
        link_(connected ? link::connected : link::suspended) {}

  lock_status status() const noexcept { return status_; }
  /// True while our node may still exist and a delete is owed (sent or waiting to be sent).
  bool release_owed() const noexcept {
    return delete_ == delete_state::wanted || delete_ == delete_state::in_flight || delete_ == delete_state::backoff;
  }
  /// True once nothing is left to do: the node is deleted or went with the session.
  bool finished() const noexcept { return delete_ == delete_state::done; }
  /// Why the server refused to delete our node for good (empty otherwise): the node stays
  /// until the session ends, and blocks the lock meanwhile.
  error_code release_failure() const noexcept { return failure_; }
  /// How often a delete the server may accept later is sent again, after 100 ms, 200 ms, ...
  static constexpr int max_release_retries = 5;

  /// The connection dropped; the session may still live.
  actions on_suspended();
  /// Connected again. `same_session` false means the ZooKeeper session was replaced: our node
  /// belonged to the old one, so this counts as its end.
  actions on_connected(bool same_session);
  /// The session expired or was closed: our node is gone with it.
  actions on_session_ended();
  /// Our node is gone although the session lives (deleted by someone else).
  actions on_node_gone() { return on_session_ended(); }
  /// The validity deadline passed without a reply from the server: it may have expired the
  /// session and granted the lock to someone else.
  actions on_deadline();
  /// The owner gives the lock back. `caller_waits`: someone waits for the outcome.
  actions release(bool caller_waits);
  /// Reply to send_release.
  actions on_release_reply(error_code ec);
  /// The delay asked by retry_release has passed.
  actions on_retry_due();

 private:
  enum class link { connected, suspended, ended };
  // backoff: refused for now, wanted again after retry_release's delay; failed: refused for
  // good, our node stays until the session ends
  enum class delete_state { none, wanted, in_flight, backoff, failed, done };

  actions lose();
  actions send_if_connected();
  void complete(actions& out, error_code ec);

  lock_status status_;
  link link_;
  delete_state delete_ = delete_state::none;
  int attempts_ = 0;           // release requests sent
  int retries_ = 0;            // of them, resent after the server refused for now
  error_code failure_;         // see release_failure()
  bool caller_waits_ = false;  // a caller waits for complete_release
};

}  // namespace zklock::detail
