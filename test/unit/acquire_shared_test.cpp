// acquire_fsm's grant rule of the shared lock, against the simulated lock dir (sim/lock_dir_sim.hpp):
// readers share, a writer waits for all before it, a downgraded writer lets zklock readers in.
#include "acquire_test.hpp"

TEST_CASE("shared lock: readers share, a writer waits for them, FIFO keeps later readers behind it", "[unit][lock][shared]") {
  // reader, reader, (writer: us) -> we watch the second reader; the first reader's release
  // does not wake us; the second's does not either until we relist and see no one ahead
  {
    sim s(lock_kind::write, lock_mode::wait, 1, 1);
    auto r1 = s.add_foreign(reader_prefix);
    auto r2 = s.add_foreign(reader_prefix);
    s.run();
    check_waiting_on(s, r2, false);
    // zklock readers are created with shared_marker: their release is no grant (r1 still reads)
    CHECK(classify_predecessor(shared_marker) == predecessor_data::other);
    s.release_zklock(r2);
    s.drain();
    check_waiting_on(s, r1, true);
    check_granted_when_gone(s, r1);
  }
  // writer, reader, (reader: us) -> we watch the writer, not the reader between us
  {
    sim s(lock_kind::read, lock_mode::wait);
    auto w = s.add_foreign(writer_prefix);
    s.add_foreign(reader_prefix);
    s.run();
    check_waiting_on(s, w, true);
    check_granted_when_gone(s, w);
    CHECK(s.ours() == 1);
  }
  // reader held, writer waiting, (reader: us): we wait for the writer (no starvation)
  {
    sim s(lock_mode::try_once);
    s.fsm = acquire_fsm(s.dir, "11111111-2222-3333-4444-555555555555", lock_mode::try_once, lock_kind::read);
    s.add_foreign(reader_prefix);
    s.add_foreign(writer_prefix);
    s.run();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);  // decided on the look: no write
  }
  // a try-read beside readers only: granted
  {
    sim s(lock_kind::read, lock_mode::try_once);
    s.add_foreign(reader_prefix);
    s.add_foreign(reader_prefix);
    s.run();
    REQUIRE(s.completed);
    CHECK_FALSE(s.fsm.result().ec);
  }
}

TEST_CASE("shared lock: a writer that downgrades lets zklock readers in, never a writer", "[unit][lock][shared]") {
  // (writer W holding), (reader: us). W creates its downgrade mark and writes downgraded_marker
  // in one transaction: its watch fires (data changed), we list, see the mark, watch W again and
  // check the mark (its owner is W's session): downgraded. We remove our watch and list again:
  // granted.
  sim s(lock_kind::read, lock_mode::wait);
  auto w = s.add_foreign(writer_prefix, shared_marker);
  s.run();
  REQUIRE_FALSE(s.completed);
  REQUIRE(s.downgrade_head());
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.blocker_watches().empty());  // the downgraded writer's watch was removed
  CHECK(s.children.count(w) == 1);

  // A writer behind the same downgraded node keeps waiting for it.
  sim t(lock_kind::write, lock_mode::wait);
  auto w2 = t.add_foreign(writer_prefix, shared_marker);
  t.run();
  REQUIRE(t.downgrade_head());
  t.drain();
  CHECK_FALSE(t.completed);
  CHECK(t.fsm.predecessor() == join_path(t.dir, w2));
  CHECK(t.blocker_watches() == std::set<std::string>{join_path(t.dir, w2)});
  check_granted_when_gone(t, w2);
}

TEST_CASE("shared lock: a downgrade marker written by another session grants no reader", "[unit][lock][shared][foreign]") {
  // (writer W holding), (reader: us). Another session writes downgraded_marker into W's node:
  // we list again, no mark is listed, W still blocks us: no request more, no grant.
  sim s(lock_kind::read, lock_mode::wait);
  auto w = s.add_foreign(writer_prefix, shared_marker);
  s.run();
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
  check_granted_when_gone(s, w);
}

TEST_CASE("shared lock: a revocation written over a downgraded writer's data leaves it a reader",
          "[unit][lock][shared][foreign]") {
  // W downgraded (its mark is there), then a Revoker writes "__REVOKE__" over its data: a new
  // reader, blocking or trying, checks the mark, not the data, and joins W.
  for (auto mode : {lock_mode::wait, lock_mode::try_once}) {
    CAPTURE(static_cast<int>(mode));
    sim s(lock_kind::read, mode);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.change_data(w, "__REVOKE__");
    s.run();
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
    sim s(lock_kind::read, lock_mode::try_once);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.forge_mark(w);
    s.change_data(w, downgraded_marker);
    s.run();
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
    sim s(lock_kind::read, lock_mode::wait);
    s.add_foreign(reader_prefix, shared_marker);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.forge_mark(w);
    s.change_data(w, downgraded_marker);
    s.run();
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
    sim s(lock_kind::read, lock_mode::wait);
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
  // run to its end: busy, decided on the listing alone (one request)
  auto busy_on_the_listing = [](sim& s) {
    s.run();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
    CHECK(s.requests == 1);
  };
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
    busy_on_the_listing(s);
    CHECK(s.next_seq == 1);
    CHECK(s.ours() == 0);
  }
  SECTION("a foreign write on the head writer is no downgrade: busy") {
    sim s;
    try_read(s);
    auto w = s.add_foreign(writer_prefix, shared_marker);
    s.change_data(w, "__REVOKE__");
    s.run();
    REQUIRE(s.completed);
    CHECK(s.fsm.result().ec == errc::lock_busy);
  }
  SECTION("a writer behind a downgraded one waits, so it blocks: busy on the listing alone") {
    sim s;
    try_read(s);
    s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    s.add_foreign(writer_prefix, shared_marker);
    busy_on_the_listing(s);
  }
  SECTION("a writer that is not the head waits (a reader holds ahead of it): busy on the listing alone") {
    sim s;
    try_read(s);
    s.add_foreign(reader_prefix, shared_marker);
    s.add_foreign(writer_prefix, shared_marker);
    busy_on_the_listing(s);
  }
  SECTION("a try-write behind a downgraded writer: busy on the listing alone") {
    sim s(lock_kind::write, lock_mode::try_once);
    s.add_foreign(writer_prefix, shared_marker);
    REQUIRE(s.downgrade_head());
    busy_on_the_listing(s);
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
      sim s(kind, lock_mode::wait);
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
