// A cleanup delete that fails (lost with the connection, throttled, refused with no_auth) is
// sent again after the reconnect or a growing delay, or reported: never counted as done.
#include "acquire_test.hpp"

namespace {
// A try-acquire that found the lock taken after its create: its cleanup delete is on its way,
// its reply (and our node's watch's) the test's to give.
void delete_requested_after_busy(sim& s) {
  s.apply(s.fsm.start());
  s.add_foreign();  // between the try-lock's look and its create
  s.step();         // the look: free -> create and list
  s.step();
  s.step();         // listing: busy -> delete requested
  REQUIRE(s.replies.size() == 2);  // our node's watch, the delete
  s.replies.clear();  // (our node's watch's reply too: nothing waits for it)
}
// Also our node is there until the test applies an answer.
void busy_after_create(sim& s) {
  delete_requested_after_busy(s);
  s.children[std::string(node_name(s.fsm.node_prefix())) + "0000000001"] = 1;
}
}  // namespace

TEST_CASE("a failed delete during cleanup is retried after the reconnect", "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  delete_requested_after_busy(s);
  s.apply(s.fsm.on_deleted(zk_errc::connection_loss));
  CHECK_FALSE(s.completed);
  // the delete never reached the server
  s.children[std::string(node_name(s.fsm.node_prefix())) + "0000000001"] = 1;
  s.apply(s.fsm.on_reconnected());
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.ours() == 0);
}

TEST_CASE("a cleanup delete the server throttles is sent again after a growing delay, then completes",
          "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  busy_after_create(s);
  s.apply(s.fsm.on_deleted(zk_errc::throttled_op));
  CHECK_FALSE(s.completed);  // the node is still there: not done
  REQUIRE(s.delete_backoffs == 1);
  s.backoff_delete_due();  // the delete again
  REQUIRE(s.replies.size() == 1);
  s.replies.clear();
  s.apply(s.fsm.on_deleted(zk_errc::system_error));  // the C client failed it locally: again
  CHECK(s.delete_backoffs == 2);
  s.backoff_delete_due();
  s.drain();  // applied this time
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.ours() == 0);
  CHECK(s.cleanup_failures == 0);
}

TEST_CASE("a cleanup delete refused by the ACL (no_auth) is reported, never forgotten silently", "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  busy_after_create(s);
  s.apply(s.fsm.on_deleted(zk_errc::no_auth));
  CHECK(s.delete_backoffs == 0);  // refused for good: no retry
  CHECK(s.cleanup_failures == 1);
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_busy);
  CHECK(s.ours() == 1);  // the node stays (until the session ends), and that was said
}

TEST_CASE("a cleanup delete throttled until the retries run out is reported", "[unit][lock][fault][cancel]") {
  sim s(lock_mode::try_once);
  busy_after_create(s);
  for (int i = 0; i <= acquire_fsm::max_delete_backoffs && !s.completed; ++i) {
    s.apply(s.fsm.on_deleted(zk_errc::throttled_op));
    s.backoff_delete_due();
    s.replies.clear();
  }
  CHECK(s.delete_backoffs == acquire_fsm::max_delete_backoffs);
  CHECK(s.cleanup_failures == 1);
  REQUIRE(s.completed);
}
