// The two-level lock's local queue without a server: FIFO, one local holder, one node, the
// fairness bound, loss, cancellation during a handoff, and a property test against an oracle.
#include "sansio/local_queue_fsm.hpp"
#include "sim/driver_rules.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>

using namespace zklock;
using namespace zklock::detail;

namespace {

const error_code aborted = boost::asio::error::operation_aborted;

// Carries out the actions like the runner, models the node on the server, and checks the
// rules as an oracle independent of the machine's own bookkeeping.
struct queue_driver : zklock::testing::driver_rules {
  local_queue_fsm fsm;
  std::uint32_t max;
  enum class node { none, acquiring, held, lost, releasing } node_ = node::none;
  bool acquire_try = false, acquire_cancelled = false;
  bool listing = false;       // a watch_queue in flight
  bool watch_set = false;     // its child watch, set by the reply
  bool others = false;        // truth: another process has a node in the dir
  bool session_ended = false;
  bool acquire_doomed = false;  // the acquire in flight ran on a session that ended since
  std::deque<std::uint64_t> waiting;  // oracle FIFO of waiters not completed
  std::optional<std::uint64_t> holder;
  std::map<std::uint64_t, int> completions;
  std::map<std::uint64_t, error_code> result;
  std::uint32_t grants_on_node = 0;
  std::uint32_t last_generation = 0;
  bool known_no = false;      // the machine was told "nobody else" for this node, not since invalidated
  std::uint64_t next_id = 1;
  std::uint64_t grants = 0, requests = 0;  // requests: sent to the server by the actions

  explicit queue_driver(int m) : fsm(m), max(m < 1 ? 1 : static_cast<std::uint32_t>(m)) {}

  void apply(const local_queue_fsm::actions& actions) {
    for (const auto& a : actions) {
      if (a.type == sansio::request::get_children) {
        CHECK(a.path.empty());  // the lock dir (the runner's)
        CHECK(a.slot == local_queue_fsm::queue_watch_slot);
        if (node_ != node::held) forbid("watch_queue without holding the node");
        if (listing) forbid("two listings at once");
        listing = true;
        ++requests;
        continue;
      }
      REQUIRE(a.type == sansio::request::notify);
      switch (a.outcome_kind<local_outcome>()) {
        case local_outcome::acquire_node:
          if (node_ != node::none) forbid("a second node acquire while a node of ours may be in the dir");
          node_ = node::acquiring;
          acquire_try = a.value != 0;
          acquire_cancelled = false;
          acquire_doomed = session_ended;
          ++requests;
          break;
        case local_outcome::cancel_node:
          if (node_ != node::acquiring) forbid("cancel_node without an acquire");
          acquire_cancelled = true;
          break;
        case local_outcome::release_node:
          if (node_ != node::held && node_ != node::lost) forbid("release_node without a node");
          if (holder) forbid("node released under a local holder");
          node_ = node::releasing;
          listing = false;
          watch_set = false;
          known_no = false;
          ++requests;
          break;
        case local_outcome::grant: {
          if (node_ != node::held) forbid("grant without holding the node");
          if (holder) forbid("two local holders");
          if (waiting.empty() || waiting.front() != a.id) forbid("grant out of FIFO order");
          auto it = std::find(waiting.begin(), waiting.end(), a.id);
          if (it != waiting.end()) waiting.erase(it);
          holder = a.id;
          ++grants_on_node;
          ++grants;
          if (a.value != grants_on_node - 1) forbid("generation is not the node's grant count");
          if (grants_on_node > max && !known_no) forbid("fairness bound: more local grants than allowed while others may wait");
          ++completions[a.id];
          break;
        }
        case local_outcome::fail: {
          auto it = std::find(waiting.begin(), waiting.end(), a.id);
          if (it == waiting.end()) forbid("fail of a waiter not waiting");
          else waiting.erase(it);
          ++completions[a.id];
          result[a.id] = a.ec;
          break;
        }
        case local_outcome::lose_holder:
          if (!holder || *holder != a.id) forbid("lose_holder of someone not holding");
          break;
      }
    }
  }

  // inputs
  std::uint64_t enqueue(bool try_once) {
    auto id = next_id++;
    const bool busy = holder || !waiting.empty();
    waiting.push_back(id);
    apply(fsm.enqueue(id, try_once));
    if (try_once && busy && (completions[id] != 1 || result[id] != errc::lock_busy)) forbid("try-acquire queued behind others");
    return id;
  }
  void cancel(std::uint64_t id) { apply(fsm.cancel(id, aborted)); }
  void release() {
    auto id = *holder;
    holder.reset();
    apply(fsm.release(id));
  }
  void node_acquired(error_code ec) {
    if (!ec) {
      node_ = node::held;
      grants_on_node = 0;
      known_no = false;
    } else {
      node_ = node::none;
    }
    apply(fsm.on_node_acquired(ec));
  }
  void node_released() {
    node_ = node::none;
    apply(fsm.on_node_released());
  }
  void node_lost(error_code end) {
    node_ = node::lost;
    listing = false;
    watch_set = false;
    known_no = false;
    if (end) session_ended = true;
    apply(fsm.on_node_lost(end));
    if (end && !waiting.empty()) forbid("waiters left after the session ended");
  }
  // The session ended (the runner tells it once per session, whatever the machine knew).
  void session_end(error_code ec) {
    session_ended = true;
    if (node_ == node::held) node_ = node::lost;
    if (node_ == node::acquiring) acquire_doomed = true;
    listing = false;
    watch_set = false;
    known_no = false;
    apply(fsm.on_session_ended(ec));
    if (!waiting.empty()) forbid("waiters left after the session ended");
  }
  // async_connect started a new session: acquires from here on run on it.
  void new_session() { session_ended = false; }
  void listing_reply() {
    listing = false;
    watch_set = true;
    known_no = !others;
    apply(fsm.on_queue(others));
  }
  void others_change(bool now) {
    if (now == others) return;
    others = now;
    if (watch_set && node_ == node::held) {
      watch_set = false;
      known_no = false;
      apply(fsm.on_queue_changed());
    }
  }
  // One pending event of the environment, if any (deterministic order).
  bool step_environment(std::mt19937* rng) {
    if (node_ == node::acquiring) {
      error_code ec;
      if (session_ended || acquire_doomed) ec = errc::session_expired;
      else if (acquire_cancelled && (!rng || (*rng)() % 2)) ec = aborted;
      else if (acquire_try && others && (!rng || (*rng)() % 2)) ec = errc::lock_busy;
      node_acquired(ec);
      return true;
    }
    if (node_ == node::releasing) {
      node_released();
      return true;
    }
    if (listing && node_ == node::held) {
      listing_reply();
      return true;
    }
    if (holder) {
      release();
      return true;
    }
    return false;
  }
};

}  // namespace

TEST_CASE("local_queue_fsm: one node, local handoffs send nothing, FIFO", "[unit][local]") {
  queue_driver d(1);
  auto a = d.enqueue(false);
  auto b = d.enqueue(false);
  auto c = d.enqueue(false);
  CHECK(d.requests == 1);  // one node acquire for three waiters
  d.node_acquired({});
  CHECK(d.holder == a);
  REQUIRE(d.listing);  // learns who waits behind us while a works
  d.listing_reply();   // nobody else
  auto before = d.requests;
  d.release();
  CHECK(d.holder == b);
  d.release();
  CHECK(d.holder == c);
  CHECK(d.requests == before);  // the handoffs sent nothing
  d.release();
  CHECK(d.node_ == queue_driver::node::releasing);  // nobody left: the node goes
  d.node_released();
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: with another process queued the node goes after max_local_handoffs grants",
          "[unit][local]") {
  for (int max : {1, 3}) {
    queue_driver d(max);
    d.others = true;
    for (int i = 0; i < 6; ++i) d.enqueue(false);
    d.node_acquired({});
    d.listing_reply();  // someone else waits
    int local = 1;
    while (d.holder) {
      d.release();
      if (d.holder) ++local;
    }
    CHECK(local == max);
    CHECK(d.node_ == queue_driver::node::releasing);
    CHECK(d.waiting.size() == static_cast<std::size_t>(6 - max));
    d.node_released();
    CHECK(d.node_ == queue_driver::node::acquiring);  // queues again, behind the others
    CHECK(d.violation == "");
  }
}

TEST_CASE("local_queue_fsm: past the budget with the queue unknown, waits for the listing", "[unit][local]") {
  queue_driver d(1);
  d.enqueue(false);
  d.enqueue(false);
  d.node_acquired({});
  REQUIRE(d.listing);
  d.release();               // the listing is still in flight
  CHECK_FALSE(d.holder);     // no grant beyond the budget without knowing
  CHECK(d.node_ == queue_driver::node::held);
  d.listing_reply();         // nobody else
  CHECK(d.holder);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: a child watch event makes the knowledge stale", "[unit][local]") {
  queue_driver d(1);
  for (int i = 0; i < 4; ++i) d.enqueue(false);
  d.node_acquired({});
  d.listing_reply();
  d.release();                // handoff: nobody else
  d.others_change(true);      // another process queued: the watch fires
  CHECK(d.listing);           // listed again (a local waiter needs to know)
  d.listing_reply();
  d.release();
  CHECK_FALSE(d.holder);
  CHECK(d.node_ == queue_driver::node::releasing);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: try-acquire is busy behind a local holder or waiter, and leaves nothing",
          "[unit][local]") {
  queue_driver d(1);
  auto t = d.enqueue(true);
  CHECK(d.acquire_try);
  d.others = true;
  d.node_acquired(errc::lock_busy);  // another process holds it
  CHECK(d.result[t] == errc::lock_busy);
  CHECK(d.node_ == queue_driver::node::none);
  auto a = d.enqueue(false);
  d.node_acquired({});
  CHECK(d.holder == a);
  auto t2 = d.enqueue(true);
  CHECK(d.result[t2] == errc::lock_busy);
  CHECK(d.fsm.waiting() == 0);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: the last waiter's cancellation cancels the node acquire", "[unit][local]") {
  queue_driver d(1);
  auto a = d.enqueue(false);
  d.cancel(a);
  CHECK(d.result[a] == aborted);
  CHECK(d.acquire_cancelled);
  d.node_acquired({});  // the grant raced the cancellation: the node goes back at once
  CHECK(d.node_ == queue_driver::node::releasing);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: a waiter cancelled during a handoff is skipped, no lost wake-up", "[unit][local]") {
  queue_driver d(5);
  auto a = d.enqueue(false);
  auto b = d.enqueue(false);
  auto c = d.enqueue(false);
  d.node_acquired({});
  CHECK(d.holder == a);
  d.cancel(b);
  d.release();
  CHECK(d.holder == c);
  CHECK(d.result[b] == aborted);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: loss with the session ended fails the waiters, otherwise they queue again",
          "[unit][local]") {
  {
    queue_driver d(1);
    d.enqueue(false);
    auto b = d.enqueue(false);
    d.node_acquired({});
    d.node_lost(errc::session_expired);
    CHECK(d.result[b] == errc::session_expired);
    d.release();  // the lost holder lets go: the node is released, nothing acquired
    CHECK(d.node_ == queue_driver::node::releasing);
    d.node_released();
    CHECK(d.node_ == queue_driver::node::none);
    CHECK(d.violation == "");
  }
  {
    queue_driver d(1);
    d.enqueue(false);
    auto b = d.enqueue(false);
    d.node_acquired({});
    d.node_lost({});        // node deleted by someone else, session lives
    CHECK(d.completions[b] == 0);
    d.release();
    d.node_released();
    CHECK(d.node_ == queue_driver::node::acquiring);  // a new node for b
    d.node_acquired({});
    CHECK(d.holder == b);
    CHECK(d.violation == "");
  }
}

TEST_CASE("local_queue_fsm: the session's end after a loss at the deadline fails every waiter",
          "[unit][local]") {
  queue_driver d(1);
  auto a = d.enqueue(false);
  auto b = d.enqueue(false);
  auto c = d.enqueue(false);
  d.node_acquired({});
  REQUIRE(d.holder == a);
  d.node_lost({});  // validity deadline passed while suspended: the session may live
  CHECK(d.completions[b] == 0);
  CHECK(d.completions[c] == 0);
  d.session_end(errc::session_expired);  // then no server answered for the session timeout
  CHECK(d.result[b] == errc::session_expired);
  CHECK(d.result[c] == errc::session_expired);
  CHECK(d.holder == a);  // the lost holder stays until it lets go: no local overlap
  CHECK(d.node_ == queue_driver::node::lost);
  d.release();
  CHECK(d.node_ == queue_driver::node::releasing);  // nothing acquired for nobody
  d.node_released();
  CHECK(d.node_ == queue_driver::node::none);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: the session's end fails the waiters in every node state", "[unit][local]") {
  for (auto ec : {error_code(errc::session_expired), error_code(errc::session_closed)}) {
    INFO(ec.message());
    {
      queue_driver d(1);
      auto a = d.enqueue(false);
      CHECK(d.node_ == queue_driver::node::acquiring);
      d.session_end(ec);  // acquiring
      CHECK(d.result[a] == ec);
      CHECK(d.acquire_cancelled);  // nobody waits for it any more
      d.node_acquired(errc::session_expired);
      CHECK(d.node_ == queue_driver::node::none);
      CHECK(d.violation == "");
    }
    {
      queue_driver d(1);
      auto a = d.enqueue(false);
      auto b = d.enqueue(false);
      d.node_acquired({});
      d.session_end(ec);  // held, not yet known lost
      CHECK(d.result[b] == ec);
      CHECK(d.completions[a] == 1);  // a holds (lost): its guard was told
      CHECK(d.node_ == queue_driver::node::lost);
      d.release();
      d.node_released();
      CHECK(d.node_ == queue_driver::node::none);
      CHECK(d.violation == "");
    }
    {
      queue_driver d(1);
      d.others = true;
      d.enqueue(false);
      auto b = d.enqueue(false);
      d.node_acquired({});
      d.listing_reply();  // someone else waits: the release gives the node up
      d.release();
      REQUIRE(d.node_ == queue_driver::node::releasing);
      REQUIRE(d.completions[b] == 0);
      d.session_end(ec);  // releasing
      CHECK(d.result[b] == ec);
      d.node_released();
      CHECK(d.node_ == queue_driver::node::none);  // nothing acquired for nobody
      CHECK(d.violation == "");
    }
    {
      queue_driver d(1);
      d.session_end(ec);  // none, nobody: nothing happens
      CHECK(d.node_ == queue_driver::node::none);
      CHECK(d.violation == "");
    }
  }
}

TEST_CASE("local_queue_fsm: after the session's end the queue serves a new session's acquires", "[unit][local]") {
  queue_driver d(1);
  d.enqueue(false);
  auto b = d.enqueue(false);
  d.node_acquired({});
  d.node_lost({});
  d.session_end(errc::session_expired);
  CHECK(d.result[b] == errc::session_expired);
  d.new_session();
  auto c = d.enqueue(false);  // behind the lost holder, who has not let go yet
  CHECK(d.completions[c] == 0);
  d.release();
  d.node_released();
  REQUIRE(d.node_ == queue_driver::node::acquiring);
  d.node_acquired({});
  CHECK(d.holder == c);
  d.release();
  d.node_released();
  auto e = d.enqueue(false);  // and the one after
  d.node_acquired({});
  CHECK(d.holder == e);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm: a node gives way after 2^16 local generations", "[unit][local]") {
  queue_driver d(1);
  d.enqueue(false);
  d.node_acquired({});
  d.enqueue(false);
  d.listing_reply();  // nobody else: unlimited handoffs, but the token's generation is 16 bits
  for (std::uint32_t i = 0; i < local_queue_fsm::max_generations + 5 && d.holder; ++i) {
    d.enqueue(false);
    d.release();
  }
  CHECK(d.grants_on_node == local_queue_fsm::max_generations);
  CHECK(d.node_ == queue_driver::node::releasing);
  CHECK(d.violation == "");
}

TEST_CASE("local_queue_fsm property: random acquires, cancels, releases, replies, others and losses",
          "[unit][local][property]") {
  for (unsigned seed = 1; seed <= 4000; ++seed) {
    std::mt19937 rng(seed);
    int max = 1 + static_cast<int>(rng() % 4);
    queue_driver d(max);
    std::vector<std::uint64_t> ids;
    for (int step = 0; step < 120 && d.violation.empty(); ++step) {
      switch (rng() % 11) {
        case 0:
        case 1: ids.push_back(d.enqueue(rng() % 5 == 0)); break;
        case 2:
          if (!ids.empty()) d.cancel(ids[rng() % ids.size()]);  // often one no longer waiting
          break;
        case 3:
          if (d.holder) d.release();
          break;
        case 4:
        case 5: d.step_environment(&rng); break;
        case 6: d.others_change(rng() % 2); break;
        case 7:
          if (d.listing && d.node_ == queue_driver::node::held) d.listing_reply();
          break;
        case 8:
          if (d.node_ == queue_driver::node::held && rng() % 8 == 0) {
            auto end = rng() % 2 ? error_code(errc::session_expired) : error_code{};
            d.node_lost(end);
            if (end && rng() % 2) d.session_end(end);  // the runner's next look at the session
          }
          break;
        case 9:
          if (d.node_ == queue_driver::node::acquiring) d.step_environment(&rng);
          break;
        case 10:  // the session ends in any state (told once), or a new one starts
          if (d.session_ended) {
            if (rng() % 2) d.new_session();
          } else if (rng() % 6 == 0) {
            d.session_end(rng() % 2 ? error_code(errc::session_expired) : error_code(errc::session_closed));
          }
          break;
      }
    }
    // Settle: the environment delivers everything and holders release; every waiter must end.
    for (int i = 0; i < 100000 && d.step_environment(nullptr); ++i) {
    }
    INFO("seed " << seed << " max " << max);
    REQUIRE(d.violation == "");
    CHECK(d.waiting.empty());   // no lost wake-up: nobody waits when nothing is in flight
    CHECK_FALSE(d.holder);
    CHECK(d.node_ == queue_driver::node::none);
    CHECK_FALSE(d.fsm.node_present());
    for (auto id : ids) {
      INFO("waiter " << id);
      REQUIRE(d.completions[id] == 1);  // each acquire completes exactly once
    }
  }
}
