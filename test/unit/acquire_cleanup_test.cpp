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

// A stop that may answer at once (terminal or partial cancellation, the timeout) taken while
// connected, whose cleanup waits for a server that does not answer (a create in flight here).
namespace {
void stopped_with_create_unanswered(sim& s, error_code reason) {
  s.add_foreign();
  s.apply(s.fsm.start());  // the create and its listing: unanswered
  if (reason == errc::lock_timeout)
    s.apply(s.fsm.on_timeout(true));
  else
    s.apply(s.fsm.cancel(reason, stop_kind::at_once, true));
  CHECK(s.early_answers == 0);  // a server that answers cleans up in one round trip
  CHECK_FALSE(s.completed);
}
void check_cleaned_up_behind(sim& s, error_code reason) {
  if (!s.connected) s.reconnect();
  s.drain();
  REQUIRE(s.completed);  // the cleanup is done, after the answer
  CHECK(s.fsm.result().ec == reason);
  CHECK(s.ours() == 0);
  CHECK(s.blocker_watches().empty());
  CHECK(s.violation == "");
}
}  // namespace

TEST_CASE("an at_once stop whose connection drops under its cleanup is answered then, the cleanup behind",
          "[unit][lock][cancel][fault]") {
  sim s;
  stopped_with_create_unanswered(s, boost::asio::error::operation_aborted);
  s.drop_connection([] { return true; });  // the create reached the server
  s.apply(s.fsm.on_suspended());
  CHECK(s.early_answers == 1);
  CHECK(s.fsm.answered_early());
  CHECK_FALSE(s.completed);
  check_cleaned_up_behind(s, boost::asio::error::operation_aborted);
}

TEST_CASE("an at_once stop waits for its cleanup at most stop_answer_wait, the cleanup behind",
          "[unit][lock][cancel][fault]") {
  for (error_code reason : {error_code(boost::asio::error::operation_aborted), error_code(errc::lock_timeout)}) {
    CAPTURE(reason.message());
    sim s;
    stopped_with_create_unanswered(s, reason);
    REQUIRE(s.stop_answer_due);  // the runner's timer, stop_answer_wait
    s.stop_answer_wait_over();
    CHECK(s.early_answers == 1);
    CHECK(s.fsm.answered_early());
    CHECK_FALSE(s.completed);
    // the connection dropping later answers nobody twice
    s.drop_connection([] { return true; });
    s.apply(s.fsm.on_suspended());
    CHECK(s.early_answers == 1);
    check_cleaned_up_behind(s, reason);
  }
  SECTION("a cleanup done within the wait answers after it: the wait's end is nothing then") {
    sim s;
    stopped_with_create_unanswered(s, boost::asio::error::operation_aborted);
    s.drain();
    REQUIRE(s.completed);
    s.stop_answer_wait_over();
    CHECK(s.early_answers == 0);
    CHECK(s.ours() == 0);
    CHECK(s.violation == "");
  }
  SECTION("a total cancellation waits for the cleanup, however long") {
    sim s;
    s.add_foreign();
    s.apply(s.fsm.start());
    s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, stop_kind::total, true));
    CHECK_FALSE(s.stop_answer_due);
    s.drop_connection([] { return true; });
    s.apply(s.fsm.on_suspended());
    CHECK(s.early_answers == 0);
    CHECK_FALSE(s.completed);
    check_cleaned_up_behind(s, boost::asio::error::operation_aborted);
    CHECK(s.early_answers == 0);
  }
}
