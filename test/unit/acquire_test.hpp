// What the acquire_fsm tests (acquire_*_test.cpp) share: the simulated lock dir the machine runs
// against (sim/lock_dir_sim.hpp), Catch2, and the names they use.
#pragma once

#include "sim/lock_dir_sim.hpp"
#include "sansio/acquire_fsm.hpp"
#include <zklock/path.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <string>

using namespace zklock;
using namespace zklock::detail;
using zklock::testing::sim;
using zklock::testing::reader_prefix;
using zklock::testing::writer_prefix;

/// `blocker` goes (deleted: released, or given up) and the acquire, answered to the end, is granted.
inline void check_granted_when_gone(sim& s, const std::string& blocker) {
  s.delete_foreign(blocker);
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
}

/// The acquire waits: its predecessor is `blocker`, which is (`last`) or is not its last blocker.
inline void check_waiting_on(const sim& s, const std::string& blocker, bool last) {
  REQUIRE_FALSE(s.completed);
  CHECK(s.fsm.predecessor() == join_path(s.dir, blocker));
  CHECK(s.fsm.watching_last_blocker() == last);
}
