// The count of the watches a run left, from four-letter words answered by a ZooKeeper 3.8 server
// (captured from one: a kazoo session A with a child watch on the lock dir, getChildren, and a
// session B with a data watch on a node below it, exists). wchp, wchc and wchs list data watches
// only; mntr's zk_watch_count counts both kinds. No server.
#include "watches.hpp"

#include <catch2/catch.hpp>

using namespace zklock::fault;

namespace {

const std::string dir = "/fault/mutex-1-0";

// No session, no watch: the harness's own four-letter connection only.
member_watch_answers idle() {
  return {"",
          "0 connections watching 0 paths\nTotal watches:0\n",
          "zk_version\t3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nzk_server_state\tstandalone\n"
          "zk_num_alive_connections\t1\nzk_watch_count\t0\n",
          " /127.0.0.1:48468[0](queued=0,recved=1,sent=0)\n\n"};
}

// A's child watch on the dir and B's data watch on dir/n.
member_watch_answers both_kinds() {
  return {"/fault/mutex-1-0/n\n\t0x100047fee390001\n\n",
          "1 connections watching 1 paths\nTotal watches:1\n",
          "zk_version\t3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nzk_server_state\tstandalone\n"
          "zk_num_alive_connections\t3\nzk_watch_count\t2\n",
          " /127.0.0.1:48428[1](queued=0,recved=9,sent=9,sid=0x100047fee390000,lop=GETC,est=1795707810733,to=10000,"
          "lcxid=0x8,lzxid=0x5,lresp=75493969,llat=2,minlat=0,avglat=13,maxlat=54)\n"
          " /127.0.0.1:48468[0](queued=0,recved=1,sent=0)\n"
          " /127.0.0.1:48436[1](queued=0,recved=2,sent=2,sid=0x100047fee390001,lop=EXIS,est=1795707810812,to=10000,"
          "lcxid=0x1,lzxid=0x5,lresp=75493971,llat=1,minlat=0,avglat=2,maxlat=3)\n\n"};
}

}  // namespace

TEST_CASE("watches left: none on an idle member", "[unit][fault]") {
  std::vector<watches_note> notes;
  CHECK(watches_left(idle(), idle(), 0, dir, &notes) == 0);
  CHECK(notes.empty());
}

TEST_CASE("watches left: a child watch, which wchp does not list, is counted", "[unit][fault]") {
  std::vector<watches_note> notes;
  CHECK(watches_left(idle(), both_kinds(), 1, dir, &notes) == 2);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].count == 1);
  CHECK(notes[1].count == 1);
  CHECK(notes[0].what == "server 1: data watch on /fault/mutex-1-0/n by 0x100047fee390001");
  CHECK(notes[1].what ==
        "server 1: 1 child watch (mntr's zk_watch_count 2 - wchs's 1 data watch, 0 child watches before the run)"
        " by one of the sessions there: 0x100047fee390000 0x100047fee390001");
}

TEST_CASE("watches left: data watches elsewhere and child watches from before the run are not the run's",
          "[unit][fault]") {
  // a peer's data watch on /zookeeper/config (Curator's ensemble tracker), and one child watch
  // that some session held before the run's clients started
  member_watch_answers before = idle();
  before.mntr = "zk_watch_count\t1\n";
  member_watch_answers now = idle();
  now.wchp = "/zookeeper/config\n\t0x100047fee390007\n\n";
  now.wchs = "1 connections watching 1 paths\nTotal watches:1\n";
  now.mntr = "zk_watch_count\t2\n";
  std::vector<watches_note> notes;
  CHECK(watches_left(before, now, 0, dir, &notes) == 0);
  CHECK(notes.empty());
  SECTION("a child watch more than before is the run's") {
    now.mntr = "zk_watch_count\t3\n";
    CHECK(watches_left(before, now, 0, dir, &notes) == 1);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].what ==
          "server 0: 1 child watch (mntr's zk_watch_count 3 - wchs's 1 data watch, 1 child watch before the run)"
          " by one of the sessions there: none");
  }
}

TEST_CASE("watches left: a member that does not say its counts is one left", "[unit][fault]") {
  member_watch_answers now = idle();
  now.mntr = "This ZooKeeper instance is not currently serving requests\n";
  CHECK(data_watches(now) == 0);
  CHECK(child_watches(now) == -1);
  CHECK(child_watches(both_kinds()) == 1);
  std::vector<watches_note> notes;
  CHECK(watches_left(idle(), now, 2, dir, &notes) == 1);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].what ==
        "server 2: no watch count (mntr: 'This ZooKeeper instance is not currently serving requests', wchs: "
        "'0 connections watching 0 paths')");
}
