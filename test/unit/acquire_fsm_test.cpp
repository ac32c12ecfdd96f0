// The lock recipe without a server: an in-memory lock dir answers the state machine's requests
// in order (as one ZooKeeper session does), and each test injects cancellation, connection
// loss or expiry at every step. The acquire's other features have their own acquire_*_test.cpp.
#include "acquire_test.hpp"

TEST_CASE("uncontended acquire: create and list pipelined, one round trip", "[unit][lock]") {
  sim s;
  auto a = s.fsm.start();
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::create_and_list);
  CHECK(a[0].path == "/locks/a/_c_11111111-2222-3333-4444-555555555555-lock-");
  s.apply(a);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.fsm.result().node == "/locks/a/_c_11111111-2222-3333-4444-555555555555-lock-0000000000");
  CHECK(s.fsm.result().fencing_token == 101);
  // one create_and_list, and our node's watch (sent on the create's reply, behind the listing:
  // the grant came with the listing, before its reply)
  CHECK(s.requests == 2);
  CHECK(s.watches == std::set<std::string>{s.fsm.result().node});
}

TEST_CASE("K = 1: a waiter watches only its predecessor, the window moves up along the session's view", "[unit][lock]") {
  sim s(lock_mode::wait, 1);
  auto head = s.add_foreign();
  auto second = s.add_foreign();
  s.run();
  CHECK_FALSE(s.completed);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, second)});
  CHECK_FALSE(s.fsm.watching_last_blocker());
  // the head releases: nobody watches it but the second, so we stay put
  s.delete_foreign(head);
  s.drain();
  CHECK_FALSE(s.completed);
  // our predecessor releases: it was not the head when we began, so we ask the view, which
  // still has the head (its deletion unheard by this session): its watch answers no_node
  int lists = s.lists, requests = s.requests;
  s.delete_foreign(second);
  s.drain();
  CHECK(s.lists == lists);
  CHECK(s.requests == requests + 1);  // the head's watch, which answers no_node: then the grant
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("predecessor that was head: its deletion grants at once", "[unit][lock]") {
  sim s;
  auto head = s.add_foreign();
  s.run();
  CHECK(s.fsm.watching_last_blocker());
  int lists = s.lists;
  s.delete_foreign(head);
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.lists == lists);  // no listing after the event
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("reconnected while waiting: the predecessor's deletion grants only after a listing shows our node",
          "[unit][lock]") {
  for (bool ours_deleted : {false, true}) {
    CAPTURE(ours_deleted);
    sim s;
    auto head = s.add_foreign();
    s.run();
    REQUIRE(s.fsm.watching_last_blocker());
    // disconnected and back (the client set the watch again); an operator deleted our node meanwhile
    if (ours_deleted)
      for (auto it = s.children.begin(); it != s.children.end();)
        it = it->first.starts_with(s.fsm.node_prefix()) ? s.children.erase(it) : std::next(it);
    s.apply(s.fsm.on_reconnected());
    int lists = s.lists;
    s.delete_foreign(head);
    s.drain();
    CHECK(s.lists > lists);  // listed before any grant
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    REQUIRE(s.ours() == 1);  // queued again when ours was gone: the grant is of a node that exists
    CHECK(s.children.count(std::string(node_name(s.fsm.result().node))) == 1);
  }
}

TEST_CASE("predecessor gives up (not released): list again and watch the next", "[unit][lock]") {
  sim s;
  auto head = s.add_foreign();
  auto middle = s.add_foreign();
  s.run();
  s.delete_foreign(middle);  // gave up: head still holds
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, head)});
  s.delete_foreign(head);
  s.drain();
  CHECK(s.completed);
}

TEST_CASE("kazoo and Curator nodes are contenders, other children are ignored", "[unit][lock]") {
  sim s;
  s.children["config"] = 1;
  s.children["leader-0000000000"] = 2;
  s.next_seq = 1;
  auto kz = s.add_foreign("0123456789abcdef__lock__");
  s.run();
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, kz)});
  s.delete_foreign(kz);
  s.drain();
  CHECK(s.completed);
}

TEST_CASE("missing lock dir: parents are created, then the create is retried", "[unit][lock]") {
  sim s;
  s.dir_exists = false;
  s.run();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.ours() == 1);
}

TEST_CASE("try-acquire on a held lock fails with lock_busy on one read: no write", "[unit][lock]") {
  sim s(lock_mode::try_once);
  s.add_foreign();
  s.run();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.requests == 1);  // the listing only: no create, no delete
  CHECK(s.next_seq == 1);  // nothing was created
  CHECK(s.ours() == 0);
  CHECK(s.blocker_watches().empty());
}

TEST_CASE("try-acquire on a free lock creates, a contender that came between look and create wins", "[unit][lock]") {
  {
    sim s(lock_mode::try_once);
    s.run();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.ours() == 1);
  }
  {
    sim s(lock_mode::try_once);
    s.apply(s.fsm.start());
    s.add_foreign();  // queues between our look (empty) and our create
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.ours() == 0);  // created, found behind, deleted
  }
  {
    sim s(lock_mode::try_once);  // the look loses the connection: looked at again after the reconnect
    s.apply(s.fsm.start());
    s.replies.clear();
    s.apply(s.fsm.on_children(zk_errc::connection_loss, {}));
    REQUIRE(s.waiting_reconnect);
    s.add_foreign();
    s.apply(s.fsm.on_reconnected());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.next_seq == 1);
  }
}

TEST_CASE("cancellation at every step leaves no node and no watch", "[unit][lock][cancel]") {
  // scenario: two foreign contenders ahead; they release one after another
  for (int cancel_at = 0; cancel_at < 12; ++cancel_at) {
    for (error_code reason : {error_code(boost::asio::error::operation_aborted), error_code(errc::lock_timeout)}) {
      CAPTURE(cancel_at, reason.message());
      sim s;
      auto f1 = s.add_foreign();
      auto f2 = s.add_foreign();
      std::deque<std::function<void()>> script = {[&] { s.delete_foreign(f1); }, [&] { s.delete_foreign(f2); }};
      s.apply(s.fsm.start());
      int steps = 0;
      bool cancelled = false;
      while (!s.completed) {
        if (steps++ == cancel_at) {
          s.apply(s.fsm.cancel(reason));
          cancelled = true;
        }
        if (!s.step()) {
          if (script.empty()) break;
          script.front()();
          script.pop_front();
        }
      }
      s.drain();
      REQUIRE(s.completed);
      if (cancelled && s.fsm.result().ec) {
        CHECK(s.fsm.result().ec == reason);
        CHECK(s.ours() == 0);
        CHECK(s.blocker_watches().empty());
      } else {
        CHECK(s.ours() == 1);  // acquired before the cancel arrived
      }
    }
  }
}

TEST_CASE("cancel while the create is in flight deletes the node once it appears", "[unit][lock][cancel]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  // the create was applied on the server; its reply has not arrived
  CHECK(s.ours() == 1);
  auto a = s.fsm.cancel(boost::asio::error::operation_aborted);
  CHECK(a.empty());  // nothing to do until the create's outcome is known
  s.apply(a);
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
  CHECK(s.ours() == 0);
}

TEST_CASE("protected create: a create lost with the connection is found by its id", "[unit][lock][fault]") {
  for (bool created : {true, false}) {
    CAPTURE(created);
    sim s;
    auto a = s.fsm.start();
    if (created) {
      s.apply(a);           // applied on the server...
      s.replies.clear();    // ...but the connection dropped before the replies
    }
    s.lose_create_and_listing();
    REQUIRE(s.waiting_reconnect);
    s.apply(s.fsm.on_reconnected());
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.ours() == 1);  // never two
    CHECK(s.fsm.result().fencing_token == s.children.begin()->second);
  }
}

TEST_CASE("cancel during recovery after a lost create still cleans up", "[unit][lock][fault][cancel]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.replies.clear();
  s.lose_create_and_listing();
  s.apply(s.fsm.cancel(errc::lock_timeout));
  CHECK_FALSE(s.completed);  // must first find out whether the node exists
  s.apply(s.fsm.on_reconnected());
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_timeout);
  CHECK(s.ours() == 0);
}

TEST_CASE("connection loss while waiting: watches survive, a lost listing is retried", "[unit][lock][fault]") {
  sim s;
  auto f = s.add_foreign();
  s.apply(s.fsm.start());
  // lose the listing's reply
  REQUIRE(s.step());  // create reply
  s.replies.clear();
  s.apply(s.fsm.on_children(zk_errc::connection_loss, {}));
  REQUIRE(s.waiting_reconnect);
  s.apply(s.fsm.on_reconnected());
  s.drain();
  CHECK(s.blocker_watches().size() == 1);
  s.delete_foreign(f);
  s.drain();
  CHECK(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("session expiry while waiting completes with session_expired", "[unit][lock][fault]") {
  sim s;
  s.add_foreign();
  s.run();
  s.apply(s.fsm.on_expired());
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
  // late replies are ignored
  s.apply(s.fsm.on_watch_event(s.fsm.predecessor(), watch_change::deleted));
  s.apply(s.fsm.on_children({}, {}));
}

TEST_CASE("a zklock 2 holder's release (marker transaction, data change) is granted after one listing",
          "[unit][lock][foreign]") {
  sim s(lock_mode::wait, 1);
  auto [head, second] = s.queue_third(contender_marker_v2);
  CHECK_FALSE(s.fsm.watching_last_blocker());
  s.delete_foreign(head);  // not watched by us: no event
  int lists = s.lists;
  s.release_zklock(second);  // the second got the lock and released it: multi(setData, delete)
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.lists == lists + 1);  // the change proves nothing by itself: the listing grants
  CHECK(s.blocker_watches().empty());
}

TEST_CASE("a write to the holder's node never grants: list, watch it again, wait for its deletion",
          "[unit][lock][foreign]") {
  for (std::string_view holder_data : {contender_marker, contender_marker_v2, std::string_view{}}) {
    for (std::string_view written : {std::string_view("__REVOKE__"), release_marker, std::string_view("x")}) {
      CAPTURE(holder_data, written);
      sim s;
      auto holder = s.add_foreign(testing::mutex_prefix, holder_data);
      s.run();
      REQUIRE(s.fsm.watching_last_blocker());
      int lists = s.lists, requests = s.requests;
      s.change_data(holder, written);  // Curator's Revoker, an operator's set, a forged marker
      s.drain();
      CHECK_FALSE(s.completed);
      CHECK(s.lists == lists + 1);        // one listing...
      CHECK(s.requests == requests + 2);  // ...and the watch set again
      CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, holder)});
      CHECK(s.fsm.watching_last_blocker());
      lists = s.lists;
      s.delete_foreign(holder);  // the holder's release, a plain delete: our turn, no listing
      s.drain();
      REQUIRE(s.completed);
      CHECK_FALSE(s.fsm.result().ec);
      CHECK(s.lists == lists);
    }
  }
}

TEST_CASE("a write to a waiting predecessor never grants: the holder ahead still blocks", "[unit][lock][foreign]") {
  sim s(lock_mode::wait, 1);
  auto [head, second] = s.queue_third(contender_marker);
  CHECK(s.fsm.predecessor() == join_path(s.dir, second));
  s.change_data(second, "__REVOKE__");
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.fsm.predecessor() == join_path(s.dir, second));
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, second)});
  // the predecessor's deletion (not our last blocker): list, then watch the head
  s.delete_foreign(second);
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, head)});
  s.change_data(head, "__REVOKE__");
  s.drain();
  CHECK_FALSE(s.completed);
  check_granted_when_gone(s, head);
}

TEST_CASE("a data change whose listing finds the predecessor gone and nobody ahead grants", "[unit][lock][foreign]") {
  // written to, then released before our listing: the watch fired once, on the write
  sim s;
  auto holder = s.add_foreign(testing::mutex_prefix, contender_marker);
  s.run();
  s.change_data(holder, "__REVOKE__");
  s.children.erase(holder);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());
}

TEST_CASE("mutex nodes are created with zklock/3, shared lock nodes with the shared marker", "[unit][lock]") {
  sim s;
  CHECK(s.fsm.node_data() == "zklock/3");
  CHECK(acquire_fsm("/d", "x", lock_mode::wait, lock_kind::read).node_data() == shared_marker);
  CHECK(acquire_fsm("/d", "x", lock_mode::wait, lock_kind::write).node_data() == shared_marker);
  // both versions still read as zklock contenders
  CHECK(classify_predecessor("zklock/3") == predecessor_data::zklock_contender);
  CHECK(classify_predecessor("zklock/2") == predecessor_data::zklock_contender);
  CHECK(classify_predecessor("__REVOKE__") == predecessor_data::other);
  CHECK(classify_predecessor(downgraded_marker) == predecessor_data::downgraded);
}

TEST_CASE("a zklock waiter that gives up (plain delete) is not a release: the window moves to the head", "[unit][lock]") {
  sim s(lock_mode::wait, 1);
  auto [head, second] = s.queue_third(contender_marker);
  int lists = s.lists;
  s.delete_foreign(second);  // cancelled: deleted without the release marker; the head still holds
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.lists == lists);  // the view names the head: watched with no listing
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, head)});
  s.delete_foreign(head);  // the head was first when we watched it: its deletion is our turn
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("a data change on a Curator or kazoo predecessor proves nothing: list again", "[unit][lock]") {
  sim s;
  auto [head, second] = s.queue_third();  // second: not a zklock node
  s.change_data(second);  // someone changes its data
  REQUIRE(s.step());
  s.delete_foreign(second);  // it gives up; the head still holds
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, head)});
}

TEST_CASE("protected-create recovery syncs before it lists", "[unit][lock][fault]") {
  // on an ensemble a lagging follower could otherwise hide our in-flight create
  sim s;
  s.apply(s.fsm.start());
  s.replies.clear();
  s.lose_create_and_listing();
  CHECK(s.syncs == 0);
  s.apply(s.fsm.on_reconnected());
  CHECK(s.syncs == 1);
  s.drain();
  REQUIRE(s.completed);
  // an ordinary listing needs no sync
  sim t;
  t.add_foreign();
  t.run();
  CHECK(t.syncs == 0);
}

TEST_CASE("a watch removal lost with the connection is retried after the reconnect", "[unit][lock][fault][cancel]") {
  sim s;
  s.add_foreign();
  s.run();
  REQUIRE(s.blocker_watches().size() == 1);
  s.lose_removals = true;
  s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.waiting_reconnect);
  CHECK(s.blocker_watches().size() == 1);  // still registered (the C client sets it again on reconnect)
  s.lose_removals = false;
  s.apply(s.fsm.on_reconnected());
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
  CHECK(s.blocker_watches().empty());
  CHECK(s.ours() == 0);
}

TEST_CASE("a recovered node of another session is never adopted", "[unit][lock][fault]") {
  sim s;
  s.apply(s.fsm.start());
  s.replies.clear();
  s.lose_create_and_listing();
  s.apply(s.fsm.on_reconnected());
  REQUIRE(s.step());  // the listing finds "our" node: stat it
  s.replies.clear();
  s.apply(s.fsm.on_stat({}, 42, false));  // its ephemeral owner is another session
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
  CHECK(s.fsm.result().node.empty());
}
