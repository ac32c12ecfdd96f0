// The lock recipes as one sans-I/O state machine: inputs are replies, watch events and
// session changes; outputs are the requests to send next. No Asio, no ZooKeeper calls: the
// recipes' async operations carry the actions out, and unit tests walk every interleaving.
// One class, its members in files by question (each with test/unit/<file>_test.cpp): the entry
// into the queue (acquire_fsm.cpp), where it waits (acquire_wait.cpp), what grants
// (acquire_grant.cpp), lock-delay (acquire_lock_delay.cpp), a stop (acquire_cleanup.cpp), a lost
// connection (acquire_recovery.cpp), the try-lock's look (acquire_probe.cpp).
//
// Recipe (ZooKeeper "Locks" and "Shared Locks" recipes, Curator-compatible node names):
//  1. create "<lock>/_c_<id>-<marker>" EPHEMERAL_SEQUENTIAL and, pipelined behind it, list
//     <lock>; the marker says the kind: "lock-" (mutex), "__READ__" / "__WRIT__" (shared lock);
//  2. from the create's reply on, watch our own node (getData with a watch, sent as soon as its
//     name is known, behind the listing): its deletion by anyone but us is news, waiting or
//     holding. A waiter whose node goes queues again (a new node; a timed acquire keeps its
//     deadline); the holder's hold takes the watch over at the grant (hold_fsm: node_deleted).
//     A session's events and replies come in zxid order, so the deletion of our node is heard
//     before any later deletion that would grant us: no request is added to the handoff;
//  3. the grant rule (grant_rule below) says which contenders ahead of us block us: all of them
//     for a mutex or a writer, the writers for a reader. None: we hold the lock;
//  4. else watch the blockers of the listing, the nearest `max_watched` of them (K): the nearest
//     by getData, the others by getChildren. A node's deletion fires its data watches before its
//     child watches, so the waiter the deletion grants (the one right behind it) is told before
//     the waiters further back, whose watches only keep their place (ZooKeeper's DataTree).
//     When every blocker of the listing is watched, the deletion of the last one is our grant,
//     with no request (no node can get ahead of ours), provided our own node's watch is set
//     (step 2); while it is being set again (a write spent it) one exists on our node decides,
//     behind that watch's request. When the queue ahead is deeper than K, the deletion of a
//     watched blocker moves the window up without listing: the session's view of the dir
//     (dir_view.hpp: what its listings showed, less what it heard go) names our nearest blockers
//     still there (ask_view, answered by on_view), and the new ones are watched with single
//     requests; a name gone unheard answers no_node and leaves the view. The window moves while
//     K-1 blockers still stand between us and the lock, off the handoff path in a queue served in
//     order, and costs the same at any depth. We list again only when we must: after a
//     reconnect (unconfirmed_), a data change, our node or the dir gone. Each node is watched by
//     at most the K waiters behind it: K events per release.
//     A data change never grants: the event carries only its type, so a release cannot be told
//     from a foreign write (Curator's Revoker writes "__REVOKE__" into the holder's node). It
//     makes us list again, which watches that blocker again while it is there.
//  5. a downgrade (shared lock): only the head writer can hold, so only it can downgrade. A
//     reader whose listing shows the head writer's downgrade mark (downgrade_mark_name) checks
//     it (check_downgrade: the writer's and the mark's ephemeral owners, two exists in one
//     round trip, off the handoff path) and counts the writer as a reader once the mark is
//     the writer's session's (downgrade_proven). The node's data is never trusted: any session
//     may write "zklock/2:downgraded" into it, and a revocation request written over a
//     downgraded writer's data leaves its mark. A listing without a mark costs nothing more.
// A try-lock lists first and gives up on that read alone when a blocker is there (a busy lock
// costs no write); a try-read whose one blocker is the head writer, with its mark listed,
// checks the mark first: proven, the writer holds the read side, and the try goes on.
//
// Lock-delay (set_lock_delay; off by default, and then nothing below is sent): when a node
// ahead of us vanished because its owner's session ended (an expiry, or a session closed while
// it held), our grant waits lock_delay more, counted from when we learnt it. A release is not
// delayed. How we tell them apart without trusting data another client can write:
//  - every contender with the option on has its session create, before its lock node, an
//    ephemeral "beacon" <parent of the lock dir>/__zklock_sessions__/<session id, 16 hex>
//    (create_beacon; once per session and lock object, pipelined: no round trip of its own);
//  - a waiter learns each watched blocker's owner session from the Stat of its watch's getData
//    reply (a lease waiter reads each holder's Stat: read_owner), which the server sets; a
//    node gone before that reply is judged by the session its name claims
//    (lock_delay_client_id: only its creator names a node, so only it could lie, and then only
//    about its own successors' delay). Every blocker of a listing counts, not only the watched
//    ones: one outside the window that a later listing (or the session's view, when the window
//    moves: on_view) lacks vanished unheard, and is judged
//    the same way (by its name's claim), so a holder whose session ended delays every waiter
//    that was queued behind it;
//  - when a blocker vanishes, one exists on its owner's beacon (check_session) says which: a
//    node there whose ephemeralOwner is that session proves the session outlived the deletion
//    (the server deletes all of a session's ephemerals in the one transaction that ends it),
//    so the deletion was a release (or a foreign delete). Only that session can create an
//    ephemeral node it owns: no other client can forge a release. Anything else (no beacon, a
//    node of another owner, an error, a node gone before our watch's reply whose name claims
//    no session) counts as an ended session: the safe side, delayed (start_lock_delay).
// Consequences: a Curator, kazoo, or zklock-without-the-option holder creates no beacon, so
// each of its releases delays its successor (set the option on every contender); a holder
// that releases and ends its session at once may be gone before the successor's check (the
// check is sent on the deletion's event, one round trip) and is then delayed too. The check
// is one round trip on the handoff path of the last blocker only (the others' checks run
// while we still wait). A contender that queues after the node is gone never saw it and is
// not delayed: lock-delay is a rule of the successors, not of the server.
#pragma once

#include "sansio/dir_view.hpp"
#include "sansio/flag_set.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_delete_backoff.hpp"
#include "sansio/node_data.hpp"

#include <zklock/detail/acquire_params.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// What a watch says happened to its node (a blocker, our own node, or the lease dir).
enum class watch_change { deleted, data_changed, children_changed };

/// How many blockers a waiter watches at most (K): see the recipe above and
/// mutex_options::watched_blockers, whose default it is.
inline constexpr int default_watched_blockers = 2;

struct acquire_action {
  enum kind {
    create_and_list,    ///< create `path` (ephemeral sequential) and list `dir`, pipelined
    list,               ///< list `dir`
    sync_and_list,      ///< sync `dir`, then list it (pipelined): the listing sees every write of ours
    ensure_parents,     ///< create `dir` and its missing ancestors as containers
    watch_blocker,      ///< watch `path` (a blocker; several may go in one batch): see `nearest`
    ask_view,           ///< no request: call on_view with the session's view's nearest blockers of our node `path`
    watch_own,          ///< getData with watch on `path`, our own node: its reply to on_own_watch_set
    watch_dir,          ///< getChildren with watch on `dir` (a lease: any holder's release matters)
    remove_watch,       ///< remove our watch on `path` (a blocker's, or the lease dir's)
    delete_node,        ///< delete `path`
    stat_node,          ///< exists `path` (to learn its czxid after recovery)
    check_downgrade,    ///< exists on writer `path` and on its downgrade mark, pipelined: to on_downgrade_checked
    wait_reconnect,     ///< nothing to send until the session is connected again
    check_grant,        ///< the lock is ours: call on_grant_check with what the session says now
    refresh_contact,    ///< exists `path` (our node) before the grant; its reply to on_refreshed
    requeued,           ///< our node `path` was deleted by someone else: we queue again (for the record)
    answer_early,       ///< the caller gets `ec` now; the cleanup goes on (its complete is nobody's)
    wait_stop_answer,   ///< call on_stop_answer_due() after `delay` (stop_answer_wait): see stop_kind
    backoff_delete,       ///< call on_backoff_due() after `delay` (the server refused our cleanup delete for now)
    report_cleanup_failed,  ///< the server refused to delete `path` for good (`ec`): it stays, say so
    complete,           ///< the operation is over: see acquire_fsm::result()
    // lock-delay only (set_lock_delay):
    create_beacon,      ///< create our session's beacon (lock_delay_beacon) if not yet done; no reply
    read_owner,         ///< exists `path` (a lease holder ahead): its ephemeralOwner to on_owner
    check_session,      ///< exists `path`, the beacon of session `owner`: its reply to on_session_checked
    start_lock_delay,   ///< call on_lock_delay_due() after `delay` (replaces one running); `path` vanished
  };
  kind type;
  std::string path;
  error_code ec{};
  std::chrono::milliseconds delay{0};
  std::int64_t owner = 0;  ///< check_session: the session whose beacon is read
  /// watch_blocker: the nearest blocker, watched by getData; the others by getChildren (a child
  /// watch, which a node's deletion fires after its data watches: see the recipe's step 4).
  bool nearest = false;
};

/// The beacon of `session` for a lock dir (see lock-delay above): an ephemeral node of that
/// session, "<parent of lock_dir>/__zklock_sessions__/<session id as 16 hex digits>".
std::string lock_delay_beacon(std::string_view lock_dir, std::int64_t session);
/// With lock-delay our nodes' names carry our session: "_c_<client id>.<session, 16 hex>-lock-<seq>"
/// (Curator, kazoo and zklock read only the marker and the sequence). The client id for that.
std::string lock_delay_client_id(std::string client_id, std::int64_t session);
/// The session a node's name claims (lock_delay_client_id), 0 when none. Only a node's creator
/// names it: a node gone before a waiter read its Stat is judged by this claim.
std::int64_t claimed_session(std::string_view name);

/// What the runner says of its session when a won lock is to be handed out.
struct grant_view {
  error_code session_over;     ///< why the session the acquire started on is over (empty: it lives)
  bool contact_stale = false;  ///< no reply since contact_refresh_due (hold_fsm.hpp: the keepalive's cadence)
  bool connected = true;
};

/// How a stop may answer its caller while the cleanup waits for the network:
/// `total` only once the cleanup is done (Asio: nothing happened); `at_once` (terminal or
/// partial cancellation, the timeout) at once while disconnected (or once the connection drops
/// under the cleanup), the cleanup going on; while connected after the cleanup, or after
/// stop_answer_wait, whichever comes first.
enum class stop_kind { total, at_once };

/// How long an at_once stop taken while connected waits for its cleanup before the caller is
/// answered anyway (answer_early; the cleanup goes on: our node goes when the server answers,
/// or with the session's expiry). A server that answers takes one round trip to clean up, far
/// below it; one that stopped answering (a paused or overloaded server) would otherwise hold
/// the caller until the client declares the connection lost, 2/3 of the session timeout.
inline constexpr std::chrono::milliseconds stop_answer_wait{500};

struct lock_result {
  error_code ec;
  std::string node;            ///< full path of our lock node
  std::int64_t fencing_token = 0;  ///< czxid of our lock node
};

/// A try-acquire's look before it writes: what the listing of the dir says.
enum class probe_result {
  looks_free,      ///< nobody would block us: create (the create-and-list decides)
  busy,            ///< a blocker is there: lock_busy, nothing written
  check_head_mark,  ///< a reader's one blocker is the head writer, its downgrade mark listed: check it
};

class acquire_fsm {
 public:
  using actions = std::vector<acquire_action>;

  /// The try-lock's look: would a node of `kind` created now be blocked by `children`? (The
  /// semaphore looks at its leases with it before taking its internal mutex.)
  static probe_result probe(const std::vector<std::string>& children, lock_kind kind, int max_leases = 1);

  /// `max_leases`: for lock_kind::lease, how many may hold at once. `max_watched`: K, how many
  /// blockers a waiter watches at most (values below 1 count as 1).
  acquire_fsm(std::string dir, std::string client_id, lock_mode mode, lock_kind kind = lock_kind::exclusive,
           int max_leases = 1, int max_watched = default_watched_blockers);

  /// Lock-delay (see the recipe above): on when `delay` is above zero. Before start().
  void set_lock_delay(std::chrono::milliseconds delay) noexcept { lock_delay_ = delay; }
  std::chrono::milliseconds lock_delay() const noexcept { return lock_delay_; }
  /// Our own node's watch (step 2 above), on by default. Off, it is never set, waiting or
  /// holding: our node's deletion by someone else is then heard only from a listing that lacks
  /// it or the refresh before a grant, and a waiter may be granted on a node already gone. Only
  /// for an acquire whose grant nobody's safety rests on (the semaphore's internal mutex: see
  /// src/recipes/semaphore.cpp). Before start().
  void set_watch_own_node(bool on) noexcept { watch_own_node_ = on; }

  actions start();
  actions on_create(error_code ec, const std::string& created_path, std::int64_t czxid);
  actions on_children(error_code ec, const std::vector<std::string>& children);
  actions on_parents(error_code ec);
  /// Reply to watch_dir: the listing, with the watch set when ec is empty.
  actions on_dir_watch_set(error_code ec, const std::vector<std::string>& children);
  /// Reply to watch_blocker on `path` (its data is not read: it proves nothing), with its
  /// Stat's ephemeralOwner (`owner`; read for lock-delay only).
  actions on_watch_set(const std::string& path, error_code ec, std::int64_t owner = 0);
  /// Answer to ask_view: the session's view of the dir (dir_view::nearest for our node, our
  /// kind, max_watched() and counted_as_readers()).
  actions on_view(const view_blockers& v);
  /// Reply to read_owner on `path`: the lease holder's ephemeralOwner (no_node: it went).
  actions on_owner(const std::string& path, error_code ec, std::int64_t owner);
  /// Reply to check_session for session `owner`: `beacon_owner` is the ephemeralOwner of the
  /// node found at its beacon (0: none, or ec says why not).
  actions on_session_checked(std::int64_t owner, error_code ec, std::int64_t beacon_owner);
  /// The delay asked by start_lock_delay has passed.
  actions on_lock_delay_due();
  /// Reply to watch_own: ok (the watch is set), no_node (our node is gone: queue again), ...
  actions on_own_watch_set(error_code ec);
  /// A watch of ours on `path` fired: a blocker's, our own node's, or the lease dir's.
  actions on_watch_event(const std::string& path, watch_change what);
  /// Reply to check_downgrade on `writer`: the ephemeral owners of the writer's node and of
  /// its downgrade mark (0: not there, or not ephemeral); `ec` only for a failed request.
  actions on_downgrade_checked(const std::string& writer, error_code ec, std::int64_t writer_owner,
                               std::int64_t mark_owner);
  /// Reply to remove_watch on `path`.
  actions on_watch_removed(const std::string& path, error_code ec);
  actions on_deleted(error_code ec);
  /// The delay asked by backoff_delete has passed.
  actions on_backoff_due();
  /// How often a cleanup delete the server may accept later is sent again (100 ms, 200 ms, ...):
  /// node_delete_backoff.hpp, shared with the hold's release.
  static constexpr int max_delete_backoffs = delete_backoff::max_backoffs;
  /// Reply to stat_node: the node's czxid, and whether its ephemeral owner is our session (a
  /// node of another session is never adopted).
  actions on_stat(error_code ec, std::int64_t czxid, bool ours = true);
  actions on_reconnected();
  actions on_expired(error_code ec = errc::session_expired);
  /// Stop: cancellation (operation_aborted) or timeout (errc::lock_timeout). Cleans up (our
  /// node, our watch) before completing with `reason`; with stop_kind::at_once and the
  /// connection down (`connected` false) the caller is answered at once (answer_early), and
  /// with it up after stop_answer_wait (wait_stop_answer) or when the connection drops, if the
  /// cleanup is not done by then.
  actions cancel(error_code reason, stop_kind kind = stop_kind::total, bool connected = true);
  /// The delay asked by wait_stop_answer has passed: a caller not answered yet is now.
  actions on_stop_answer_due();
  /// The timed acquire's time ran out. Not connected, ZooKeeper could not be asked, which says
  /// nothing of contention: connection_unavailable rather than lock_timeout.
  actions on_timeout(bool connected);
  /// The connection dropped (the session may live). A try-acquire never waits, not for a
  /// reconnect either: it gives up at once (connection_unavailable), cleaning up behind. A
  /// cleanup behind an at_once stop not answered yet answers it now (answer_early).
  actions on_suspended();
  /// Reply to check_grant. A grant is checked against the session it was won on: one that
  /// arrives after that session was closed, expired or replaced (its state event still queued)
  /// is not a grant. A grant straight from a watch event sent no request: after a long wait the
  /// validity deadline is stale and the new hold would be lost on arrival, so one exists on our
  /// node refreshes it first (once).
  actions on_grant_check(const grant_view& v);
  /// Reply to refresh_contact: `node_exists` false when the exists found no node (our node was
  /// deleted by someone else: no grant, we queue again).
  actions on_refreshed(error_code ec, bool node_exists = true);
  /// The caller was answered early (answer_early): the final complete is nobody's.
  bool answered_early() const noexcept { return answered_early_; }

  bool done() const noexcept { return phase_ == phase::done; }
  const lock_result& result() const noexcept { return result_; }
  const std::string& node_prefix() const noexcept { return prefix_; }
  /// What our node is created with (contender_marker, or shared_marker for a shared lock).
  std::string_view node_data() const noexcept;
  lock_kind kind() const noexcept { return kind_; }
  /// The nearest blocker watched (or being watched); empty when none.
  std::string predecessor() const;
  /// The blockers watched (or being watched), full paths, in queue order.
  std::vector<std::string> watched_blockers() const;
  /// Every blocker of the latest listing is watched: the deletion of the last is our grant.
  bool watching_last_blocker() const noexcept { return all_watched_ && !blockers_.empty(); }
  /// The watch on our own node: set, its request in flight, or none (not yet, fired, lost).
  enum class own_watch { none, setting, set };
  own_watch own_node_watch() const noexcept { return own_; }
  int max_watched() const noexcept { return max_watched_; }
  /// Our node's path once known (empty before its create's reply).
  const std::string& node() const noexcept { return node_; }
  /// A listing's reply may be given as the session's view trims it for our node
  /// (dir_view::listing_for: the grant rule answers the same on it): we wait in the queue with
  /// our node known, and nothing of ours needs every name (lock-delay's owners, a lease's
  /// count, the try-lock's look, a lost create's node found by its prefix).
  bool takes_view_listing() const noexcept {
    return phase_ == phase::acquiring && !probing_ && !node_.empty() && !create_outcome_unknown_ &&
           lock_delay_.count() == 0 && kind_ != lock_kind::lease;
  }
  /// Writers' nodes proven downgraded: they block no reader (what ask_view's answer skips).
  const std::vector<std::string>& counted_as_readers() const noexcept { return downgraded_; }

 private:
  // granting: won, checked against the session (and its contact refreshed) before the grant
  enum class phase { idle, acquiring, granting, cleaning, done };
  enum class resend { none, create, list, delete_node, remove_watch };
  // A watched blocker: its getData in flight (setting), its watch set, its removal in flight,
  // or its removal lost with the connection (sent again after the reconnect).
  enum class blocker_watch { setting, set, removing, remove_lost };
  // What we asked and wait to hear back on: each on_* reply handler takes its own out of the
  // set (a reply that finds its request gone is stale, and ignored). The session's expiry
  // forgets them all.
  enum class request {
    create,        // its pipelined listing is `list`
    list,          // list, sync_and_list, and the listing pipelined behind a create
    watch,         // watch_dir (the blockers' watches are in blockers_)
    remove_watch,
    delete_node,
    stat,
    check_downgrade,  // a look at the head writer's downgrade mark (one at a time)
    refresh,       // refresh_contact, before a grant
    delete_delay,  // a backoff_delete's delay is running (a timer, not a server request)
  };
  // The cleanup waits for these before it decides what is left to delete: a create's outcome
  // says whether there is a node, a watch being set must be removed, a removal or a delete (or
  // its delay) is the cleanup itself. A listing, a stat or a read is of no use to it: their
  // replies are dropped (a listing is awaited only to find a node whose create was lost).
  static constexpr flag_set<request> cleanup_waits_for{request::create, request::watch, request::remove_watch,
                                                       request::delete_node, request::delete_delay};
  // The contact refresh before a grant: at most once per acquire.
  enum class refresh { not_sent, sent, found_session_over };
  // What a watch removal on its way (the lease dir's, or blockers') means for the grant: none
  // (no removal, or one the grant does not depend on: a downgraded blocker's watch goes, then we
  // list again); the grant waits for its reply (won by a listing that set a watch, or a grant
  // that waits anyway for a stat or a lock-delay); the grant went ahead of the lease dir's
  // removal (one lost before the completion makes the grant wait for it after all; one lost
  // after it the runner sends again on the reconnect).
  enum class removal_in_flight { none, grant_waits_for_reply, grant_went_ahead };

  static bool is_connection_loss(const error_code& ec);
  // A request failed because the session is over: complete with how it ended (session_end.hpp).
  static error_code failure(const error_code& ec);
  actions evaluate(const std::vector<std::string>& children);  // vanished_from, then evaluate_queue
  actions evaluate_queue(const std::vector<std::string>& children);
  actions after_blocker_gone();       // a watched blocker went (or was never there): grant, list, or wait
  actions own_node_gone();            // our node was deleted by someone else
  actions requeue();                  // queue again with a new node (our node is gone)
  void drop_waiting_grant() noexcept;  // a grant waiting behind a watch removal is void
  actions list_again();               // list (unless a listing is in flight already)
  actions move_window();              // the nearest blockers from the session's view (or a listing when we must)
  actions watch_own();                // set the watch on our node
  actions remove_blocker_watches();   // every blocker watch set: remove it
  bool blocker_requests_pending() const;  // a blocker's getData or removal in flight
  actions confirm_own_node();  // a grant from an event while our node's watch is not set: exists first
  actions acquired();
  actions busy();  // a try-lock's probe saw a blocker: lock_busy, nothing written
  actions fail(error_code ec);          // clean up, then complete with ec
  actions finish_cleaning_if_idle();
  actions answer_stop_early();  // answer_early with early_reason_, now spent
  actions finish_cleaning(actions out);  // `out`, then finish_cleaning_if_idle's
  actions after_watch_removed();  // our watch is gone: grant, look again, or go on cleaning
  actions create_and_list();
  actions after_connection_loss(resend what);
  actions list_dir();  // after a lost create, behind a sync (protected-create recovery)
  actions blocker_vanished(const std::string& path);  // lock-delay: check its owner's session, or delay
  actions delay_grant();                               // lock-delay: (re)start the delay
  actions vanished_from(const std::vector<std::string>& children);  // owners_ not in the listing
  bool grant_held_back() const noexcept { return checks_pending_ > 0 || delay_running_; }

  // State. The requests in flight are one set (in_flight_); phase_, resend_, refresh_ and
  // removal_ are one variable each. The booleans left are facts of their own, each true or false
  // in any phase and whatever is in flight:
  //  - probing_: the try-lock's look before its create; it outlives a stop (cleaning), where a
  //    probe's reply must still not be taken for the listing of a created node;
  //  - create_outcome_unknown_: a create lost with the connection, to be found by its id; it
  //    outlives requests and phases (the listing that resolves it may be lost too);
  //  - node_gone_: the cleanup has nothing left to delete, while node_ still names the node
  //    (the report of a refused delete says which);
  //  - watch_active_: the lease dir's watch is set on the server (not a request: it may fire,
  //    or be removed, while requests come and go); the blockers' and our node's are in
  //    blockers_ and own_, each with its request in flight or its watch set;
  //  - all_watched_ / unconfirmed_: what the latest listing says of the watched blockers (every
  //    blocker is among them), and whether a reconnect since has left our own node unconfirmed;
  //  - own_gone_: our node's deletion was heard while a listing was in flight (the listing,
  //    which may predate it, must not be taken as showing our node);
  //  - answered_early_: the caller was answered before the cleanup ended.
  std::string dir_, prefix_, create_path_;
  lock_mode mode_;
  lock_kind kind_;
  int max_leases_;
  phase phase_ = phase::idle;
  flag_set<request> in_flight_;
  removal_in_flight removal_ = removal_in_flight::none;
  bool probing_ = false;        // try-lock: the listing before any create
  error_code reason_;           // completion error while cleaning

  std::string node_;            // our node's path once known
  std::int64_t czxid_ = 0;
  bool create_outcome_unknown_ = false;  // create lost with the connection
  bool watch_active_ = false;
  bool node_gone_ = false;      // deleted (or never created) during cleanup
  resend resend_ = resend::none;
  int parent_attempts_ = 0;
  std::string predecessor_;  // the lease dir, while watched
  int max_watched_;
  std::map<std::string, blocker_watch> blockers_;  // full path -> its watch
  bool all_watched_ = false;  // every blocker of the latest listing is in blockers_
  own_watch own_ = own_watch::none;
  bool watch_own_node_ = true;  // set_watch_own_node
  bool own_gone_ = false;     // our node was deleted by someone else; a listing in flight decides
  // Reconnected while waiting on the blockers' watches (the client set them again): our own node
  // may have gone meanwhile (an operator's delete; then the dir may be reaped: CURATOR-724), and
  // the events the client's re-registration brings come in no set order, so a blocker's deletion
  // is no grant until a listing shows our node again.
  bool unconfirmed_ = false;
  std::vector<std::string> downgraded_;  // writers' nodes whose downgrade mark proved them readers
  std::string head_checked_;  // the head writer whose downgrade mark a view's answer made us check
  refresh refresh_ = refresh::not_sent;
  bool answered_early_ = false;
  error_code early_reason_;  // an at_once stop's reason, its caller not answered yet (empty: none)
  delete_backoff delete_backoff_;  // cleanup deletes sent again after the server refused them for now
  // Lock-delay: the owner sessions of the blockers of our listings (or, for a lease, the
  // holders we read; 0 until known or when never watched), the checks of vanished ones' sessions in flight, the delay running, and a grant
  // that waits for both.
  std::chrono::milliseconds lock_delay_{0};
  std::map<std::string, std::int64_t> owners_;
  int checks_pending_ = 0;
  bool delay_running_ = false;
  bool grant_waiting_ = false;
  lock_result result_;
};

}  // namespace zklock::detail
