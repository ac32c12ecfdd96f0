// The lock recipe without a server: an in-memory lock dir answers the state machine's requests
// in order (as one ZooKeeper session does), and each test injects cancellation, connection
// loss or expiry at every step.
#include "fsm_property.hpp"
#include "sansio/acquire_fsm.hpp"
#include <zklock/path.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/error.hpp>

#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <cstdlib>
#include <random>
#include <set>

using namespace zklock;
using namespace zklock::detail;
using zklock::testing::sim;
using zklock::testing::reader_prefix;
using zklock::testing::writer_prefix;


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

TEST_CASE("K = 1: a waiter watches only its predecessor, the window moves up with a listing", "[unit][lock]") {
  sim s(lock_mode::wait, 1);
  auto head = s.add_foreign();
  auto second = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, second)});
  CHECK_FALSE(s.fsm.watching_last_blocker());
  // the head releases: nobody watches it but the second, so we stay put
  s.delete_foreign(head);
  s.drain();
  CHECK_FALSE(s.completed);
  // our predecessor releases: it was not the head when we began, so we list again
  int lists = s.lists;
  s.delete_foreign(second);
  s.drain();
  CHECK(s.lists == lists + 1);
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("predecessor that was head: its deletion grants at once", "[unit][lock]") {
  sim s;
  auto head = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
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
    s.apply(s.fsm.start());
    s.drain();
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
  s.apply(s.fsm.start());
  s.drain();
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
  s.apply(s.fsm.start());
  s.drain();
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, kz)});
  s.delete_foreign(kz);
  s.drain();
  CHECK(s.completed);
}

TEST_CASE("missing lock dir: parents are created, then the create is retried", "[unit][lock]") {
  sim s;
  s.dir_exists = false;
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.ours() == 1);
}

TEST_CASE("try-acquire on a held lock fails with lock_busy on one read: no write", "[unit][lock]") {
  sim s(lock_mode::try_once);
  s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
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
    s.apply(s.fsm.start());
    s.drain();
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
    s.apply(s.fsm.on_create(zk_errc::connection_loss, {}, 0));
    s.apply(s.fsm.on_children(zk_errc::connection_loss, {}));
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
  s.apply(s.fsm.on_create(zk_errc::connection_loss, {}, 0));
  s.apply(s.fsm.on_children(zk_errc::connection_loss, {}));
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
  s.apply(s.fsm.start());
  s.drain();
  s.apply(s.fsm.on_expired());
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
  // late replies are ignored
  s.apply(s.fsm.on_watch_event(s.fsm.predecessor(), watch_change::deleted));
  s.apply(s.fsm.on_children({}, {}));
}

TEST_CASE("a failed delete during cleanup is retried after the reconnect", "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  s.apply(s.fsm.start());
  s.add_foreign();  // between the try-lock's look and its create
  s.step();         // the look: free -> create and list
  s.step();
  s.step();         // listing: busy -> delete requested
  REQUIRE(s.replies.size() == 2);  // our node's watch, the delete
  s.replies.clear();  // (our node's watch's reply too: nothing waits for it)
  s.apply(s.fsm.on_deleted(zk_errc::connection_loss));
  CHECK_FALSE(s.completed);
  // the delete never reached the server
  s.children[std::string(node_name(s.fsm.node_prefix())) + "0000000001"] = 1;
  s.apply(s.fsm.on_reconnected());
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.ours() == 0);
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
      s.apply(s.fsm.start());
      s.drain();
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
  s.delete_foreign(head);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("a data change whose listing finds the predecessor gone and nobody ahead grants", "[unit][lock][foreign]") {
  // written to, then released before our listing: the watch fired once, on the write
  sim s;
  auto holder = s.add_foreign(testing::mutex_prefix, contender_marker);
  s.apply(s.fsm.start());
  s.drain();
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

TEST_CASE("a zklock waiter that gives up (plain delete) is not a release: list again", "[unit][lock]") {
  sim s(lock_mode::wait, 1);
  auto [head, second] = s.queue_third(contender_marker);
  int lists = s.lists;
  s.delete_foreign(second);  // cancelled: deleted without the release marker; the head still holds
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.lists == lists + 1);
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
  s.apply(s.fsm.on_create(zk_errc::connection_loss, {}, 0));
  s.apply(s.fsm.on_children(zk_errc::connection_loss, {}));
  CHECK(s.syncs == 0);
  s.apply(s.fsm.on_reconnected());
  CHECK(s.syncs == 1);
  s.drain();
  REQUIRE(s.completed);
  // an ordinary listing needs no sync
  sim t;
  t.add_foreign();
  t.apply(t.fsm.start());
  t.drain();
  CHECK(t.syncs == 0);
}

TEST_CASE("a watch removal lost with the connection is retried after the reconnect", "[unit][lock][fault][cancel]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
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
  s.apply(s.fsm.on_create(zk_errc::connection_loss, {}, 0));
  s.apply(s.fsm.on_children(zk_errc::connection_loss, {}));
  s.apply(s.fsm.on_reconnected());
  REQUIRE(s.step());  // the listing finds "our" node: stat it
  s.replies.clear();
  s.apply(s.fsm.on_stat({}, 42, false));  // its ephemeral owner is another session
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
  CHECK(s.fsm.result().node.empty());
}

TEST_CASE("error conditions group the codes", "[unit][error]") {
  CHECK(error_code(zk_errc::connection_loss) == condition::connection_lost);
  CHECK(error_code(zk_errc::operation_timeout) == condition::connection_lost);
  CHECK(error_code(zk_errc::runtime_inconsistency) == condition::connection_lost);  // the C client dropped the connection
  CHECK(error_code(zk_errc::session_expired) == condition::session_lost);
  CHECK(error_code(errc::session_expired) == condition::session_lost);
  CHECK(error_code(errc::session_closed) == condition::session_lost);
  CHECK(error_code(zk_errc::closing) == condition::session_lost);
  CHECK(error_code(errc::lock_busy) == condition::lock_unavailable);
  CHECK(error_code(errc::lock_timeout) == condition::lock_unavailable);
  CHECK(error_code(errc::lock_lost) != condition::lock_unavailable);
  CHECK(error_code(zk_errc::no_node) != condition::session_lost);
  CHECK(error_code(zk_errc::no_node) != condition::connection_lost);
}

// ---------------------------------------------------------------------------------------------
// The grant rule of the shared lock


TEST_CASE("shared lock: readers share, a writer waits for them, FIFO keeps later readers behind it", "[unit][lock][shared]") {
  // reader, reader, (writer: us) -> we watch the second reader; the first reader's release
  // does not wake us; the second's does not either until we relist and see no one ahead
  {
    sim s;
    s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, lock_kind::write, 1, 1);
    auto r1 = s.add_foreign(reader_prefix);
    auto r2 = s.add_foreign(reader_prefix);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE_FALSE(s.completed);
    CHECK(s.fsm.predecessor() == join_path(s.dir, r2));
    CHECK_FALSE(s.fsm.watching_last_blocker());
    // zklock readers are created with shared_marker: their release is no grant (r1 still reads)
    CHECK(classify_predecessor(shared_marker) == predecessor_data::other);
    s.release_zklock(r2);
    s.drain();
    CHECK_FALSE(s.completed);
    CHECK(s.fsm.predecessor() == join_path(s.dir, r1));
    CHECK(s.fsm.watching_last_blocker());
    s.delete_foreign(r1);
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
  }
  // writer, reader, (reader: us) -> we watch the writer, not the reader between us
  {
    sim s;
    s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, lock_kind::read);
    auto w = s.add_foreign(writer_prefix);
    s.add_foreign(reader_prefix);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE_FALSE(s.completed);
    CHECK(s.fsm.predecessor() == join_path(s.dir, w));
    CHECK(s.fsm.watching_last_blocker());
    s.delete_foreign(w);
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.ours() == 1);
  }
  // reader held, writer waiting, (reader: us): we wait for the writer (no starvation)
  {
    sim s(lock_mode::try_once);
    s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::try_once, lock_kind::read);
    s.add_foreign(reader_prefix);
    s.add_foreign(writer_prefix);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);  // decided on the look: no write
  }
  // a try-read beside readers only: granted
  {
    sim s;
    s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::try_once, lock_kind::read);
    s.add_foreign(reader_prefix);
    s.add_foreign(reader_prefix);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
  }
}

TEST_CASE("shared lock: a writer that downgrades lets zklock readers in, never a writer", "[unit][lock][shared]") {
  // (writer W holding), (reader: us). W creates its downgrade mark and writes downgraded_marker
  // in one transaction: its watch fires (data changed), we list, see the mark, watch W again and
  // check the mark (its owner is W's session): downgraded. We remove our watch and list again:
  // granted.
  sim s;
  s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, lock_kind::read);
  auto w = s.add_foreign(writer_prefix, shared_marker);
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE_FALSE(s.completed);
  REQUIRE(s.downgrade_head());
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());  // the downgraded writer's watch was removed
  CHECK(s.children.count(w) == 1);

  // A writer behind the same downgraded node keeps waiting for it.
  sim t;
  t.fsm = acquire_fsm(t.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, lock_kind::write);
  auto w2 = t.add_foreign(writer_prefix, shared_marker);
  t.apply(t.fsm.start());
  t.drain();
  REQUIRE(t.downgrade_head());
  t.drain();
  CHECK_FALSE(t.completed);
  CHECK(t.fsm.predecessor() == join_path(t.dir, w2));
  CHECK(t.blocker_watches() == std::set<std::string>{join_path(t.dir, w2)});
  t.delete_foreign(w2);
  t.drain();
  REQUIRE(t.completed);
  CHECK_FALSE(t.fsm.result().ec);
}

TEST_CASE("shared lock: a downgrade marker written by another session grants no reader", "[unit][lock][shared][foreign]") {
  // (writer W holding), (reader: us). Another session writes downgraded_marker into W's node:
  // we list again, no mark is listed, W still blocks us: no request more, no grant.
  sim s;
  s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::wait, lock_kind::read);
  auto w = s.add_foreign(writer_prefix, shared_marker);
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE_FALSE(s.completed);
  s.change_data(w, downgraded_marker);
  s.drain();
  CHECK_FALSE(s.completed);  // two holders otherwise
  CHECK(s.mark_checks == 0);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, w)});
  // with a mark of its own (its owner is not W's session): checked, still no grant
  s.forge_mark(w);
  s.change_data(w, downgraded_marker);
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.mark_checks == 1);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, w)});
  // W releases: granted
  s.delete_foreign(w);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

TEST_CASE("shared lock: a revocation written over a downgraded writer's data leaves it a reader",
          "[unit][lock][shared][foreign]") {
  // W downgraded (its mark is there), then a Revoker writes "__REVOKE__" over its data: a new
  // reader, blocking or trying, checks the mark, not the data, and joins W.
  for (auto mode : {lock_mode::wait, lock_mode::try_once}) {
    CAPTURE(static_cast<int>(mode));
    sim s;
    s.fsm = acquire_fsm(s.dir, testing::our_id, mode, lock_kind::read);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.change_data(w, "__REVOKE__");
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.mark_checks == 1);
    CHECK(s.blocker_watches().empty());
    CHECK(s.children.count(w) == 1);
  }
}

TEST_CASE("shared lock: only the head writer's mark is checked, only its own session's proves a downgrade",
          "[unit][lock][shared][foreign]") {
  SECTION("a forged mark on the head writer: a try-read is busy") {
    sim s;
    s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::try_once, lock_kind::read);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.forge_mark(w);
    s.change_data(w, downgraded_marker);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.mark_checks == 1);
    CHECK(s.ours() == 0);  // nothing written
  }
  SECTION("a mark persistent or of no session proves nothing") {
    CHECK_FALSE(downgrade_proven(0x17, 0));
    CHECK_FALSE(downgrade_proven(0, 0));
    CHECK_FALSE(downgrade_proven(0x17, 0x18));
    CHECK(downgrade_proven(0x17, 0x17));
  }
  SECTION("a writer behind a reader (it waits): its mark is not even checked") {
    sim s;
    s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::wait, lock_kind::read);
    s.add_foreign(reader_prefix, shared_marker);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.forge_mark(w);
    s.change_data(w, downgraded_marker);
    s.apply(s.fsm.start());
    s.drain();
    CHECK_FALSE(s.completed);
    CHECK(s.mark_checks == 0);
  }
  SECTION("the mark's name: no lock marker in it, not a contender for anyone") {
    auto mark = downgrade_mark_name(writer_prefix + testing::seq10(7));
    CHECK(mark == "zklock-downgraded-" + testing::seq10(7));
    CHECK_FALSE(parse_contender(mark));
    CHECK(downgrade_mark_name(reader_prefix + testing::seq10(7)).empty());
    CHECK(downgrade_mark_path("/locks/a/" + writer_prefix + testing::seq10(7)) == "/locks/a/" + mark);
  }
  SECTION("the check loses the connection while waiting: listed and checked again after the reconnect") {
    sim s;
    s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::wait, lock_kind::read);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.apply(s.fsm.start());
    while (s.mark_checks == 0 && s.step()) {
    }
    REQUIRE(s.mark_checks == 1);
    s.apply(s.fsm.on_downgrade_checked(join_path(s.dir, w), zk_errc::connection_loss, 0, 0));
    REQUIRE(s.waiting_reconnect);
    s.drain();  // (the check's own reply comes after: stale, ignored)
    CHECK_FALSE(s.completed);
    s.apply(s.fsm.on_reconnected());
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.mark_checks == 2);
    CHECK(s.violation.empty());
  }
}

TEST_CASE("try-read behind a downgraded writer reads its data and is granted, behind a holding writer busy",
          "[unit][lock][shared][foreign]") {
  auto try_read = [](sim& s) { s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::try_once, lock_kind::read); };
  SECTION("downgraded head writer, a reader beside it: list, check its mark, create and list") {
    sim s;
    try_read(s);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.add_foreign(reader_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    auto a = s.fsm.start();
    REQUIRE(a.size() == 1);
    CHECK(a[0].type == acquire_action::list);
    s.apply(a);
    REQUIRE(s.step());  // the listing: one blocker, the head writer, its mark listed -> check it
    REQUIRE(s.replies.size() == 1);
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.requests == 5);  // list, two exists (the writer, its mark), create-and-list, our node's watch
    CHECK(s.blocker_watches().empty());
    CHECK(s.ours() == 1);
    CHECK(s.children.count(w) == 1);
  }
  SECTION("the head writer holds (not downgraded, no mark): busy on the listing alone, nothing written") {
    sim s;
    try_read(s);
    s.add_foreign(writer_prefix, shared_marker);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);
    CHECK(s.next_seq == 1);
    CHECK(s.ours() == 0);
  }
  SECTION("a foreign write on the head writer is no downgrade: busy") {
    sim s;
    try_read(s);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.change_data(w, "__REVOKE__");
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
  }
  SECTION("a writer behind a downgraded one waits, so it blocks: busy on the listing alone") {
    sim s;
    try_read(s);
    s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.add_foreign(writer_prefix, shared_marker);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);
  }
  SECTION("a writer that is not the head waits (a reader holds ahead of it): busy on the listing alone") {
    sim s;
    try_read(s);
    s.add_foreign(reader_prefix, shared_marker);
    s.add_foreign(writer_prefix, shared_marker);
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);
  }
  SECTION("a try-write behind a downgraded writer: busy on the listing alone") {
    sim s;
    s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::try_once, lock_kind::write);
    s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.apply(s.fsm.start());
    s.drain();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);
  }
  SECTION("the writer goes between the listing and the check: the create-and-list decides") {
    sim s;
    try_read(s);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.apply(s.fsm.start());  // the listing sees the writer and its mark
    s.delete_foreign(w);     // gone before the read reaches the server: no_node
    s.drain();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    CHECK(s.ours() == 1);
  }
  SECTION("the check loses the connection: look again after the reconnect") {
    sim s;
    try_read(s);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.apply(s.fsm.start());
    REQUIRE(s.step());
    s.replies.clear();
    s.apply(s.fsm.on_downgrade_checked(join_path(s.dir, w), zk_errc::connection_loss, 0, 0));
    REQUIRE(s.waiting_reconnect);
    int lists = s.lists;
    s.apply(s.fsm.on_reconnected());
    s.drain();
    CHECK(s.lists == lists + 2);  // the look again, then the create-and-list
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
    (void)w;
  }
  SECTION("cancelled while the read is in flight: completes, the late reply is ignored") {
    sim s;
    try_read(s);
    s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.apply(s.fsm.start());
    REQUIRE(s.step());
    s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
    s.drain();
    CHECK(s.completions == 1);
    CHECK(s.ours() == 0);
    CHECK(s.violation.empty());
  }
}

TEST_CASE("shared lock: cancellation at every step leaves no node and no watch", "[unit][lock][shared][cancel]") {
  for (auto kind : {lock_kind::read, lock_kind::write}) {
    for (int cancel_at = 0; cancel_at < 10; ++cancel_at) {
      CAPTURE(static_cast<int>(kind), cancel_at);
      sim s;
      s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, kind);
      auto w = s.add_foreign(writer_prefix);
      auto r = s.add_foreign(reader_prefix);
      std::deque<std::function<void()>> script = {[&] { s.delete_foreign(r); }, [&] { s.delete_foreign(w); }};
      s.apply(s.fsm.start());
      int steps = 0;
      bool cancelled = false;
      while (!s.completed) {
        if (steps == cancel_at && !cancelled) {
          cancelled = true;
          s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
        }
        if (!s.step()) {
          if (script.empty()) break;
          script.front()();
          script.pop_front();
        }
        ++steps;
      }
      REQUIRE(s.completed);
      if (cancelled) {
        CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
        CHECK(s.ours() == 0);
      }
      CHECK(s.blocker_watches().empty());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Leases (the semaphore's second step, behind its internal mutex)

TEST_CASE("a lease waits on the leases dir, takes the first freed lease, and removes its watch",
          "[unit][lock][semaphore]") {
  const std::string lease_prefix = "_c_ffffffff-0000-0000-0000-00000000000l-lease-";
  sim s;
  s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, lock_kind::lease, 2);
  auto a = s.add_foreign(lease_prefix);
  auto b = s.add_foreign(lease_prefix);
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE_FALSE(s.completed);
  CHECK(s.watches.count(s.dir) == 1);  // one children watch, no data watch
  s.delete_foreign(b);  // any holder's release frees a lease (not only the one "ahead")
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());  // granted by a watched listing: the watch was removed
  (void)a;

  // cancellation at every step leaves no node and no watch
  for (int cancel_at = 0; cancel_at < 8; ++cancel_at) {
    CAPTURE(cancel_at);
    sim t;
    t.fsm = acquire_fsm(t.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, lock_kind::lease, 1);
    auto h = t.add_foreign(lease_prefix);
    t.apply(t.fsm.start());
    int steps = 0;
    bool cancelled = false, released = false;
    while (!t.completed && steps < 50) {
      if (steps == cancel_at && !cancelled) {
        cancelled = true;
        t.apply(t.fsm.cancel(boost::asio::error::operation_aborted));
      }
      if (!t.step()) {
        if (released) break;
        released = true;
        t.delete_foreign(h);
      }
      ++steps;
    }
    REQUIRE(t.completed);
    if (t.fsm.result().ec) CHECK(t.ours() == 0);
    CHECK(t.blocker_watches().empty());
  }
}

// ---------------------------------------------------------------------------------------------
// Election candidates (Curator LeaderLatch's "-latch-" nodes)

TEST_CASE("candidates: a candidate behind one other is granted by its predecessor's deletion, without a listing",
          "[unit][lock][election]") {
  using K = lock_kind;
  // a candidate behind one other: granted by its predecessor's deletion, without a listing
  sim s;
  s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::wait, K::candidate);
  CHECK(s.fsm.node_prefix().ends_with("-latch-"));
  auto a = s.add_foreign("_c_ffffffff-0000-0000-0000-000000000000-latch-");
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE_FALSE(s.completed);
  s.delete_foreign(a);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

// ---------------------------------------------------------------------------------------------
// Property tests (test/unit/fsm_property.hpp, shared with the fuzzer test/fuzz/fsm_fuzz.cpp):
// random kinds, modes, queues, releases, arrivals, cancellations and expiries in random order
// (seeded; the seed is printed on failure). Invariants: one completion and nothing after it; a
// grant is what the grant rule says of the dir at that moment, with the node's czxid; a failure
// leaves no node of ours and no watch (unless the session expired, which takes both); never two
// nodes of ours; no request the state forbids; once nothing is left in the way, a wait ends.

namespace {
void check_lock_property(bool faults) {
  // ZKLOCK_PROPERTY_SEED=<seed> replays a failure this test printed (its seed; the run is
  // counted from it)
  const char* replay = std::getenv("ZKLOCK_PROPERTY_SEED");
  const std::uint32_t seed = replay ? static_cast<std::uint32_t>(std::stoul(replay)) : std::random_device{}();
  for (int run = 0; run < 3000; ++run) {
    CAPTURE(seed, run);
    zklock::testing::seeded_source rng(seed + run);
    auto broken = zklock::testing::run_lock_property(rng, faults);
    INFO(broken.value_or(""));
    REQUIRE_FALSE(broken);
  }
}
}  // namespace

TEST_CASE("acquire_fsm property: random interleavings keep the invariants", "[unit][lock][property]") {
  check_lock_property(false);
}

TEST_CASE("acquire_fsm property: with connection drops and reconnects", "[unit][lock][property][fault]") {
  // the same inputs plus the connection dropping (requests in flight fail with
  // connection_loss; a create or delete may have reached the server) and coming back
  check_lock_property(true);
}

TEST_CASE("acquire_fsm property: the fault interleavings it once found stay fixed", "[unit][lock][property][fault]") {
  // Seeds (seed + run) of runs that failed: a grant decided behind a watch removal the
  // connection's drop delayed, then our node deleted and queued again: the new node was granted
  // by that old decision, against the grant rule, or created beside the old one.
  for (std::uint32_t seed : {3240094610u + 585u, 863154362u + 1073u, 3596894185u + 674u, 1723328487u + 2063u}) {
    CAPTURE(seed);
    zklock::testing::seeded_source rng(seed);
    auto broken = zklock::testing::run_lock_property(rng, true);
    INFO(broken.value_or(""));
    CHECK_FALSE(broken);
  }
}

// ---------------------------------------------------------------------------------------------
// The refresh before a grant, and the early answer while disconnected

TEST_CASE("a grant after a long wait refreshes the contact first, once, then grants", "[unit][lock][grant]") {
  sim s;
  int asked = 0;
  s.contact_stale = [&] { return ++asked, true; };  // always stale: refreshed once only
  auto head = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  CHECK(asked == 0);
  s.delete_foreign(head);  // our last blocker goes: the event grants, no request sent
  s.step();
  CHECK_FALSE(s.completed);
  CHECK(s.refreshes == 1);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(asked == 2);  // asked again after the refresh, which is not sent a second time
  CHECK(s.refreshes == 1);
}

TEST_CASE("a fresh contact grants without a refresh, also while disconnected nothing is refreshed", "[unit][lock][grant]") {
  sim s;
  s.contact_stale = [] { return false; };
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.refreshes == 0);
  CHECK(s.requests == 2);  // create-and-list, our node's watch
}

TEST_CASE("a grant whose session ended under it is no grant: the session's error", "[unit][lock][grant][fault]") {
  sim s;
  s.session_over_at_grant = [] { return error_code(errc::session_closed); };
  s.apply(s.fsm.start());
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_closed);
  CHECK(s.fsm.result().node.empty());
}

TEST_CASE("a refresh that finds the session over is no grant", "[unit][lock][grant][fault]") {
  sim s;
  s.contact_stale = [] { return true; };
  s.apply(s.fsm.start());
  s.step();
  s.step();  // create, listing: ours; the refresh goes
  REQUIRE(s.refreshes == 1);
  s.replies.clear();
  s.apply(s.fsm.on_refreshed(zk_errc::session_expired));
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
  // a connection lost under the refresh still grants: the hold's own checks take over
  sim t;
  t.contact_stale = [] { return true; };
  t.apply(t.fsm.start());
  t.step();
  t.step();
  t.replies.clear();
  t.apply(t.fsm.on_refreshed(zk_errc::connection_loss));
  REQUIRE(t.completed);
  CHECK_FALSE(t.fsm.result().ec);
}

TEST_CASE("cancel while disconnected: terminal answers at once and cleans up behind, total waits for the cleanup",
          "[unit][lock][cancel][fault]") {
  for (auto kind : {stop_kind::at_once, stop_kind::total}) {
    CAPTURE(kind == stop_kind::at_once);
    sim s;
    s.add_foreign();
    s.apply(s.fsm.start());
    s.drain();  // waiting behind the head
    s.drop_connection([] { return true; });
    s.apply(s.fsm.on_suspended());  // a blocking acquire waits for the reconnect
    CHECK(s.early_answers == 0);
    s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, kind, s.connected));
    CHECK(s.early_answers == (kind == stop_kind::at_once ? 1 : 0));
    CHECK_FALSE(s.completed);
    CHECK(s.fsm.answered_early() == (kind == stop_kind::at_once));
    s.reconnect();
    s.drain();
    REQUIRE(s.completed);  // the cleanup is done
    CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
    CHECK(s.ours() == 0);
    CHECK(s.blocker_watches().empty());
    CHECK(s.violation == "");
  }
}

TEST_CASE("a timeout: lock_timeout after the cleanup while connected, connection_unavailable at once while not",
          "[unit][lock][cancel][fault]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  s.apply(s.fsm.on_timeout(true));
  CHECK(s.early_answers == 0);
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_timeout);

  sim t;
  t.add_foreign();
  t.apply(t.fsm.start());
  t.drain();
  t.drop_connection([] { return true; });
  t.apply(t.fsm.on_timeout(false));
  CHECK(t.early_answers == 1);
  t.reconnect();
  t.drain();
  REQUIRE(t.completed);
  CHECK(t.fsm.result().ec == errc::connection_unavailable);
  CHECK(t.ours() == 0);
  CHECK(t.violation == "");
}

TEST_CASE("a try-acquire answers at once when the connection drops, a blocking one waits", "[unit][lock][fault]") {
  sim s(lock_mode::try_once);
  s.apply(s.fsm.start());
  s.step();  // the look: free, create and list go
  s.drop_connection([] { return true; });
  s.apply(s.fsm.on_suspended());
  CHECK(s.early_answers == 1);
  s.reconnect();
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::connection_unavailable);
  CHECK(s.ours() == 0);
  CHECK(s.violation == "");

  sim w;
  w.add_foreign();
  w.apply(w.fsm.start());
  w.drain();
  w.drop_connection([] { return true; });
  CHECK(w.fsm.on_suspended().empty());
}

// ---------------------------------------------------------------------------------------------
// "The session ended -> which error", one rule (src/sansio/session_end.hpp)

#include "sansio/session_end.hpp"

TEST_CASE("session ended: one rule for starting operations, running ones and failed requests", "[unit][lock][error]") {
  using st = session_state;
  // an operation that starts
  CHECK(session_end_error(st::closed) == errc::session_closed);
  CHECK(session_end_error(st::expired) == errc::session_expired);
  CHECK(session_end_error(st::disconnected) == errc::not_connected);
  CHECK(session_end_error(st::connecting) == errc::not_connected);
  CHECK_FALSE(session_end_error(st::suspended));
  CHECK_FALSE(session_end_error(st::connected));
  // an operation that ran on a session: not established any more means that session is gone
  CHECK(session_end_error(st::closed, true) == errc::session_closed);
  CHECK(session_end_error(st::expired, true) == errc::session_expired);
  CHECK(session_end_error(st::connecting, true) == errc::session_expired);
  CHECK(session_end_error(st::disconnected, true) == errc::session_expired);
  CHECK_FALSE(session_end_error(st::reconnected, true));
  CHECK(session_end_error(st::reconnected, true, true) == errc::session_expired);  // replaced
  // a request's error
  CHECK(session_end_error(error_code(zk_errc::closing)) == errc::session_closed);
  CHECK(session_end_error(error_code(errc::session_closed)) == errc::session_closed);
  CHECK(session_end_error(error_code(zk_errc::session_expired)) == errc::session_expired);
  CHECK(session_end_error(error_code(errc::not_connected)) == errc::session_expired);
  // every one of them is condition::session_lost
  for (auto s : {st::closed, st::expired, st::disconnected, st::connecting})
    for (bool ran : {false, true}) CHECK(session_end_error(s, ran) == condition::session_lost);
}

TEST_CASE("a request failing because the handle closed under a running acquire: session_expired", "[unit][lock][error]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.step();  // create
  s.replies.clear();
  s.apply(s.fsm.on_children(errc::not_connected, {}));
  s.drain();
  // the cleanup's delete fails the same way; the node went with the session
  while (!s.completed && !s.replies.empty()) s.step();
  if (!s.completed) s.apply(s.fsm.on_expired(errc::session_expired));
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::session_expired);
}

// ---------------------------------------------------------------------------------------------
// The try-acquire's look (acquire_fsm::probe), also the semaphore's

TEST_CASE("probe: what a try-acquire's look decides, for every kind", "[unit][lock][semaphore]") {
  using zklock::testing::lease_prefix;
  using zklock::testing::mutex_prefix;
  using zklock::testing::seq10;
  CHECK(acquire_fsm::probe({}, lock_kind::exclusive) == probe_result::looks_free);
  CHECK(acquire_fsm::probe({mutex_prefix + seq10(1)}, lock_kind::exclusive) == probe_result::busy);
  CHECK(acquire_fsm::probe({reader_prefix + seq10(1)}, lock_kind::read) == probe_result::looks_free);
  CHECK(acquire_fsm::probe({writer_prefix + seq10(1)}, lock_kind::read) == probe_result::busy);
  // its downgrade mark listed: check it first
  CHECK(acquire_fsm::probe({writer_prefix + seq10(1), downgrade_mark_name(writer_prefix + seq10(1))}, lock_kind::read) ==
        probe_result::check_head_mark);
  CHECK(acquire_fsm::probe({writer_prefix + seq10(1), writer_prefix + seq10(2)}, lock_kind::read) == probe_result::busy);
  CHECK(acquire_fsm::probe({reader_prefix + seq10(1)}, lock_kind::write) == probe_result::busy);
  // leases: busy once max_leases are there
  std::vector<std::string> two{lease_prefix + seq10(1), lease_prefix + seq10(2)};
  CHECK(acquire_fsm::probe(two, lock_kind::lease, 3) == probe_result::looks_free);
  CHECK(acquire_fsm::probe(two, lock_kind::lease, 2) == probe_result::busy);
  CHECK(acquire_fsm::probe({"config", "other"}, lock_kind::lease, 1) == probe_result::looks_free);
}

TEST_CASE("a try after its caller's probe writes at once: one round trip free, lock_busy and no node when taken meanwhile",
          "[unit][lock][semaphore]") {
  sim s(lock_mode::try_after_probe);
  auto a = s.fsm.start();
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::create_and_list);  // no second look
  s.apply(a);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.lists == 1);

  sim t(lock_mode::try_after_probe);
  t.add_foreign();  // came between the caller's look and our create
  t.apply(t.fsm.start());
  t.drain();
  REQUIRE(t.completed);
  CHECK(t.fsm.result().ec == errc::lock_busy);
  CHECK(t.ours() == 0);
  CHECK(t.blocker_watches().empty());
}

// ---------------------------------------------------------------------------------------------
// A cleanup delete the server refuses is never counted as done

namespace {
// A try-acquire that found the lock taken after its create: its cleanup delete is on its way.
void busy_after_create(sim& s) {
  s.apply(s.fsm.start());
  s.add_foreign();  // between the try-lock's look and its create
  s.step();         // the look: free -> create and list
  s.step();
  s.step();         // listing: busy -> delete requested
  REQUIRE(s.replies.size() == 2);  // our node's watch, the delete
  s.replies.clear();  // the server's answer is the test's: until it applies one, our node is there
  s.children[std::string(node_name(s.fsm.node_prefix())) + "0000000001"] = 1;
}
}  // namespace

TEST_CASE("a cleanup delete the server throttles is sent again after a growing delay, then completes",
          "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  busy_after_create(s);
  s.apply(s.fsm.on_deleted(zk_errc::throttled_op));
  CHECK_FALSE(s.completed);  // the node is still there: not done
  REQUIRE(s.delete_backoffs == 1);
  s.backoff_delete_due();  // the delete again
  REQUIRE(s.replies.size() == 1);
  s.replies.clear();
  s.apply(s.fsm.on_deleted(zk_errc::system_error));  // the C client failed it locally: again
  CHECK(s.delete_backoffs == 2);
  s.backoff_delete_due();
  s.drain();  // applied this time
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.ours() == 0);
  CHECK(s.cleanup_failures == 0);
}

TEST_CASE("a cleanup delete refused by the ACL (no_auth) is reported, never forgotten silently", "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  busy_after_create(s);
  s.apply(s.fsm.on_deleted(zk_errc::no_auth));
  CHECK(s.delete_backoffs == 0);  // refused for good: no retry
  CHECK(s.cleanup_failures == 1);
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.ours() == 1);  // the node stays (until the session ends), and that was said
}

TEST_CASE("a cleanup delete throttled until the retries run out is reported", "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  busy_after_create(s);
  for (int i = 0; i <= acquire_fsm::max_delete_backoffs && !s.completed; ++i) {
    s.apply(s.fsm.on_deleted(zk_errc::throttled_op));
    s.backoff_delete_due();
    s.replies.clear();
  }
  CHECK(s.delete_backoffs == acquire_fsm::max_delete_backoffs);
  CHECK(s.cleanup_failures == 1);
  REQUIRE(s.completed);
}

// ---------------------------------------------------------------------------------------------
// What the grant depends on is watched: our own node from its create on, and every blocker of
// the latest listing up to K.

namespace {
std::string our_node(const sim& s) { return s.our_path(); }
// Queues us second behind a head, our contact stale (a grant refreshes it first); the head's name.
std::string queue_second_stale(sim& s) {
  s.contact_stale = [] { return true; };
  auto head = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  return head;
}
}  // namespace

TEST_CASE("our node is watched from the create's reply on, behind the pipelined listing", "[unit][lock][own_node]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  REQUIRE(s.step());  // the create's reply
  REQUIRE(s.replies.size() == 2);  // the listing, then our node's watch (sent now)
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::setting);
  CHECK(s.watches.count(our_node(s)) == 1);
  s.drain();
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::set);
  CHECK_FALSE(s.completed);
}

TEST_CASE("a waiter whose node is deleted by someone else queues again, behind the waiter that was behind it",
          "[unit][lock][own_node]") {
  sim s;
  auto head = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  auto old = our_node(s);
  auto behind = s.add_foreign();  // queued behind us
  REQUIRE(s.delete_ours());
  s.drain();
  CHECK(s.requeues == 1);
  CHECK(s.ours() == 1);
  CHECK(our_node(s) != old);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, head), join_path(s.dir, behind)});
  s.delete_foreign(head);  // the head's release is the turn of the one now ahead of us, not ours
  s.drain();
  CHECK_FALSE(s.completed);
  int lists = s.lists;
  s.delete_foreign(behind);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.fsm.result().node == our_node(s));
  CHECK(s.lists == lists);  // the last watched blocker's deletion: granted with no listing
}

TEST_CASE("our node's deletion heard while a listing is on its way: that listing is not taken as showing our node",
          "[unit][lock][own_node]") {
  sim s;
  auto head = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  auto old = our_node(s);
  s.change_data(head, "__REVOKE__");  // a listing goes out (the data change proves nothing)
  REQUIRE(s.step());
  REQUIRE(s.fsm.own_node_watch() == acquire_fsm::own_watch::set);
  // our node's deletion arrives before that listing's reply (here: the listing still shows it)
  s.children.erase(std::string(node_name(old)));
  s.watches.erase(old);
  auto a = s.fsm.on_watch_event(old, watch_change::deleted);
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::requeued);
  s.apply(a);
  s.drain();  // the listing, then a new node
  CHECK(s.ours() == 1);
  CHECK(our_node(s) != old);
  s.delete_foreign(head);
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().node == our_node(s));
}

TEST_CASE("the stale-contact exists before a grant that finds no node does not grant: we queue again",
          "[unit][lock][own_node][grant]") {
  sim s;
  auto head = queue_second_stale(s);
  auto old = our_node(s);
  // our node gone with no event for it (its watch lost; as when the grant refreshes right after)
  s.children.erase(std::string(node_name(old)));
  s.watches.erase(old);
  s.delete_foreign(head);
  s.drain();
  CHECK(s.refreshes == 1);
  CHECK(s.requeues == 1);
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.fsm.result().node != old);
  CHECK(s.fsm.result().node == our_node(s));
}

TEST_CASE("our node's deletion while the grant waits for its refresh: no grant, we queue again",
          "[unit][lock][own_node][grant]") {
  sim s;
  auto head = queue_second_stale(s);
  auto old = our_node(s);
  s.delete_foreign(head);
  REQUIRE(s.step());  // the head's deletion: the grant refreshes the contact first
  REQUIRE(s.refreshes == 1);
  REQUIRE(s.delete_ours());  // its event comes before the refresh's reply
  s.drain();
  CHECK(s.requeues == 1);
  REQUIRE(s.completed);
  CHECK(s.fsm.result().node != old);
  CHECK(s.ours() == 1);
}

TEST_CASE("a write to our node while we wait is no news: watched again, no listing", "[unit][lock][own_node]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  int lists = s.lists, requests = s.requests;
  s.change_data(std::string(node_name(our_node(s))), "__REVOKE__");
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.lists == lists);
  CHECK(s.requests == requests + 1);  // our node's watch set again
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::set);
}

TEST_CASE("a failed acquire's delete fires our node's watch: nothing is left watched", "[unit][lock][own_node][cancel]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
  CHECK(s.watches.empty());
  CHECK(s.ours() == 0);
}

TEST_CASE("K blockers watched: the last one's deletion is the grant, with no listing, whatever order they go in",
          "[unit][lock][handoff]") {
  sim s(lock_mode::wait, 3);  // K = 3: all three watched
  auto n0 = s.add_foreign(), n1 = s.add_foreign(), n2 = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  CHECK(s.blocker_watches() ==
        std::set<std::string>{join_path(s.dir, n0), join_path(s.dir, n1), join_path(s.dir, n2)});
  CHECK(s.fsm.watching_last_blocker());
  int lists = s.lists, requests = s.requests;
  s.delete_foreign(n1);  // a waiter gave up
  s.drain();
  s.delete_foreign(n0);  // the holder released
  s.drain();
  CHECK_FALSE(s.completed);
  s.delete_foreign(n2);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.lists == lists);
  CHECK(s.requests == requests);  // nothing sent on the way to the grant
}

TEST_CASE("a queue deeper than K: the window moves up when a watched blocker goes, while the others still stand",
          "[unit][lock][handoff]") {
  sim s(lock_mode::wait, 2);
  auto n0 = s.add_foreign(), n1 = s.add_foreign(), n2 = s.add_foreign(), n3 = s.add_foreign();
  s.apply(s.fsm.start());
  s.drain();
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, n2), join_path(s.dir, n3)});
  CHECK_FALSE(s.fsm.watching_last_blocker());
  int lists = s.lists;
  s.delete_foreign(n0);  // not watched: no event
  s.delete_foreign(n1);
  s.drain();
  CHECK(s.lists == lists);
  s.delete_foreign(n2);  // served in order: n3 holds now; we list while it does
  s.drain();
  CHECK(s.lists == lists + 1);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, n3)});
  CHECK(s.fsm.watching_last_blocker());
  s.delete_foreign(n3);  // the handoff: one event, no listing
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.lists == lists + 1);
}

TEST_CASE("a reader watches the writers that block it, not the readers between", "[unit][lock][handoff][shared]") {
  sim s;
  s.fsm = acquire_fsm(s.dir, testing::our_id, lock_mode::wait, lock_kind::read);
  auto w1 = s.add_foreign(writer_prefix, shared_marker);
  s.add_foreign(reader_prefix, shared_marker);
  auto w2 = s.add_foreign(writer_prefix, shared_marker);
  s.add_foreign(reader_prefix, shared_marker);
  s.apply(s.fsm.start());
  s.drain();
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
  s.apply(s.fsm.start());
  s.drain();
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

// ---- lock-delay: a blocker that went with its session delays the grant, a release does not ----

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
  auto a = f.on_watch_set(delay_dir + "/" + named, zk_errc::no_node);
  CHECK(the(a, acquire_action::check_session).owner == holder_session);
  CHECK_FALSE(has(a, acquire_action::start_lock_delay));
  CHECK(has(f.on_session_checked(holder_session, {}, holder_session), acquire_action::check_grant));
}
