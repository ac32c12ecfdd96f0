// The view of many lock dirs (zklock/lock_view.hpp) without a server: contenders from a
// listing, their data, holders and waiters by the grant rule, a semaphore's pending lease, and
// the deadlocks across dirs.
#include <zklock/lock_view.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace zklock;

namespace {

// A read contender: its name from a listing, its owner and creation time from its stat.
contender node(const std::string& name, std::int64_t owner, std::string data = "zklock/3") {
  auto q = lock_contenders({name});
  REQUIRE(q.size() == 1);
  data_result d;
  d.data = std::move(data);
  d.stat.ephemeral_owner = owner;
  d.stat.ctime = 1000 + q[0].sequence;
  set_contender_data(q[0], std::move(d));
  return q[0];
}

std::vector<std::string> names(const std::vector<contender>& cs) {
  std::vector<std::string> r;
  for (const auto& c : cs) r.push_back(c.node);
  return r;
}

std::string seq(int n) {
  auto s = std::to_string(n);
  return std::string(10 - s.size(), '0') + s;
}

// A mutex at `path` whose nodes belong to `owners`, in queue order (the first holds).
lock_dir_view mutex_dir(const std::string& path, const std::vector<std::int64_t>& owners) {
  std::vector<contender> q;
  int n = 0;
  for (auto o : owners) q.push_back(node("_c_x-lock-" + seq(n++), o));
  return view_lock_dir(path, q);
}

}  // namespace

TEST_CASE("lock_view: a listing's contenders in queue order, other children left out", "[unit][lock_view]") {
  auto q = lock_contenders({"leases", "x__rlock__" + seq(3), "_c_1-lock-" + seq(2), "config",
                            "y__lock__" + seq(1), "_c_2-latch-" + seq(4), "lease-" + seq(5)});
  CHECK(names(q) == std::vector<std::string>{"y__lock__" + seq(1), "_c_1-lock-" + seq(2), "x__rlock__" + seq(3),
                                             "_c_2-latch-" + seq(4), "lease-" + seq(5)});
  CHECK(q[0].kind == lock_kind::exclusive);
  CHECK(q[2].kind == lock_kind::read);
  CHECK(q[3].kind == lock_kind::candidate);
  CHECK(q[4].kind == lock_kind::lease);
  CHECK(q[1].sequence == 2);
  CHECK(lock_contenders({"leases", "locks", "a"}).empty());
}

TEST_CASE("lock_view: a node's data gives its identity, a writer's own downgrade mark makes it a reader",
          "[unit][lock_view]") {
  CHECK(node("_c_1-lock-" + seq(1), 7, "zklock/3 web-1:4242").identity == "web-1:4242");
  CHECK(node("_c_1-lock-" + seq(1), 7, "zklock/3").identity.empty());
  CHECK(node("_c_1-lock-" + seq(1), 7, "10.0.0.1").identity == "10.0.0.1");  // Curator's address
  // the data alone (anyone can write it) proves nothing: still a writer, as the grant rule says
  auto downgraded = node("_c_1-__WRIT__" + seq(1), 7, "zklock/2:downgraded web-1:1");
  CHECK(downgraded.kind == lock_kind::write);
  CHECK(downgraded.identity == "web-1:1");
  CHECK(downgrade_mark_of(downgraded) == "zklock-downgraded-" + seq(1));
  CHECK(downgrade_mark_of(node("_c_1-__READ__" + seq(1), 7)).empty());
  CHECK(downgrade_mark_of(node("_c_1-lock-" + seq(1), 7)).empty());
  node_stat mark;
  mark.ephemeral_owner = 8;  // another session's mark
  set_downgrade_mark(downgraded, mark);
  CHECK(downgraded.kind == lock_kind::write);
  mark.ephemeral_owner = 7;  // the writer's own
  set_downgrade_mark(downgraded, mark);
  CHECK(downgraded.kind == lock_kind::read);
  auto exclusive = node("_c_1-lock-" + seq(1), 7);  // a mutex holder has no downgrade
  set_downgrade_mark(exclusive, mark);
  CHECK(exclusive.kind == lock_kind::exclusive);
  auto candidate = node("_c_1-latch-" + seq(1), 7, "zklock/3 leader-a");  // a participant id, whatever it says
  CHECK(candidate.identity == "zklock/3 leader-a");
  CHECK(candidate.stat.ephemeral_owner == 7);
}

TEST_CASE("lock_view: holders and waiters by the grant rule, the kind from the names", "[unit][lock_view]") {
  auto m = mutex_dir("/m", {1, 2, 3});
  CHECK(m.kind == lock_dir_kind::exclusive);
  CHECK(std::string(to_string(m.kind)) == "mutex");
  CHECK(names(m.holders) == std::vector<std::string>{"_c_x-lock-" + seq(0)});
  CHECK(names(m.waiters) == std::vector<std::string>{"_c_x-lock-" + seq(1), "_c_x-lock-" + seq(2)});

  // reads ahead of the first write hold together; a read behind the write waits
  auto rw = view_lock_dir("/rw", {node("_c_a-__READ__" + seq(1), 1), node("k__rlock__" + seq(2), 2),
                                  node("_c_b-__WRIT__" + seq(3), 3), node("_c_c-__READ__" + seq(4), 4)});
  CHECK(rw.kind == lock_dir_kind::read_write);
  CHECK(std::string(to_string(rw.kind)) == "read/write");
  CHECK(names(rw.holders) == std::vector<std::string>{"_c_a-__READ__" + seq(1), "k__rlock__" + seq(2)});
  CHECK(names(rw.waiters) == std::vector<std::string>{"_c_b-__WRIT__" + seq(3), "_c_c-__READ__" + seq(4)});
  // a write alone is still a read/write lock
  CHECK(view_lock_dir("/w", {node("_c_b-__WRIT__" + seq(3), 3)}).kind == lock_dir_kind::read_write);

  auto e = view_lock_dir("/e", {node("_c_a-latch-" + seq(1), 1, "a"), node("_c_b-latch-" + seq(2), 2, "b")});
  CHECK(e.kind == lock_dir_kind::leader_election);
  CHECK(names(e.holders) == std::vector<std::string>{"_c_a-latch-" + seq(1)});
  CHECK(e.holders[0].identity == "a");
  CHECK(e.waiters.size() == 1);
}

TEST_CASE("lock_view: a semaphore's newest lease waits while its session holds PATH/locks", "[unit][lock_view]") {
  std::vector<contender> leases{node("_c_a-lease-" + seq(1), 1), node("_c_b-lease-" + seq(2), 2),
                                node("_c_c-lease-" + seq(3), 3)};
  std::vector<contender> locks{node("_c_c-lock-" + seq(7), 3), node("_c_d-lock-" + seq(8), 4)};
  auto s = view_semaphore("/s", leases, locks);
  CHECK(s.kind == lock_dir_kind::semaphore);
  CHECK(std::string(to_string(s.kind)) == "semaphore");
  CHECK(names(s.holders) == std::vector<std::string>{"_c_a-lease-" + seq(1), "_c_b-lease-" + seq(2)});
  CHECK(names(s.waiters) == names(locks));
  // the PATH/locks holder has no lease node yet: every lease holds
  CHECK(view_semaphore("/s", {leases[0], leases[1]}, locks).holders.size() == 2);
  // nobody in PATH/locks: every lease holds, as when PATH/leases is seen alone
  CHECK(view_semaphore("/s", leases, {}).holders.size() == 3);
  auto alone = view_lock_dir("/s/leases", leases);
  CHECK(alone.kind == lock_dir_kind::semaphore);
  CHECK(alone.holders.size() == 3);
  CHECK(alone.waiters.empty());
}

TEST_CASE("lock_view: two sessions that each hold one lock and wait for the other", "[unit][lock_view]") {
  auto found = find_deadlocks({mutex_dir("/a", {0x20, 0x10}), mutex_dir("/b", {0x10, 0x20}), mutex_dir("/c", {0x30, 0x40})});
  REQUIRE(found.size() == 1);
  const auto& cycle = found[0].cycle;
  REQUIRE(cycle.size() == 2);
  CHECK(cycle[0].session == 0x10);  // the smallest session first
  CHECK(cycle[0].path == "/a");
  CHECK(cycle[0].node == "_c_x-lock-" + seq(1));
  CHECK(cycle[0].blocker == 0x20);
  CHECK(cycle[0].blocker_holds);
  CHECK(cycle[1].session == 0x20);
  CHECK(cycle[1].path == "/b");
  CHECK(cycle[1].blocker == 0x10);
}

TEST_CASE("lock_view: no deadlock without a cycle of sessions", "[unit][lock_view]") {
  // a chain: 1 waits for 2 in /a, 2 for 3 in /b, 3 waits nowhere
  CHECK(find_deadlocks({mutex_dir("/a", {2, 1}), mutex_dir("/b", {3, 2})}).empty());
  // one session holding and waiting in two dirs behind itself: tasks sharing a session
  CHECK(find_deadlocks({mutex_dir("/a", {1, 1}), mutex_dir("/b", {1, 1})}).empty());
  // readers do not wait for readers
  auto r1 = view_lock_dir("/r1", {node("_c_a-__READ__" + seq(1), 1), node("_c_b-__READ__" + seq(2), 2)});
  auto r2 = view_lock_dir("/r2", {node("_c_b-__READ__" + seq(1), 2), node("_c_a-__READ__" + seq(2), 1)});
  CHECK(find_deadlocks({r1, r2}).empty());
  // persistent nodes (no owner) are nobody's
  CHECK(find_deadlocks({mutex_dir("/a", {0, 1}), mutex_dir("/b", {1, 0})}).empty());
}

TEST_CASE("lock_view: a cycle through three dirs, a waiter behind it, a blocker queued ahead", "[unit][lock_view]") {
  // 1 waits for 2 in /a, 2 for 3 in /b, 3 for 1 in /c
  auto found = find_deadlocks({mutex_dir("/a", {2, 1}), mutex_dir("/b", {3, 2}), mutex_dir("/c", {1, 3}),
                               mutex_dir("/d", {1, 5})});  // 5 only waits behind the cycle
  REQUIRE(found.size() == 1);
  REQUIRE(found[0].cycle.size() == 3);
  CHECK(found[0].cycle[0].session == 1);
  CHECK(found[0].cycle[1].session == 2);
  CHECK(found[0].cycle[2].session == 3);
  CHECK(found[0].cycle[2].path == "/c");
  // in /x, 2 waits behind 3, which is queued (not holding) behind 4; 3 waits for 2 in /y.
  // 4 will release /x, then 3 takes it and still waits for 2
  auto queued = find_deadlocks({mutex_dir("/x", {4, 3, 2}), mutex_dir("/y", {2, 3})});
  REQUIRE(queued.size() == 1);
  REQUIRE(queued[0].cycle.size() == 2);
  CHECK(queued[0].cycle[0].session == 2);
  CHECK(queued[0].cycle[0].path == "/x");
  CHECK(queued[0].cycle[0].blocker == 3);
  CHECK_FALSE(queued[0].cycle[0].blocker_holds);
  CHECK(queued[0].cycle[1].session == 3);
  CHECK(queued[0].cycle[1].path == "/y");
  CHECK(queued[0].cycle[1].blocker_holds);
  // two separate deadlocks
  CHECK(find_deadlocks({mutex_dir("/a", {1, 2}), mutex_dir("/b", {2, 1}), mutex_dir("/c", {3, 4}),
                        mutex_dir("/d", {4, 3})})
            .size() == 2);
}

TEST_CASE("lock_view: a semaphore waiter is stuck only when every lease holder is", "[unit][lock_view]") {
  // leases held by 1 and 2; 3 waits for a lease (in PATH/locks) and holds /m, which 1 waits for
  std::vector<contender> leases{node("_c_a-lease-" + seq(1), 1), node("_c_b-lease-" + seq(2), 2)};
  auto sem = view_semaphore("/s", leases, {node("_c_c-lock-" + seq(1), 3)});
  REQUIRE(sem.waiters.size() == 1);
  CHECK(find_deadlocks({sem, mutex_dir("/m", {3, 1})}).empty());  // 2 can release its lease
  // 2 also waits for /m: nobody can release a lease
  auto found = find_deadlocks({sem, mutex_dir("/m", {3, 1, 2})});
  REQUIRE(found.size() == 1);
  CHECK(found[0].cycle.size() == 2);
  CHECK(found[0].cycle[0].session == 1);
  CHECK(found[0].cycle[0].path == "/m");
  CHECK(found[0].cycle[1].session == 3);
  CHECK(found[0].cycle[1].path == "/s");
}

TEST_CASE("lock_view: a parent's hold and its child's wait close a cycle across process trees", "[unit][lock_view]") {
  // exec A (session 1) holds /a and runs a zklock (session 11, parent 1) that waits for /b;
  // exec B (session 2) holds /b and runs one (session 12, parent 2) that waits for /a.
  auto child = node("_c_y-lock-" + seq(1), 11, "zklock/3 h:1/2 parent=0x1");
  CHECK(child.identity == "h:1/2");
  CHECK(child.parent == 1);
  std::vector<contender> a{node("_c_x-lock-" + seq(0), 1), node("_c_y-lock-" + seq(1), 12, "zklock/3 h:5 parent=0x2")};
  std::vector<contender> b{node("_c_x-lock-" + seq(0), 2), child};
  auto found = find_deadlocks({view_lock_dir("/a", a), view_lock_dir("/b", b)});
  REQUIRE(found.size() == 1);
  const auto& cycle = found[0].cycle;
  REQUIRE(cycle.size() == 4);
  CHECK(cycle[0].session == 1);
  CHECK(cycle[0].blocker == 11);
  CHECK(cycle[0].child);
  CHECK(cycle[0].path == "/b");  // where the child waits
  CHECK(cycle[1].session == 11);
  CHECK(cycle[1].blocker == 2);
  CHECK_FALSE(cycle[1].child);
  CHECK(cycle[2].session == 2);
  CHECK(cycle[2].blocker == 12);
  CHECK(cycle[2].child);
  CHECK(cycle[3].session == 12);
  CHECK(cycle[3].blocker == 1);

  // without the parent links: no cycle (two sessions each waiting for a holder that waits nowhere)
  std::vector<contender> a2{node("_c_x-lock-" + seq(0), 1), node("_c_y-lock-" + seq(1), 12)};
  std::vector<contender> b2{node("_c_x-lock-" + seq(0), 2), node("_c_y-lock-" + seq(1), 11)};
  CHECK(find_deadlocks({view_lock_dir("/a", a2), view_lock_dir("/b", b2)}).empty());
  // a child that waits behind its own parent: the nested exec of the same lock
  std::vector<contender> same{node("_c_x-lock-" + seq(0), 1), node("_c_y-lock-" + seq(1), 11, "zklock/3 h:9 parent=0x1")};
  CHECK(find_deadlocks({view_lock_dir("/a", same)}).size() == 1);
  // a parent suffix in a foreign node's data, or one that is no session id, is part of the identity
  auto foreign = node("_c_y-lock-" + seq(1), 11, "worker parent=0x1");
  CHECK(foreign.identity == "worker parent=0x1");
  CHECK(foreign.parent == 0);
  auto odd = node("_c_y-lock-" + seq(1), 11, "zklock/3 h:9 parent=zz");
  CHECK(odd.identity == "h:9 parent=zz");
  CHECK(odd.parent == 0);
}

TEST_CASE("lock_view: election candidates other than the leader campaign, they wait in no cycle", "[unit][lock_view]") {
  // S1 leads /e and waits for /m; S2, a candidate in /e, holds /m: S2 does not wait for S1.
  std::vector<contender> e{node("_c_1-latch-" + seq(0), 1, "s1"), node("_c_2-latch-" + seq(1), 2, "s2")};
  std::vector<contender> m{node("_c_x-lock-" + seq(0), 2), node("_c_y-lock-" + seq(1), 1)};
  auto ev = view_lock_dir("/e", e);
  CHECK(ev.kind == lock_dir_kind::leader_election);
  CHECK(ev.waiters.size() == 1);
  CHECK(find_deadlocks({ev, view_lock_dir("/m", m)}).empty());
}
