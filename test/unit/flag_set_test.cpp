// flag_set: the set acquire_fsm keeps its requests in flight in (src/sansio/flag_set.hpp).
#include "sansio/flag_set.hpp"

#include <catch2/catch.hpp>

using zklock::detail::flag_set;

namespace {
enum class req { create, list, watch, last = 31 };  // 31: the highest value a flag_set holds
}

TEST_CASE("flag_set: insert, contains, take, erase, clear, one bit per value", "[unit][flag_set]") {
  flag_set<req> s;
  CHECK(s.empty());
  CHECK_FALSE(s.contains(req::create));

  s.insert(req::create);
  s.insert(req::last);
  CHECK_FALSE(s.empty());
  CHECK(s.contains(req::create));
  CHECK(s.contains(req::last));
  CHECK_FALSE(s.contains(req::list));
  s.insert(req::create);  // a set: inserting twice is inserting once
  CHECK(s == flag_set<req>{req::create, req::last});

  CHECK(s.take(req::create));        // it was there, and is gone
  CHECK_FALSE(s.contains(req::create));
  CHECK_FALSE(s.take(req::create));  // a stale reply finds nothing
  CHECK(s.contains(req::last));       // the others stay

  s.erase(req::list);  // erasing what is not there changes nothing
  CHECK(s == flag_set<req>{req::last});
  s.erase(req::last);
  CHECK(s.empty());

  s = {req::list, req::watch};
  s.clear();
  CHECK(s.empty());
  CHECK(s == flag_set<req>{});
}

TEST_CASE("flag_set: contains_any is true when the sets share a value", "[unit][flag_set]") {
  constexpr flag_set<req> waits_for{req::create, req::watch};
  flag_set<req> s{req::list};
  CHECK_FALSE(s.contains_any(waits_for));
  CHECK_FALSE(s.contains_any({}));
  s.insert(req::watch);
  CHECK(s.contains_any(waits_for));
  s.take(req::watch);
  CHECK_FALSE(s.contains_any(waits_for));
  CHECK(flag_set<req>{req::last}.contains_any({req::last, req::create}));
  // usable in constant expressions (acquire_fsm's cleanup_waits_for is one)
  static_assert(waits_for.contains(req::create) && !waits_for.contains(req::list));
}
