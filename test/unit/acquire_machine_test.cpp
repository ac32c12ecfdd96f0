// The acquire as the runner's machine (acquire_machine): acquire_fsm's steps in the one request
// vocabulary, each answer back by its tag, and what it decides around acquire_fsm (the view of
// the dir, the lock dir's creation, the lock-delay wait, the reconnect).
#include "sansio/acquire_machine.hpp"

#include <zklock/path.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>

using namespace zklock;
using namespace zklock::detail;
using sansio::input;
using sansio::request;

namespace {

const std::string dir = "/locks/a";

const request* find(const std::vector<request>& step, request::kind k, std::size_t nth = 0) {
  for (const auto& r : step)
    if (r.type == k && nth-- == 0) return &r;
  return nullptr;
}

struct machine_under_test {
  std::int64_t beacon_session = 0;
  std::shared_ptr<dir_view> view = std::make_shared<dir_view>();
  acquire_machine m;

  explicit machine_under_test(std::chrono::milliseconds lock_delay = {}, bool connected = true)
      : m(make_fsm(lock_delay), {.dir = dir,
                                 .timeout = std::chrono::seconds(5),
                                 .node_data = "data",
                                 .view = view,
                                 .beacon_session = &beacon_session,
                                 .session_id = [] { return std::int64_t{0x77}; },
                                 .at_grant = [] { return grant_view{}; },
                                 .connected = connected}) {}

  // Its first step, and in it our node's create and the listing pipelined behind it.
  struct opening {
    std::vector<request> first;
    const request* create;
    const request* list;
  };
  opening begin() {
    opening o{m.start(), nullptr, nullptr};
    o.create = find(o.first, request::create);
    o.list = find(o.first, request::get_children);
    return o;
  }

  static acquire_fsm make_fsm(std::chrono::milliseconds lock_delay) {
    acquire_fsm f(dir, "client", lock_mode::wait);
    f.set_lock_delay(lock_delay);
    return f;
  }
};

input reply(const request& r, error_code ec = {}, input::value_type v = {}) {
  return {.type = input::reply, .tag = r.tag, .ec = ec, .value = std::move(v)};
}

// Our node 9th in the queue behind nodes 0..8 (`session_node`, when not -1, another node of our
// session): created, its own watch set, and the listing answered (`step`: what that answer asked).
struct queued_ninth {
  std::string create_path;
  std::function<std::string(int)> name = [this](int seq) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%010d", seq);
    return create_path + buf;
  };
  std::vector<request> step;

  explicit queued_ninth(machine_under_test& t, int session_node = -1) {
    auto [first, create, list] = t.begin();
    REQUIRE(create);
    REQUIRE(list);
    create_path = create->path;
    if (session_node >= 0) t.view->mark_own(node_name(name(session_node)));
    auto after_create = t.m.on(reply(*create, {}, create_result{.path = name(9), .stat = {.czxid = 6}}));
    auto own = find(after_create, request::get_data);
    REQUIRE(own);
    t.m.on(reply(*own, {}, data_result{}));
    std::vector<std::string> children;
    for (int i = 0; i <= 9; ++i) children.emplace_back(node_name(name(i)));
    step = t.m.on(reply(*list, {}, children_result{.children = children, .stat = {.czxid = 1, .pzxid = 9}}));
  }
};

}  // namespace

TEST_CASE("acquire_machine: follows the session, arms the timeout, creates and lists in one step, grants on the listing",
          "[unit][lock]") {
  machine_under_test t;
  auto first = t.m.start();
  REQUIRE(first.size() >= 4);
  CHECK(first[0].type == request::follow_session);
  CHECK(first[1].type == request::timer);
  CHECK(first[1].slot == acquire_machine::timeout_timer);
  auto create = find(first, request::create);
  auto list = find(first, request::get_children);
  REQUIRE(create);
  REQUIRE(list);
  CHECK(create->mode == create_mode::ephemeral_sequential);
  CHECK(create->data == "data");
  CHECK(list->path == dir);
  CHECK(list->slot == request::no_slot);

  auto node = create->path + "0000000001";
  auto after_create = t.m.on(reply(*create, {}, create_result{.path = node, .stat = {.czxid = 5}}));
  auto own = find(after_create, request::get_data);
  REQUIRE(own);  // our node's watch
  CHECK(own->slot == acquire_machine::own_slot);

  auto last = t.m.on(reply(*list, {}, children_result{.children = {node_name(node).data()}, .stat = {.czxid = 1, .pzxid = 9}}));
  CHECK(t.view->merges() == 1);  // the listing is the session's view's
  auto done = find(last, request::complete);
  REQUIRE(done);
  CHECK_FALSE(done->ec);
  CHECK(t.m.fsm().result().node == node);
  // the timers stopped and the session no longer followed before the completion
  CHECK(find(last, request::stop_following));
  CHECK(std::find_if(last.begin(), last.end(), [](const request& r) {
          return r.type == request::cancel_timer && r.slot == acquire_machine::timeout_timer;
        }) != last.end());
  // our node's watch's reply after the grant is the hold's
  auto late = t.m.on(reply(*own, {}, data_result{.data = "data"}));
  REQUIRE(late.size() == 1);
  CHECK(late[0].type == request::notify);
  CHECK(late[0].outcome_kind<acquire_machine::outcome>() == acquire_machine::outcome::own_watch_reply);
  CHECK(t.m.own_reply().data == "data");
}

TEST_CASE("acquire_machine: a blocker's watch has a slot of its own and its deletion, heard, leaves the view and grants",
          "[unit][lock]") {
  machine_under_test t;
  auto [first, create, list] = t.begin();
  auto node = create->path + "0000000002";
  auto blocker = create->path + "0000000001";
  auto after_create = t.m.on(reply(*create, {}, create_result{.path = node, .stat = {.czxid = 6}}));
  auto own = find(after_create, request::get_data);
  REQUIRE(own);
  t.m.on(reply(*own, {}, data_result{}));
  auto step = t.m.on(reply(*list, {}, children_result{.children = {node_name(blocker).data(), node_name(node).data()},
                                                      .stat = {.czxid = 1, .pzxid = 9}}));
  auto watch = find(step, request::get_data);
  REQUIRE(watch);
  CHECK(watch->path == blocker);
  CHECK(watch->slot >= acquire_machine::first_blocker_slot);
  auto notify = find(step, request::notify);
  REQUIRE(notify);
  CHECK(notify->outcome_kind<acquire_machine::outcome>() == acquire_machine::outcome::waited);

  // set: waited for, in its slot, before anything else of that step
  auto set = t.m.on(reply(*watch, {}, data_result{}));
  REQUIRE_FALSE(set.empty());
  CHECK(set[0].type == request::wait_watch);
  CHECK(set[0].slot == watch->slot);
  CHECK(t.view->contains(node_name(blocker)));
  auto fired = t.m.on({.type = input::watch_fired, .tag = set[0].tag, .event = watch_event_type::deleted});
  CHECK_FALSE(t.view->contains(node_name(blocker)));
  auto done = find(fired, request::complete);
  REQUIRE(done);
  CHECK_FALSE(done->ec);
}

TEST_CASE("acquire_machine: a missing lock dir is created alone, then with every ancestor in one step", "[unit][lock]") {
  machine_under_test t;
  auto [first, create, list] = t.begin();
  auto step = t.m.on(reply(*create, zk_errc::no_node));
  CHECK(t.m.on(reply(*list, zk_errc::no_node)).empty());  // (failed the same way: of no use)
  auto dir_create = find(step, request::create);
  REQUIRE(dir_create);
  CHECK(dir_create->path == dir);
  CHECK(dir_create->mode == create_mode::container);
  auto chain = t.m.on(reply(*dir_create, zk_errc::no_node));
  REQUIRE(chain.size() == 2);
  CHECK(chain[0].path == "/locks");
  CHECK(chain[1].path == dir);
  CHECK(t.m.on(reply(chain[0], zk_errc::node_exists)).empty());
  auto again = t.m.on(reply(chain[1]));
  CHECK(find(again, request::create));  // our node, again
}

TEST_CASE("acquire_machine: lock-delay's beacon: its dir made in the same step, a refusal reported and left to the next acquire",
          "[unit][lock]") {
  machine_under_test t(std::chrono::milliseconds(200));
  auto first = t.m.start();
  auto beacon = std::find_if(first.begin(), first.end(), [](const request& r) {
    return r.type == request::create && r.mode == create_mode::ephemeral;
  });
  REQUIRE(beacon != first.end());
  CHECK(beacon->path == lock_delay_beacon(dir, 0x77));
  CHECK(t.beacon_session == 0x77);
  // its dir missing: the dirs and the beacon again, in one step
  auto retry = t.m.on(reply(*beacon, zk_errc::no_node));
  REQUIRE(retry.size() >= 2);
  CHECK(retry.back().path == beacon->path);
  // refused for good: the next acquire tries again, and the hook says so
  auto failed = t.m.on(reply(retry.back(), zk_errc::no_auth));
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].outcome_kind<acquire_machine::outcome>() == acquire_machine::outcome::beacon_failed);
  CHECK(t.beacon_session == 0);
  // a timer tag it never set (or a replaced lock-delay wait's) changes nothing
  CHECK(t.m.on({.type = input::timer_due, .tag = 999999}).empty());
}

TEST_CASE("acquire_machine: the session's changes reach the acquire: suspended, reconnected, closed",
          "[unit][lock]") {
  machine_under_test t;
  auto [first, create, list] = t.begin();
  t.m.on({.type = input::session, .tag = first[0].tag, .state = session_state::suspended});
  t.m.on(reply(*list, zk_errc::connection_loss));
  t.m.on(reply(*create, zk_errc::connection_loss));
  // reconnected: the lost create is looked for (sync, then a listing)
  auto back = t.m.on({.type = input::session, .tag = first[0].tag, .state = session_state::reconnected});
  CHECK(find(back, request::get_children));
  // the session closed: the acquire ends with it
  auto closed = t.m.on({.type = input::session, .tag = first[0].tag, .state = session_state::closed});
  auto done = find(closed, request::complete);
  REQUIRE(done);
  CHECK(done->ec == errc::session_closed);
}

TEST_CASE("acquire_machine: K as asked is carried out between 1 and 120 (a watch slot is one byte)", "[unit][lock]") {
  CHECK(acquire_machine::watched_blockers(-3) == 1);
  CHECK(acquire_machine::watched_blockers(0) == 1);
  CHECK(acquire_machine::watched_blockers(2) == 2);
  CHECK(acquire_machine::watched_blockers(120) == 120);
  CHECK(acquire_machine::watched_blockers(500) == 120);
  // every blocker's slot, and the slots of watches still being removed, fit below no_slot
  STATIC_REQUIRE(acquire_machine::first_blocker_slot + 2 * acquire_machine::max_watched_blockers < request::no_slot);
}

TEST_CASE("acquire_machine: a window reaches back to the session's node ahead, so a drain hears every name it needs "
          "and grants with no request after the listing",
          "[unit][lock][view]") {
  // Sessions interleaved: ours has the node 4 ahead of ours (another waiter of this session,
  // which watches what lies ahead of it); the 3 between are other sessions'. A FIFO drain
  // deletes the head first: each deletion within the window is heard from our watches, one
  // ahead of the window from the other waiter's (here: the view told directly), and no window
  // move asks the server anything (before, each name between went unheard by this session and
  // a moving window found it with a request each, on the handoff path).
  machine_under_test t;
  queued_ninth q(t, 5);  // the session's other waiter: 5
  auto& name = q.name;
  auto& step = q.step;
  // the window: 5..8 (K = 2 would be 7, 8): the nearest by getData, the others by getChildren
  std::map<std::string, const request*> watches;
  for (const auto& r : step)
    if (r.type == request::get_data || r.type == request::get_children) watches[r.path] = &r;
  REQUIRE(watches.size() == 4);
  for (int i = 5; i <= 8; ++i) REQUIRE(watches.count(name(i)));
  CHECK(watches[name(8)]->type == request::get_data);
  std::map<std::string, std::uint64_t> waits;
  for (int i = 5; i <= 8; ++i) {
    auto set = t.m.on(reply(*watches[name(i)], {}, data_result{}));
    REQUIRE_FALSE(set.empty());
    CHECK(set[0].type == request::wait_watch);
    waits[name(i)] = set[0].tag;
  }
  // the drain: 0..4 go (heard by the session's other waiter), then 5..8, each by its event
  for (int i = 0; i <= 4; ++i) t.view->gone(node_name(name(i)));
  int asked = 0;
  std::vector<request> last;
  for (int i = 5; i <= 8; ++i) {
    last = t.m.on({.type = input::watch_fired, .tag = waits[name(i)], .event = watch_event_type::deleted});
    for (const auto& r : last)
      if (r.type == request::get_data || r.type == request::get_children || r.type == request::exists) ++asked;
    if (i < 8) CHECK_FALSE(find(last, request::complete));
  }
  CHECK(asked == 0);
  auto done = find(last, request::complete);
  REQUIRE(done);
  CHECK_FALSE(done->ec);
}

TEST_CASE("acquire_machine: a blocker found gone makes the names beyond it asked in one batch, and the window moves over "
          "them at once",
          "[unit][lock][view]") {
  // Names ahead of our window deleted unheard (only other sessions watched them): the window
  // that moves onto one finds no_node; the next ones, not watched by us, are asked together
  // (exists, no watch), and only then does the acquire hear the no_node and move on, over all
  // of them: no request per name.
  machine_under_test t;
  auto other_acquire = t.view;  // another acquire of the session on the dir (the view is shared)
  queued_ninth q(t);
  auto& name = q.name;
  auto& step = q.step;
  auto w7 = find(step, request::get_children);
  auto w8 = find(step, request::get_data);
  REQUIRE(w7);
  REQUIRE(w8);
  CHECK(w7->path == name(7));
  CHECK(w8->path == name(8));
  auto set7 = t.m.on(reply(*w7, {}, children_result{}));
  t.m.on(reply(*w8, {}, data_result{}));
  REQUIRE_FALSE(set7.empty());
  // 0..6 deleted unheard; 7 goes: the window moves onto 6 and finds it gone
  auto moved = t.m.on({.type = input::watch_fired, .tag = set7[0].tag, .event = watch_event_type::deleted});
  auto w6 = find(moved, request::get_children);
  REQUIRE(w6);
  CHECK(w6->path == name(6));
  auto batch = t.m.on(reply(*w6, zk_errc::no_node));
  std::vector<std::string> asked;
  for (const auto& r : batch) {
    CHECK(r.type == request::exists);  // nothing else until the batch is answered
    asked.push_back(r.path);
  }
  CHECK(asked == std::vector<std::string>{name(0), name(1), name(2), name(3), name(4), name(5)});
  std::vector<request> last;
  for (const auto& r : batch) last = t.m.on(reply(r, zk_errc::no_node));
  CHECK(t.view->size() == 2);  // 8 and ours
  // the window moved over them: nothing asked, our nearest (8) watched still
  for (const auto& r : last)
    CHECK((r.type != request::get_data && r.type != request::get_children && r.type != request::exists));
  CHECK(t.m.fsm().watching_last_blocker());
}
