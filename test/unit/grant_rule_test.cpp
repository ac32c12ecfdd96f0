// The grant rule (src/sansio/grant_rule.hpp) on queues written out: who blocks whom for the
// mutex, readers and writers, leases and election candidates.
#include "sansio/grant_rule.hpp"

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::detail;

namespace {
// A queue of nodes "n0", "n1", ... of these kinds, in this order.
std::vector<queued_node> q_of(std::initializer_list<lock_kind> kinds) {
  std::vector<queued_node> q;
  std::int64_t i = 0;
  for (auto k : kinds) q.push_back({"n" + std::to_string(i), i, k}), ++i;
  return q;
}
}  // namespace

TEST_CASE("grant rule: readers wait for the nearest writer ahead, writers for anyone ahead", "[unit][lock][shared]") {
  using K = lock_kind;
  auto q = q_of({K::read, K::read, K::write, K::read, K::read, K::write});
  CHECK_FALSE(find_blockers(q, 0, K::read));
  CHECK_FALSE(find_blockers(q, 1, K::read));  // readers hold together
  CHECK(find_blockers(q, 2, K::write)->nearest == 1);
  CHECK(find_blockers(q, 2, K::write)->count == 2);
  CHECK(find_blockers(q, 3, K::read)->nearest == 2);  // behind a writer: waits for it only
  CHECK(find_blockers(q, 3, K::read)->count == 1);
  CHECK(find_blockers(q, 4, K::read)->nearest == 2);  // not on reader 3: no herd, one wake-up
  CHECK(find_blockers(q, 5, K::write)->nearest == 4);
  auto q2 = q_of({K::write, K::read, K::exclusive, K::read});
  CHECK(find_blockers(q2, 3, K::read)->nearest == 2);  // kazoo's "__lock__" writers count as writers
  CHECK(find_blockers(q2, 3, K::read)->count == 2);
  CHECK_FALSE(find_blockers(q2, 0, K::exclusive));
  CHECK(find_blockers(q2, 1, K::exclusive)->nearest == 0);  // a mutex waits for anyone ahead
}

TEST_CASE("lease rule: granted while fewer than max_leases are ahead", "[unit][lock][semaphore]") {
  using K = lock_kind;
  auto q = q_of({K::lease, K::lease, K::lease});
  CHECK_FALSE(find_blockers(q, 0, K::lease, 2));
  CHECK_FALSE(find_blockers(q, 1, K::lease, 2));
  CHECK(find_blockers(q, 2, K::lease, 2));
  CHECK_FALSE(find_blockers(q, 2, K::lease, 3));
}

TEST_CASE("candidates: the head leads, each other waits for its predecessor", "[unit][lock][election]") {
  using K = lock_kind;
  auto q = q_of({K::candidate, K::candidate, K::candidate});
  CHECK_FALSE(find_blockers(q, 0, K::candidate));
  auto b = find_blockers(q, 2, K::candidate);
  REQUIRE(b);
  CHECK(b->nearest == 1);
}

