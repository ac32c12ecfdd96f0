// Contenders' node names (src/sansio/node_name.hpp): which children of a lock dir are
// contenders, of which kind, at which sequence; Curator's, kazoo's and zklock's names.
#include "sansio/grant_rule.hpp"
#include "sansio/node_name.hpp"

#include <catch2/catch.hpp>

using namespace zklock;
using namespace zklock::detail;

TEST_CASE("lock_sequence recognises Curator, zklock and kazoo names only", "[unit][lock]") {
  CHECK(lock_sequence("_c_8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c-lock-0000000042") == 42);
  CHECK(lock_sequence("lock-0000000007") == 7);
  CHECK(lock_sequence("5f2b0c7e9d__lock__0000000003") == 3);
  CHECK(lock_sequence("x-lock--0000000003") == -3);
  CHECK(parse_contender("5f2b0c7e9d__rlock__0000000003")->kind == lock_kind::read);  // kazoo ReadLock
  CHECK(parse_contender("_c_x-__READ__0000000004")->kind == lock_kind::read);         // Curator read lock
  CHECK(parse_contender("_c_x-__WRIT__0000000005")->kind == lock_kind::write);        // Curator write lock
  CHECK(parse_contender("5f2b0c7e9d__lock__0000000003")->kind == lock_kind::exclusive);
  CHECK_FALSE(lock_sequence("x__READ_0000000003"));
  CHECK_FALSE(lock_sequence("leader-0000000001"));
  CHECK_FALSE(lock_sequence("lock-000000001"));
  CHECK_FALSE(lock_sequence("config"));
  auto q = queue_order({"b__lock__0000000005", "config", "_c_x-lock-0000000002", "lock-0000000009"});
  REQUIRE(q.size() == 3);
  CHECK(q[0].sequence == 2);
  CHECK(q[1].sequence == 5);
  CHECK(q[2].sequence == 9);
}

TEST_CASE("candidates: '-latch-' nodes parse as candidates (Curator's LeaderLatch), '-lease-' as leases", "[unit][lock][election]") {
  using K = lock_kind;
  CHECK(parse_contender("_c_8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c-latch-0000000003")->kind == K::candidate);
  CHECK(parse_contender("_c_8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c-latch-0000000003")->sequence == 3);
  CHECK(parse_contender("latch-0000000007")->kind == K::candidate);  // Curator without protection
  CHECK_FALSE(parse_contender("_c_x-latches-0000000003"));
  CHECK(parse_contender("_c_8c5e1b52-6d2b-4b8d-9d8c-3d0b3f0b1a2c-lease-0000000003")->kind == K::lease);
}
