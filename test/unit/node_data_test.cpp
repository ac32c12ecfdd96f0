// What zklock writes into its nodes' data (src/sansio/node_data.hpp): markers, then the
// identity; how data is read back; each recipe's creation marker.
#include "sansio/acquire_fsm.hpp"
#include "sansio/node_data.hpp"

#include <catch2/catch.hpp>

#include <string_view>

using namespace zklock;
using namespace zklock::detail;

TEST_CASE("node data: marker then identity, markers still read, foreign data is the identity", "[unit][lock]") {
  CHECK(make_node_data(contender_marker, "web-1:4242") == "zklock/3 web-1:4242");
  CHECK(make_node_data(contender_marker, "") == "zklock/3");  // no identity: as before
  CHECK(make_node_data(downgraded_marker, "a b\nc") == "zklock/2:downgraded a b\nc");
  auto p = parse_node_data("zklock/3 web-1:4242");
  CHECK(p.marker == contender_marker);
  CHECK(p.identity == "web-1:4242");
  p = parse_node_data("zklock/2:rw worker 7 of 9");
  CHECK(p.marker == shared_marker);
  CHECK(p.identity == "worker 7 of 9");
  p = parse_node_data("zklock/2:rw");
  CHECK(p.marker == shared_marker);
  CHECK(p.identity.empty());
  for (std::string_view foreign : {"127.0.0.1", "", "__REVOKE__", "zklock/3x", "zklock/2:rwx y", "kazoo worker"}) {
    p = parse_node_data(foreign);
    CHECK(p.marker.empty());
    CHECK(p.identity == foreign);
  }
  // every marker-based rule, with and without an identity
  for (std::string_view id : {"", "web-1:4242", "zklock/2:downgraded"}) {
    CHECK(classify_predecessor(make_node_data(contender_marker, id)) == predecessor_data::zklock_contender);
    CHECK(classify_predecessor(make_node_data(contender_marker_v2, id)) == predecessor_data::zklock_contender);
    CHECK(classify_predecessor(make_node_data(downgraded_marker, id)) == predecessor_data::downgraded);
    CHECK(classify_predecessor(make_node_data(shared_marker, id)) == predecessor_data::other);
  }
  CHECK(classify_predecessor("__REVOKE__") == predecessor_data::other);
  CHECK(classify_predecessor("zklock/2:downgradedx") == predecessor_data::other);
  // What an older zklock compared: the whole data. An identity makes a node foreign to it
  // (never one it would trust), which is why the data change rules hold for it.
  CHECK(make_node_data(contender_marker, "h:1") != contender_marker);
  CHECK(make_node_data(contender_marker, "h:1") != contender_marker_v2);
}

TEST_CASE("the data a lock dir creates nodes with uses the lock state machine's marker", "[unit][lock]") {
  for (auto k : {lock_kind::exclusive, lock_kind::read, lock_kind::write, lock_kind::lease, lock_kind::candidate})
    CHECK(creation_marker(k) == acquire_fsm("/d", "x", lock_mode::wait, k).node_data());
}
