// The blockers of the latest listing are watched, up to K: the last one's deletion is the grant
// with no listing, a reader watches only the writers that block it, K events per release.
#include "acquire_test.hpp"

TEST_CASE("K blockers watched: the last one's deletion is the grant, with no listing, whatever order they go in",
          "[unit][lock][handoff]") {
  sim s(lock_mode::wait, 3);  // K = 3: all three watched
  auto n0 = s.add_foreign(), n1 = s.add_foreign(), n2 = s.add_foreign();
  s.run();
  CHECK(s.blocker_watches() ==
        std::set<std::string>{join_path(s.dir, n0), join_path(s.dir, n1), join_path(s.dir, n2)});
  CHECK(s.fsm.watching_last_blocker());
  int lists = s.lists, requests = s.requests;
  s.delete_foreign(n1);  // a waiter gave up
  s.drain();
  s.delete_foreign(n0);  // the holder released
  s.drain();
  CHECK_FALSE(s.completed);
  check_granted_when_gone(s, n2);
  CHECK(s.lists == lists);
  CHECK(s.requests == requests);  // nothing sent on the way to the grant
}

TEST_CASE("a queue deeper than K: the window moves up when a watched blocker goes, while the others still stand",
          "[unit][lock][handoff]") {
  sim s(lock_mode::wait, 2);
  auto n0 = s.add_foreign(), n1 = s.add_foreign(), n2 = s.add_foreign(), n3 = s.add_foreign();
  s.run();
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, n2), join_path(s.dir, n3)});
  CHECK_FALSE(s.fsm.watching_last_blocker());
  int lists = s.lists;
  s.delete_foreign(n0);  // not watched: no event
  s.delete_foreign(n1);
  s.drain();
  CHECK(s.lists == lists);
  int requests = s.requests;
  s.delete_foreign(n2);  // served in order: n3 holds now; the window moves while it does
  s.drain();
  // No listing: the view still has n0 and n1 (their deletion unheard by this session), so
  // their watches are asked and answer no_node, one request each, and they leave the view.
  CHECK(s.lists == lists);
  CHECK(s.requests == requests + 2);
  CHECK_FALSE(s.view.contains(n0));
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, n3)});
  CHECK(s.fsm.watching_last_blocker());
  s.delete_foreign(n3);  // the handoff: one event, no listing
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.lists == lists);
}

TEST_CASE("a waiter alone on the dir in its session lists when its window moves: nobody of its session hears the rest",
          "[unit][lock][handoff][depth]") {
  // (one waiter per session, as processes contend: probing each name beyond the window, each
  // possibly gone unheard, would cost more than the one listing)
  sim s(lock_mode::wait, 2);
  s.view_alone = true;
  auto n0 = s.add_foreign(), n1 = s.add_foreign(), n2 = s.add_foreign(), n3 = s.add_foreign();
  s.run();
  int lists = s.lists;
  s.delete_foreign(n0);
  s.delete_foreign(n1);
  s.delete_foreign(n2);
  s.drain();
  CHECK(s.lists == lists + 1);
  CHECK(s.watch_requests.size() == 2);  // no watch asked of a name gone unheard
  CHECK(s.fsm.watching_last_blocker());
  check_granted_when_gone(s, n3);
  CHECK(s.lists == lists + 1);
}

TEST_CASE("a deep waiter moves its window along the session's view, one watch per release and no listing",
          "[unit][lock][handoff][depth]") {
  // 200 contenders ahead of us, served in order; the session hears each one go (its other
  // waiters watch them: here the view is told, as their events would tell it).
  constexpr int depth = 200;
  sim s(lock_mode::wait, 2);
  std::vector<std::string> ahead;
  for (int i = 0; i < depth; ++i) ahead.push_back(s.add_foreign());
  s.run();
  CHECK(s.blocker_watches() ==
        std::set<std::string>{join_path(s.dir, ahead[depth - 2]), join_path(s.dir, ahead[depth - 1])});
  const int lists = s.lists, requests = s.requests;
  for (int i = 0; i < depth - 2; ++i) {  // unwatched by us: heard by the session
    s.erase_unheard(join_path(s.dir, ahead[i]));
    s.view.gone(ahead[i]);
  }
  s.drain();
  CHECK(s.requests == requests);
  s.delete_foreign(ahead[depth - 2]);
  s.drain();
  CHECK(s.view_asks == 1);
  CHECK(s.fsm.watching_last_blocker());
  CHECK(s.requests == requests);  // the view had nothing left ahead but the watched one
  check_granted_when_gone(s, ahead[depth - 1]);
  CHECK(s.lists == lists);

  // The same queue with the releases in order and our window moving with them: each release
  // of a watched blocker costs one watch request (the next name), never a listing.
  sim t(lock_mode::wait, 2);
  std::vector<std::string> q;
  for (int i = 0; i < depth; ++i) q.push_back(t.add_foreign());
  t.run();
  const int t_lists = t.lists, t_requests = t.requests;
  // The waiters of this session behind each node hear it go: the view learns it (here, from
  // the back: our window's nodes go first, as when the waiters ahead give up).
  for (int i = depth - 1; i >= 1; --i) {
    t.delete_foreign(q[i]);
    t.drain();
    REQUIRE_FALSE(t.completed);
  }
  CHECK(t.lists == t_lists);
  CHECK(t.requests == t_requests + depth - 2);  // one watch per node that moved into the window
  check_granted_when_gone(t, q[0]);
  CHECK(t.lists == t_lists);
}

TEST_CASE("a reader watches the writers that block it, not the readers between", "[unit][lock][handoff][shared]") {
  sim s(lock_kind::read, lock_mode::wait);
  auto w1 = s.add_foreign(writer_prefix, shared_marker);
  s.add_foreign(reader_prefix, shared_marker);
  auto w2 = s.add_foreign(writer_prefix, shared_marker);
  s.add_foreign(reader_prefix, shared_marker);
  s.run();
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, w1), join_path(s.dir, w2)});
  CHECK(s.fsm.watching_last_blocker());
  int lists = s.lists;
  s.delete_foreign(w1);
  s.drain();
  CHECK_FALSE(s.completed);
  s.delete_foreign(w2);
  s.drain();
  REQUIRE(s.completed);  // beside the readers ahead
  CHECK(s.lists == lists);
}

TEST_CASE("a data change on a watched blocker never grants, even when it is the last one watched", "[unit][lock][handoff]") {
  sim s;
  auto n0 = s.add_foreign(), n1 = s.add_foreign();
  s.run();
  s.delete_foreign(n1);
  s.drain();
  s.change_data(n0, "__REVOKE__");  // the holder, written to: still there
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, n0)});
  s.delete_foreign(n0);
  s.drain();
  REQUIRE(s.completed);
}

TEST_CASE("every node is watched by at most K waiters: K events per release", "[unit][lock][handoff]") {
  // 20 waiters queued one after another (each listing the queue as it joins), K = 3: each
  // node is among the blockers watched by the 3 waiters behind it, no more.
  const int k = 3;
  std::vector<std::unique_ptr<sim>> waiters;
  std::map<std::string, int> watchers;  // node name -> waiters watching it
  sim head;
  auto h = head.add_foreign();
  for (int i = 0; i < 20; ++i) {
    auto w = std::make_unique<sim>(lock_mode::wait, k);
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-0000-0000-%012d", i);  // a client id of its own
    w->fsm = acquire_fsm(w->dir, id, lock_mode::wait, lock_kind::exclusive, 1, k);
    w->children = head.children;
    w->next_seq = head.next_seq;
    w->apply(w->fsm.start());
    w->drain();
    for (const auto& p : w->blocker_watches()) ++watchers[std::string(node_name(p))];
    // the new waiter's node joins the shared queue
    auto mine = std::string(node_name(w->our_path()));
    head.children[mine] = w->children.at(mine);
    head.next_seq = w->next_seq;
    waiters.push_back(std::move(w));
  }
  CHECK(watchers[h] == k);  // the head: by the K waiters behind it
  for (auto& [node, n] : watchers) CHECK(n <= k);
  for (std::size_t i = 0; i < waiters.size(); ++i)
    CHECK(waiters[i]->blocker_watches().size() == std::min<std::size_t>(i + 1, k));
}

TEST_CASE("only the nearest blocker is watched with a data watch: the others with a child watch, told after it",
          "[unit][lock][handoff]") {
  // A node's deletion fires its data watches before its child watches (one server, one
  // transaction): the waiter the deletion grants, whose nearest blocker it was, is told first.
  sim s(lock_mode::wait, 3);
  auto n0 = s.add_foreign(), n1 = s.add_foreign(), n2 = s.add_foreign();
  s.run();
  std::map<std::string, bool> nearest;  // the watches asked, by path
  for (const auto& a : s.watch_requests) nearest[a.path] = a.nearest;
  CHECK(nearest == std::map<std::string, bool>{
                       {join_path(s.dir, n0), false}, {join_path(s.dir, n1), false}, {join_path(s.dir, n2), true}});
  s.delete_foreign(n2);  // the nearest gave up: n1 is the nearest now, and stays child-watched
  s.drain();
  CHECK_FALSE(s.completed);
  s.delete_foreign(n0);
  s.drain();
  check_granted_when_gone(s, n1);
}

TEST_CASE("a child event on a watched blocker never grants: it lists again", "[unit][lock][handoff]") {
  // (a child watch fires "children changed" only for a node with children, which no lock node
  // has; a foreign persistent node in the dir could)
  sim s;
  auto n0 = s.add_foreign(), n1 = s.add_foreign();
  s.run();
  s.delete_foreign(n1);
  s.drain();
  int lists = s.lists;
  s.watches.erase(join_path(s.dir, n0));  // (the watch is spent)
  s.apply(s.fsm.on_watch_event(join_path(s.dir, n0), watch_change::children_changed));
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.lists == lists + 1);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, n0)});  // watched again
  s.delete_foreign(n0);
  s.drain();
  REQUIRE(s.completed);
}
