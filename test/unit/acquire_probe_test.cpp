// The try-acquire's look (acquire_fsm::probe, also the semaphore's): what it decides, and the
// try that follows a caller's probe.
#include "acquire_test.hpp"

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
  t.run();
  REQUIRE(t.completed);
  CHECK(t.fsm.result().ec == errc::lock_busy);
  CHECK(t.ours() == 0);
  CHECK(t.blocker_watches().empty());
}
