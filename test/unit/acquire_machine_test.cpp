// The acquire as the runner's machine (acquire_machine): acquire_fsm's steps in the one request
// vocabulary, each answer back by its tag, and what it decides around acquire_fsm (the view of
// the dir, the lock dir's creation, the lock-delay wait, the reconnect).
#include "sansio/acquire_machine.hpp"

#include <zklock/path.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
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
