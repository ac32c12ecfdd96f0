// Our own node is watched from its create on: its deletion by someone else, heard at any step,
// is never a grant (we queue again), a write to it is no news.
#include "acquire_test.hpp"

namespace {
std::string our_node(const sim& s) { return s.our_path(); }
// Queues us second behind a head: the head's name and our node's path.
std::pair<std::string, std::string> queue_second(sim& s) {
  auto head = s.add_foreign();
  s.run();
  return {head, our_node(s)};
}
// The same, our contact stale (a grant refreshes it first).
std::pair<std::string, std::string> queue_second_stale(sim& s) {
  s.contact_stale = [] { return true; };
  return queue_second(s);
}
// The acquire queued again once (its node `old` gone) and was granted on its new node.
void check_granted_on_a_new_node(const sim& s, const std::string& old) {
  CHECK(s.requeues == 1);
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.fsm.result().node != old);
  CHECK(s.ours() == 1);
  CHECK(s.fsm.result().node == our_node(s));
}
}  // namespace

TEST_CASE("our node is watched from the create's reply on, behind the pipelined listing", "[unit][lock][own_node]") {
  sim s;
  s.add_foreign();
  s.apply(s.fsm.start());
  REQUIRE(s.step());  // the create's reply
  REQUIRE(s.replies.size() == 2);  // the listing, then our node's watch (sent now)
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::setting);
  CHECK(s.watches.count(our_node(s)) == 1);
  s.drain();
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::set);
  CHECK_FALSE(s.completed);
}

TEST_CASE("a waiter whose node is deleted by someone else queues again, behind the waiter that was behind it",
          "[unit][lock][own_node]") {
  sim s;
  auto [head, old] = queue_second(s);
  auto behind = s.add_foreign();  // queued behind us
  REQUIRE(s.delete_ours());
  s.drain();
  CHECK(s.requeues == 1);
  CHECK(s.ours() == 1);
  CHECK(our_node(s) != old);
  CHECK(s.blocker_watches() == std::set<std::string>{join_path(s.dir, head), join_path(s.dir, behind)});
  s.delete_foreign(head);  // the head's release is the turn of the one now ahead of us, not ours
  s.drain();
  CHECK_FALSE(s.completed);
  int lists = s.lists;
  check_granted_when_gone(s, behind);
  CHECK(s.fsm.result().node == our_node(s));
  CHECK(s.lists == lists);  // the last watched blocker's deletion: granted with no listing
}

TEST_CASE("our node's deletion heard while a listing is on its way: that listing is not taken as showing our node",
          "[unit][lock][own_node]") {
  sim s;
  auto [head, old] = queue_second(s);
  s.change_data(head, "__REVOKE__");  // a listing goes out (the data change proves nothing)
  REQUIRE(s.step());
  REQUIRE(s.fsm.own_node_watch() == acquire_fsm::own_watch::set);
  // our node's deletion arrives before that listing's reply (here: the listing still shows it)
  s.erase_unheard(old);
  auto a = s.fsm.on_watch_event(old, watch_change::deleted);
  REQUIRE(a.size() == 1);
  CHECK(a[0].type == acquire_action::requeued);
  s.apply(a);
  s.drain();  // the listing, then a new node
  CHECK(s.ours() == 1);
  CHECK(our_node(s) != old);
  s.delete_foreign(head);
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().node == our_node(s));
}

TEST_CASE("the stale-contact exists before a grant that finds no node does not grant: we queue again",
          "[unit][lock][own_node][grant]") {
  sim s;
  auto [head, old] = queue_second_stale(s);
  // our node gone with no event for it (its watch lost; as when the grant refreshes right after)
  s.erase_unheard(old);
  s.delete_foreign(head);
  s.drain();
  CHECK(s.refreshes == 1);
  check_granted_on_a_new_node(s, old);
}

TEST_CASE("our node's deletion while the grant waits for its refresh: no grant, we queue again",
          "[unit][lock][own_node][grant]") {
  sim s;
  auto [head, old] = queue_second_stale(s);
  s.delete_foreign(head);
  REQUIRE(s.step());  // the head's deletion: the grant refreshes the contact first
  REQUIRE(s.refreshes == 1);
  REQUIRE(s.delete_ours());  // its event comes before the refresh's reply
  s.drain();
  check_granted_on_a_new_node(s, old);
}

TEST_CASE("a write to our node while we wait is no news: watched again, no listing", "[unit][lock][own_node]") {
  sim s;
  s.add_foreign();
  s.run();
  int lists = s.lists, requests = s.requests;
  s.change_data(std::string(node_name(our_node(s))), "__REVOKE__");
  s.drain();
  CHECK_FALSE(s.completed);
  CHECK(s.lists == lists);
  CHECK(s.requests == requests + 1);  // our node's watch set again
  CHECK(s.fsm.own_node_watch() == acquire_fsm::own_watch::set);
}

TEST_CASE("a failed acquire's delete fires our node's watch: nothing is left watched", "[unit][lock][own_node][cancel]") {
  sim s;
  s.add_foreign();
  s.run();
  s.apply(s.fsm.cancel(boost::asio::error::operation_aborted));
  s.drain();
  REQUIRE(s.completed);
  CHECK(s.fsm.result().ec == boost::asio::error::operation_aborted);
  CHECK(s.watches.empty());
  CHECK(s.ours() == 0);
}

TEST_CASE("a blocker's deletion heard while our node's watch is being set again is no grant: one read decides",
          "[unit][lock][own_node][grant]") {
  // Someone writes into our node (its watch spent: we set it again), deletes it, then deletes
  // the head, all before our watch's request reaches the server: the head's event is no grant.
  sim s;
  auto [head, old] = queue_second(s);
  auto behind = s.add_foreign();
  s.change_data(std::string(node_name(old)), "x");
  s.erase_unheard(old);
  s.delete_foreign(head);
  s.drain();
  CHECK_FALSE(s.granted_node_heard_gone);
  CHECK(s.requeues == 1);
  REQUIRE_FALSE(s.completed);  // queued again, behind the waiter that was behind us
  CHECK(s.fsm.predecessor() == join_path(s.dir, behind));
  check_granted_when_gone(s, behind);
  CHECK(s.fsm.result().node != old);
  CHECK(s.fsm.result().node == our_node(s));
}

TEST_CASE("a blocker's deletion with our node's watch set again and our node there: granted after one exists",
          "[unit][lock][own_node][grant]") {
  sim s;
  auto [head, old] = queue_second(s);
  s.change_data(std::string(node_name(old)), "x");  // our watch spent, set again behind the head's event
  s.delete_foreign(head);
  int lists = s.lists, requests = s.requests;
  s.drain();
  REQUIRE(s.completed);
  CHECK_FALSE(s.fsm.result().ec);
  CHECK(s.fsm.result().node == old);
  CHECK(s.lists == lists);
  CHECK(s.requests == requests + 2);  // our node's watch again, and the one read that decides
}
