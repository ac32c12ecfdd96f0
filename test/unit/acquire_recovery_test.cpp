// What a waiting acquire answers while its connection is down: a terminal cancel and a try at
// once (the cleanup follows), a total cancel and a blocking wait after the reconnect.
#include "acquire_test.hpp"

namespace {
// Answered early (connection_unavailable): once the connection is back the cleanup leaves nothing.
void check_unavailable_after_reconnect(sim& s) {
  s.reconnect();
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::connection_unavailable);
  CHECK(s.ours() == 0);
  CHECK(s.violation == "");
}
}  // namespace

TEST_CASE("cancel while disconnected: terminal answers at once and cleans up behind, total waits for the cleanup",
          "[unit][lock][cancel][fault]") {
  for (auto kind : {stop_kind::at_once, stop_kind::total}) {
    CAPTURE(kind == stop_kind::at_once);
    sim s;
    s.add_foreign();
    s.apply(s.fsm.start());
    s.drain();  // waiting behind the head
    s.drop_connection([] { return true; });
    s.apply(s.fsm.on_suspended());  // a blocking acquire waits for the reconnect
    CHECK(s.early_answers == 0);
    s.apply(s.fsm.cancel(boost::asio::error::operation_aborted, kind, s.connected));
    CHECK(s.early_answers == (kind == stop_kind::at_once ? 1 : 0));
    CHECK_FALSE(s.completed);
    CHECK(s.fsm.answered_early() == (kind == stop_kind::at_once));
    s.reconnect();
    s.drain();
    REQUIRE(s.completed);  // the cleanup is done
    CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
    CHECK(s.ours() == 0);
    CHECK(s.blocker_watches().empty());
    CHECK(s.violation == "");
  }
}

TEST_CASE("a timeout: lock_timeout after the cleanup while connected, connection_unavailable at once while not",
          "[unit][lock][cancel][fault]") {
  sim s;
  s.add_foreign();
  s.run();
  s.apply(s.fsm.on_timeout(true));
  CHECK(s.early_answers == 0);
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == errc::lock_timeout);

  sim t;
  t.add_foreign();
  t.run();
  t.drop_connection([] { return true; });
  t.apply(t.fsm.on_timeout(false));
  CHECK(t.early_answers == 1);
  check_unavailable_after_reconnect(t);
}

TEST_CASE("a try-acquire answers at once when the connection drops, a blocking one waits", "[unit][lock][fault]") {
  sim s(lock_mode::try_once);
  s.apply(s.fsm.start());
  s.step();  // the look: free, create and list go
  s.drop_connection([] { return true; });
  s.apply(s.fsm.on_suspended());
  CHECK(s.early_answers == 1);
  check_unavailable_after_reconnect(s);

  sim w;
  w.add_foreign();
  w.run();
  w.drop_connection([] { return true; });
  CHECK(w.fsm.on_suspended().empty());
}
