// lock-delay: a blocker that went with its session delays the grant by lock_delay, a release
// does not; against acquire_fsm directly.
#include "acquire_test.hpp"

namespace {
bool has(const acquire_fsm::actions& a, acquire_action::kind k) {
  return std::any_of(a.begin(), a.end(), [k](const acquire_action& x) { return x.type == k; });
}
const acquire_action& the(const acquire_fsm::actions& a, acquire_action::kind k) {
  auto it = std::find_if(a.begin(), a.end(), [k](const acquire_action& x) { return x.type == k; });
  REQUIRE(it != a.end());
  return *it;
}
constexpr std::int64_t holder_session = 0x1234abcd;
const std::string delay_dir = "/locks/a";
const std::string holder_node = "_c_0ther-lock-0000000001";
const std::string holder_path = delay_dir + "/" + holder_node;

// A waiter behind one holder, its watch on the holder set (the owner read from its Stat).
acquire_fsm waiting_behind_holder(std::chrono::milliseconds delay, std::int64_t owner = holder_session) {
  acquire_fsm f(delay_dir, "me", lock_mode::wait);
  f.set_lock_delay(delay);
  auto a = f.start();
  CHECK(has(a, acquire_action::create_beacon) == (delay.count() > 0));
  CHECK(has(a, acquire_action::create_and_list));
  auto mine = delay_dir + "/_c_me-lock-0000000002";
  CHECK(has(f.on_create({}, mine, 7), acquire_action::watch_own));
  auto w = f.on_children({}, {holder_node, "_c_me-lock-0000000002"});
  CHECK(the(w, acquire_action::watch_blocker).path == holder_path);
  CHECK(f.on_own_watch_set({}).empty());
  CHECK(f.on_watch_set(holder_path, {}, owner).empty());
  return f;
}
}  // namespace

TEST_CASE("lock-delay: the beacon's path is per session, beside the lock dir", "[unit][lock][lock_delay]") {
  CHECK(lock_delay_beacon("/locks/a", 0x1234abcd) == "/locks/__zklock_sessions__/000000001234abcd");
  CHECK(lock_delay_beacon("/a", -1) == "/__zklock_sessions__/ffffffffffffffff");
  CHECK(lock_delay_beacon("/sem/leases", 5) == "/sem/__zklock_sessions__/0000000000000005");
}

TEST_CASE("lock-delay: a holder whose session ended delays the grant by lock_delay", "[unit][lock][lock_delay]") {
  auto f = waiting_behind_holder(std::chrono::milliseconds(500));
  auto a = f.on_watch_event(holder_path, watch_change::deleted);
  // the holder's beacon is read: does its session outlive the deletion?
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::check_session);
  CHECK(a[0].path == lock_delay_beacon(delay_dir, holder_session));
  CHECK(a[0].owner == holder_session);
  // no beacon: the session ended with the node; the grant waits
  a = f.on_session_checked(holder_session, zk_errc::no_node, 0);
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::start_lock_delay);
  CHECK(a[0].delay == std::chrono::milliseconds(500));
  CHECK_FALSE(f.done());
  a = f.on_lock_delay_due();
  CHECK(has(a, acquire_action::check_grant));
  CHECK(has(f.on_grant_check({}), acquire_action::complete));
  CHECK_FALSE(f.result().ec);
  CHECK(f.result().node == delay_dir + "/_c_me-lock-0000000002");
}

TEST_CASE("lock-delay: a release (the holder's session still owns its beacon) is not delayed", "[unit][lock][lock_delay]") {
  auto f = waiting_behind_holder(std::chrono::milliseconds(500));
  CHECK(has(f.on_watch_event(holder_path, watch_change::deleted), acquire_action::check_session));
  auto a = f.on_session_checked(holder_session, {}, holder_session);
  CHECK_FALSE(has(a, acquire_action::start_lock_delay));
  CHECK(has(a, acquire_action::check_grant));
  CHECK(has(f.on_grant_check({}), acquire_action::complete));
  CHECK_FALSE(f.result().ec);
}

TEST_CASE("lock-delay: what cannot prove a release counts as the session's end", "[unit][lock][lock_delay]") {
  SECTION("a node at the beacon's path owned by another session (a forgery)") {
    auto f = waiting_behind_holder(std::chrono::milliseconds(500));
    f.on_watch_event(holder_path, watch_change::deleted);
    CHECK(has(f.on_session_checked(holder_session, {}, 0x999), acquire_action::start_lock_delay));
    CHECK_FALSE(f.done());
  }
  SECTION("a persistent node there (ephemeralOwner 0)") {
    auto f = waiting_behind_holder(std::chrono::milliseconds(500));
    f.on_watch_event(holder_path, watch_change::deleted);
    CHECK(has(f.on_session_checked(holder_session, {}, 0), acquire_action::start_lock_delay));
  }
  SECTION("the check lost with the connection") {
    auto f = waiting_behind_holder(std::chrono::milliseconds(500));
    f.on_watch_event(holder_path, watch_change::deleted);
    CHECK(has(f.on_session_checked(holder_session, zk_errc::connection_loss, 0), acquire_action::start_lock_delay));
  }
  SECTION("a holder whose owner we never learnt (a Stat without one)") {
    auto f = waiting_behind_holder(std::chrono::milliseconds(500), 0);
    auto a = f.on_watch_event(holder_path, watch_change::deleted);
    CHECK_FALSE(has(a, acquire_action::check_session));
    CHECK(the(a, acquire_action::start_lock_delay).path == holder_path);
    CHECK_FALSE(has(a, acquire_action::check_grant));
    CHECK(has(f.on_lock_delay_due(), acquire_action::check_grant));
  }
  SECTION("a holder gone before our watch's reply") {
    acquire_fsm f(delay_dir, "me", lock_mode::wait);
    f.set_lock_delay(std::chrono::milliseconds(500));
    f.start();
    f.on_create({}, delay_dir + "/_c_me-lock-0000000002", 7);
    f.on_children({}, {holder_node, "_c_me-lock-0000000002"});
    f.on_own_watch_set({});  // (its reply comes first: it was sent first)
    auto a = f.on_watch_set(holder_path, zk_errc::no_node);
    CHECK(has(a, acquire_action::start_lock_delay));
    CHECK_FALSE(has(a, acquire_action::check_grant));
    CHECK(has(f.on_lock_delay_due(), acquire_action::check_grant));
  }
}

TEST_CASE("lock-delay off: no beacon, no check, the deletion is the grant", "[unit][lock][lock_delay]") {
  auto f = waiting_behind_holder(std::chrono::milliseconds(0));
  auto a = f.on_watch_event(holder_path, watch_change::deleted);
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::check_grant);
}

TEST_CASE("lock-delay: the grant waits for every check and the latest delay", "[unit][lock][lock_delay]") {
  acquire_fsm f(delay_dir, "me", lock_mode::wait, lock_kind::exclusive, 1, 2);
  f.set_lock_delay(std::chrono::milliseconds(300));
  f.start();
  f.on_create({}, delay_dir + "/_c_me-lock-0000000003", 7);
  const std::string second = delay_dir + "/_c_two-lock-0000000002";
  auto w = f.on_children({}, {holder_node, "_c_two-lock-0000000002", "_c_me-lock-0000000003"});
  CHECK(w.size() == 2);
  f.on_own_watch_set({});
  f.on_watch_set(holder_path, {}, holder_session);
  f.on_watch_set(second, {}, 0x2222);
  // the holder expires: off the handoff path, the second still stands ahead
  CHECK(has(f.on_watch_event(holder_path, watch_change::deleted), acquire_action::check_session));
  CHECK(has(f.on_session_checked(holder_session, zk_errc::no_node, 0), acquire_action::start_lock_delay));
  // the second (granted meanwhile) releases: its check is in flight, the delay runs
  CHECK(the(f.on_watch_event(second, watch_change::deleted), acquire_action::check_session).owner == 0x2222);
  CHECK(f.on_lock_delay_due().empty());  // the delay is over, the check is not: no grant yet
  CHECK(has(f.on_session_checked(0x2222, {}, 0x2222), acquire_action::check_grant));
}

TEST_CASE("lock-delay: a timeout or cancellation during the delay cleans up, and the delay's end is ignored",
          "[unit][lock][lock_delay]") {
  auto f = waiting_behind_holder(std::chrono::milliseconds(500));
  f.on_watch_event(holder_path, watch_change::deleted);
  f.on_session_checked(holder_session, zk_errc::no_node, 0);
  auto a = f.on_timeout(true);
  CHECK(the(a, acquire_action::delete_node).path == delay_dir + "/_c_me-lock-0000000002");
  CHECK(f.on_lock_delay_due().empty());
  CHECK(has(f.on_deleted({}), acquire_action::complete));
  CHECK(f.result().ec == errc::lock_timeout);
}

TEST_CASE("lock-delay: our node deleted by someone else during the delay queues again, still delayed",
          "[unit][lock][lock_delay]") {
  auto f = waiting_behind_holder(std::chrono::milliseconds(500));
  f.on_watch_event(holder_path, watch_change::deleted);
  f.on_session_checked(holder_session, zk_errc::no_node, 0);
  auto mine = delay_dir + "/_c_me-lock-0000000002";
  CHECK(has(f.on_watch_event(mine, watch_change::deleted), acquire_action::create_and_list));
  auto again = delay_dir + "/_c_me-lock-0000000004";
  f.on_create({}, again, 9);
  CHECK_FALSE(has(f.on_children({}, {"_c_me-lock-0000000004"}), acquire_action::check_grant));
  CHECK(has(f.on_lock_delay_due(), acquire_action::check_grant));
  f.on_grant_check({});
  CHECK(f.result().node == again);
}

TEST_CASE("lock-delay: a blocker gone unheard (its watch spent on a data change) is found by the listing",
          "[unit][lock][lock_delay]") {
  auto f = waiting_behind_holder(std::chrono::milliseconds(500));
  CHECK(has(f.on_watch_event(holder_path, watch_change::data_changed), acquire_action::list));
  auto a = f.on_children({}, {"_c_me-lock-0000000002"});
  CHECK(the(a, acquire_action::check_session).owner == holder_session);
  CHECK_FALSE(has(a, acquire_action::check_grant));
  CHECK(has(f.on_session_checked(holder_session, {}, holder_session), acquire_action::check_grant));
}

TEST_CASE("lock-delay on a semaphore's leases: the holders' owners are read while waiting", "[unit][lock][lock_delay]") {
  const std::string dir = "/sem/leases";
  acquire_fsm f(dir, "me", lock_mode::wait, lock_kind::lease, 1);
  f.set_lock_delay(std::chrono::milliseconds(400));
  f.start();
  f.on_create({}, dir + "/_c_me-lease-0000000002", 7);
  auto a = f.on_children({}, {"_c_h-lease-0000000001", "_c_me-lease-0000000002"});
  CHECK(the(a, acquire_action::read_owner).path == dir + "/_c_h-lease-0000000001");
  CHECK(has(a, acquire_action::watch_dir));
  CHECK(f.on_owner(dir + "/_c_h-lease-0000000001", {}, 0x55).empty());
  f.on_dir_watch_set({}, {"_c_h-lease-0000000001", "_c_me-lease-0000000002"});
  // the holder's lease goes: the listing shows it gone; its owner's beacon is checked
  a = f.on_watch_event(dir, watch_change::children_changed);
  CHECK(has(a, acquire_action::watch_dir));
  f.on_own_watch_set({});
  a = f.on_dir_watch_set({}, {"_c_me-lease-0000000002"});
  CHECK(the(a, acquire_action::check_session).path == "/sem/__zklock_sessions__/0000000000000055");
  a = f.on_watch_removed(dir, {});
  CHECK_FALSE(has(a, acquire_action::check_grant));
  SECTION("expired: delayed") {
    CHECK(has(f.on_session_checked(0x55, zk_errc::no_node, 0), acquire_action::start_lock_delay));
    CHECK(has(f.on_lock_delay_due(), acquire_action::check_grant));
  }
  SECTION("released: at once") { CHECK(has(f.on_session_checked(0x55, {}, 0x55), acquire_action::check_grant)); }
}

TEST_CASE("lock-delay: a node's name carries its creator's session, and one gone before our watch's reply is judged by it",
          "[unit][lock][lock_delay]") {
  auto id = lock_delay_client_id("8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c", holder_session);
  CHECK(id == "8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c.000000001234abcd");
  CHECK(claimed_session("_c_" + id + "-lock-0000000001") == holder_session);
  CHECK(claimed_session("_c_" + id + "-__WRIT__0000000001") == holder_session);
  CHECK(lock_sequence("_c_" + id + "-lease-0000000003") == 3);  // peers read the marker and sequence only
  CHECK(claimed_session("_c_8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c-lock-0000000001") == 0);  // Curator's
  CHECK(claimed_session("_c_x.12345-lock-0000000001") == 0);
  CHECK(claimed_session("_c_x.000000001234abcZ-lock-0000000001") == 0);

  acquire_fsm f(delay_dir, "me", lock_mode::wait);
  f.set_lock_delay(std::chrono::milliseconds(500));
  f.start();
  f.on_create({}, delay_dir + "/_c_me-lock-0000000002", 7);
  const std::string named = "_c_" + id + "-lock-0000000001";
  f.on_children({}, {named, "_c_me-lock-0000000002"});
  f.on_own_watch_set({});
  auto a = f.on_watch_set(delay_dir + "/" + named, zk_errc::no_node);
  CHECK(the(a, acquire_action::check_session).owner == holder_session);
  CHECK_FALSE(has(a, acquire_action::start_lock_delay));
  CHECK(has(f.on_session_checked(holder_session, {}, holder_session), acquire_action::check_grant));
}

TEST_CASE("lock-delay: a blocker outside the watched window that vanished unheard is judged by its name's session",
          "[unit][lock][lock_delay]") {
  // H holds, W1 and W2 wait behind it, we (Z) wait behind them watching W1 and W2 (K = 2), not H.
  auto id = lock_delay_client_id("8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c", holder_session);
  const std::string h = "_c_" + id + "-lock-0000000001";
  const std::string w1 = "_c_w1-lock-0000000002", w2 = "_c_w2-lock-0000000003";
  const std::string mine = "_c_me-lock-0000000004";
  acquire_fsm f(delay_dir, "me", lock_mode::wait, lock_kind::exclusive, 1, 2);
  f.set_lock_delay(std::chrono::milliseconds(500));
  f.start();
  f.on_create({}, delay_dir + "/" + mine, 7);
  auto a = f.on_children({}, {h, w1, w2, mine});
  CHECK(f.watched_blockers() == std::vector<std::string>{delay_dir + "/" + w1, delay_dir + "/" + w2});
  f.on_own_watch_set({});
  f.on_watch_set(delay_dir + "/" + w1, {}, 0x51);
  f.on_watch_set(delay_dir + "/" + w2, {}, 0x52);
  // H's session ends; W1 and W2, delayed by it, give up (their sessions live: releases)
  a = f.on_watch_event(delay_dir + "/" + w2, watch_change::deleted);
  CHECK(the(a, acquire_action::check_session).owner == 0x52);
  CHECK(has(a, acquire_action::ask_view));  // the window moves: no listing
  a = f.on_watch_event(delay_dir + "/" + w1, watch_change::deleted);
  CHECK(the(a, acquire_action::check_session).owner == 0x51);
  CHECK(has(a, acquire_action::ask_view));
  CHECK(f.on_session_checked(0x52, {}, 0x52).empty());
  CHECK(f.on_session_checked(0x51, {}, 0x51).empty());
  // the session's view says H went (another waiter of ours heard it, or a newer listing lacked
  // it): judged by the session its name claims
  a = f.on_view({});
  CHECK(the(a, acquire_action::check_session).owner == holder_session);
  CHECK_FALSE(has(a, acquire_action::check_grant));
  a = f.on_session_checked(holder_session, zk_errc::no_node, 0);
  CHECK(has(a, acquire_action::start_lock_delay));
  CHECK_FALSE(has(a, acquire_action::check_grant));
  CHECK(has(f.on_lock_delay_due(), acquire_action::check_grant));
}
