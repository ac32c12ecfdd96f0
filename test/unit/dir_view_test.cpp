// A session's view of a lock dir (src/sansio/dir_view.hpp): what its listings showed less what it
// heard go, each waiter's nearest blockers in it, and listings merged once, newest only.
#include "sansio/dir_view.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

using zklock::lock_kind;
using zklock::detail::dir_view;

namespace {
std::string node(const char* marker, int seq) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "_c_ffffffff-0000-0000-0000-000000000000%s%010d", marker, seq);
  return buf;
}
std::string m(int seq) { return node("-lock-", seq); }
std::string r(int seq) { return node("-__READ__", seq); }
std::string w(int seq) { return node("-__WRIT__", seq); }
}  // namespace

TEST_CASE("dir view: a waiter's nearest K blockers still there, and whether more are", "[unit][view]") {
  dir_view v;
  std::vector<std::string> listing{m(4), m(1), m(0), m(3), m(2), "zklock-downgraded-0000000009", "not-a-contender"};
  REQUIRE(v.merge({7, 10}, listing));
  CHECK(v.size() == 5);
  auto b = v.nearest(m(4), lock_kind::exclusive, 2);
  CHECK(b.names == std::vector<std::string>{m(2), m(3)});  // queue order, the nearest last
  CHECK(b.more);
  CHECK(b.head == m(0));
  v.gone(m(3));  // heard go: the window moves past it
  b = v.nearest(m(4), lock_kind::exclusive, 2);
  CHECK(b.names == std::vector<std::string>{m(1), m(2)});
  CHECK(b.more);
  v.gone(m(0));
  v.gone(m(1));
  b = v.nearest(m(4), lock_kind::exclusive, 2);
  CHECK(b.names == std::vector<std::string>{m(2)});
  CHECK_FALSE(b.more);  // the last blocker: its deletion is the grant
  CHECK(v.nearest(m(2), lock_kind::exclusive, 2).names.empty());  // the head: nobody ahead
  // a node behind ours never blocks us, nor does our own
  CHECK(v.nearest(m(1), lock_kind::exclusive, 2).names.empty());
}

TEST_CASE("dir view: a reader's blockers are the writers ahead, less those proven downgraded", "[unit][view][shared]") {
  dir_view v;
  v.merge({7, 10}, {w(0), r(1), w(2), r(3), r(4), w(5), r(6)});
  auto b = v.nearest(r(6), lock_kind::read, 2);
  CHECK(b.names == std::vector<std::string>{w(2), w(5)});
  CHECK(b.more);
  b = v.nearest(r(6), lock_kind::read, 5);
  CHECK(b.names == std::vector<std::string>{w(0), w(2), w(5)});
  CHECK_FALSE(b.more);
  CHECK(v.nearest(r(4), lock_kind::read, 5, {w(0)}).names == std::vector<std::string>{w(2)});
  // a writer waits for everyone ahead
  CHECK(v.nearest(w(5), lock_kind::write, 2).names == std::vector<std::string>{r(3), r(4)});
}

TEST_CASE("dir view: a listing is merged once, and never over a newer one", "[unit][view]") {
  dir_view v;
  REQUIRE(v.merge({7, 10}, {m(0), m(1), m(2)}));
  v.gone(m(0));
  // the same listing again (another asker of one coalesced listing): the deletion heard since stays
  CHECK_FALSE(v.merge({7, 10}, {m(0), m(1), m(2)}));
  CHECK_FALSE(v.contains(m(0)));
  CHECK_FALSE(v.merge({7, 9}, {m(0), m(1), m(2)}));  // an older one
  CHECK(v.merges() == 1);
  // a newer one is the dir as it is: what it lacks went unheard
  REQUIRE(v.merge({7, 12}, {m(2), m(3)}));
  CHECK_FALSE(v.contains(m(1)));
  CHECK(v.nearest(m(3), lock_kind::exclusive, 2).names == std::vector<std::string>{m(2)});
  // the dir went (and was made again: a greater czxid): its nodes with it
  v.clear();
  CHECK(v.size() == 0);
  REQUIRE(v.merge({20, 21}, {m(0)}));
  CHECK(v.contains(m(0)));
}

TEST_CASE("dir view: a deep queue answers in O(log N + K), whoever asks", "[unit][view]") {
  constexpr int n = 20000;
  std::vector<std::string> listing;
  for (int i = 0; i < n; ++i) listing.push_back(m(i));
  dir_view v;
  v.merge({1, 1}, listing);
  // an in-order drain as one session hears it: each waiter's window, two at a time, with no listing
  for (int head = 0; head + 2 < n; ++head) {
    v.gone(m(head));
    auto b = v.nearest(m(head + 3), lock_kind::exclusive, 2);
    REQUIRE(b.names == std::vector<std::string>{m(head + 1), m(head + 2)});
    REQUIRE_FALSE(b.more);
  }
}

TEST_CASE("dir view: a listing trimmed for one waiter gives the grant rule's answer of the whole", "[unit][view]") {
  dir_view v;
  std::vector<std::string> listing;
  for (int i = 0; i < 50; ++i) listing.push_back(i % 3 == 0 ? w(i) : r(i));
  listing.push_back("zklock-downgraded-0000000000");  // the head writer's mark
  v.merge({1, 1}, listing);
  auto t = v.listing_for(r(40), lock_kind::read, 2);
  // the head and its mark, our nearest 2 + 1 writers, our node
  CHECK(t == std::vector<std::string>{w(33), w(36), w(39), w(0), "zklock-downgraded-0000000000", r(40)});
  CHECK(v.listing_for(w(0), lock_kind::write, 2) == std::vector<std::string>{"zklock-downgraded-0000000000", w(0)});
  v.gone(r(40));
  CHECK(v.listing_for(r(40), lock_kind::read, 2).back() != r(40));  // our node gone: not shown
  CHECK(v.listing_for(w(3), lock_kind::write, 2) == std::vector<std::string>{w(0), r(1), r(2), "zklock-downgraded-0000000000", w(3)});
}
