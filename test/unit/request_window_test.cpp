// The session's window of outstanding requests (src/sansio/request_window.hpp): a bound on what
// is sent, the order of what waits, and listings that coalesce.
#include "sansio/request_window.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using zklock::detail::request_class;
using zklock::detail::request_window;

namespace {
// What the engine does with the window, with strings for requests: sends at once when it may,
// queues otherwise; a listing joins a waiting one of its dir (its asker noted in the payload).
struct engine {
  request_window<std::vector<std::string>> w;
  std::vector<std::string> sent;
  explicit engine(std::size_t limit, std::size_t max_askers = 0) : w(limit, max_askers) {}
  void make(const std::string& name, request_class cls = request_class::other, const std::string& dir = {}) {
    if (cls == request_class::listing)
      if (auto* joined = w.join_listing(dir)) return joined->push_back(name);
    if (w.try_send()) return sent.push_back(name);
    w.push(cls, dir, {name});
  }
  void answer_one() {
    w.on_done();
    while (auto next = w.next()) {
      std::string names;
      for (auto& n : *next) names += (names.empty() ? "" : "+") + n;
      sent.push_back(names);
    }
  }
};
}  // namespace

TEST_CASE("request window: a burst never has more than the window outstanding, and leaves in order", "[unit]") {
  engine e(3);
  for (int i = 0; i < 10; ++i) e.make("r" + std::to_string(i));
  CHECK(e.sent == std::vector<std::string>{"r0", "r1", "r2"});
  CHECK(e.w.outstanding() == 3);
  CHECK(e.w.queued() == 7);
  for (int i = 0; i < 10; ++i) {
    e.answer_one();
    CHECK(e.w.outstanding() <= 3);
  }
  REQUIRE(e.sent.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(e.sent[i] == "r" + std::to_string(i));
  CHECK(e.w.max_outstanding() == 3);
  CHECK(e.w.max_queued() == 7);
  CHECK(e.w.outstanding() == 0);
}

TEST_CASE("request window: a new request waits behind queued ones even when the window has room", "[unit]") {
  request_window<int> w(2);
  CHECK(w.try_send());
  CHECK(w.try_send());
  CHECK_FALSE(w.try_send());
  w.push(request_class::other, {}, 7);
  w.on_done();
  CHECK_FALSE(w.try_send());  // 7 goes first
  auto n = w.next();
  REQUIRE(n);
  CHECK(*n == 7);
  CHECK(w.outstanding() == 2);
  CHECK_FALSE(w.next());
}

TEST_CASE("request window: waiting listings of one dir coalesce, sent after every asker's create", "[unit]") {
  engine e(1, 8);
  e.make("busy");  // fills the window
  // contenders a, b, c each make a create and then a listing of /d (acquire_op's create_and_list)
  for (std::string c : {"a", "b", "c"}) {
    e.make("create-" + c);
    e.make("list-" + c, request_class::listing, "/d");
  }
  CHECK(e.w.coalesced() == 2);
  CHECK(e.w.queued() == 4);  // three creates and one listing
  for (int i = 0; i < 5; ++i) e.answer_one();
  CHECK(e.sent == std::vector<std::string>{"busy", "create-a", "create-b", "create-c", "list-a+list-b+list-c"});
}

TEST_CASE("request window: listings of other dirs, and listings already sent, do not coalesce", "[unit]") {
  engine e(1);
  e.make("list-a", request_class::listing, "/d");  // sent at once: not joinable
  e.make("list-b", request_class::listing, "/d");
  e.make("list-c", request_class::listing, "/e");
  e.make("list-d", request_class::listing, "/d");
  e.answer_one();
  // list-b waits behind list-d now (it moved to the newest asker's place), list-c stays
  CHECK(e.sent == std::vector<std::string>{"list-a", "list-c"});
  e.answer_one();
  CHECK(e.sent == std::vector<std::string>{"list-a", "list-c", "list-b+list-d"});
  e.make("list-e", request_class::listing, "/d");  // the /d listing was sent: a new one
  CHECK(e.w.queued() == 1);
  CHECK(e.w.coalesced() == 1);
}

TEST_CASE("request window: a listing takes at most the window's number of askers, then stops moving back", "[unit]") {
  engine e(2);  // (max_askers: the window's 2)
  e.make("x");
  e.make("y");
  for (int i = 0; i < 5; ++i) e.make("l" + std::to_string(i), request_class::listing, "/d");
  // l0+l1 full at 2 askers; l2+l3 full; l4 alone
  CHECK(e.w.queued() == 3);
  e.answer_one();
  e.answer_one();
  e.answer_one();
  CHECK(e.sent == std::vector<std::string>{"x", "y", "l0+l1", "l2+l3", "l4"});
}

TEST_CASE("request window: take_all hands back what waits, in order, and nothing stays joinable", "[unit]") {
  request_window<std::string> w(1);
  CHECK(w.try_send());
  w.push(request_class::other, {}, "a");
  w.push(request_class::listing, "/d", "b");
  auto all = w.take_all();
  CHECK(all == std::vector<std::string>{"a", "b"});
  CHECK(w.queued() == 0);
  CHECK(w.join_listing("/d") == nullptr);
  w.forget_outstanding();
  CHECK(w.outstanding() == 0);
  CHECK(w.try_send());
}

TEST_CASE("request window: a zero window is a window of one, whose listings still take two askers", "[unit]") {
  request_window<int> w(0);
  CHECK(w.limit() == 1);
  w.push(request_class::listing, "/d", 1);
  CHECK(w.join_listing("/d") != nullptr);
  CHECK(w.join_listing("/d") == nullptr);
  CHECK(w.take_all().size() == 1);
  CHECK(w.try_send());
  CHECK_FALSE(w.try_send());
}
