// multi_lock's all-or-nothing without a server: every order of acquire outcomes, cancellations
// and rollback releases.
#include "sansio/multi_fsm.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <string>

using namespace zklock;
using namespace zklock::detail;

namespace {

// Carries out the actions like the runner and checks its rules: one acquire at a time, in order;
// a completion exactly once and nothing after it; a failure completes only after every lock taken
// was released; success only with every lock held and no cancellation.
struct multi_driver {
  multi_fsm fsm;
  std::size_t count;
  std::set<std::size_t> held;           // locks the runner holds
  std::vector<std::size_t> releasing;   // releases sent, not yet reported
  std::optional<std::size_t> acquiring;
  int completions = 0;
  error_code result;
  std::string violation;

  explicit multi_driver(std::size_t n) : fsm(n), count(n) {}

  void apply(const multi_fsm::actions& actions) {
    for (const auto& a : actions) {
      if (completions) violation = "an action after the completion";
      if (a.type == sansio::request::complete) {
        ++completions;
        result = a.ec;
        if (a.ec && !held.empty()) violation = "failed with locks still held";
        if (!a.ec && held.size() != count) violation = "succeeded without every lock";
        continue;
      }
      REQUIRE(a.type == sansio::request::notify);
      switch (a.outcome_kind<multi_outcome>()) {
        case multi_outcome::acquire:
          if (acquiring) violation = "two acquires at once";
          if (a.id != held.size()) violation = "acquire out of order";
          acquiring = a.id;
          break;
        case multi_outcome::release:
          if (!held.count(a.id)) violation = "release of a lock not held";
          releasing.push_back(a.id);
          break;
      }
    }
  }
  void acquired(error_code ec) {
    REQUIRE(acquiring);
    if (!ec) held.insert(*acquiring);
    acquiring.reset();
    apply(fsm.on_acquired(ec));
  }
  void released(std::size_t k) {  // the k-th outstanding release completes
    auto i = releasing[k];
    releasing.erase(releasing.begin() + static_cast<std::ptrdiff_t>(k));
    held.erase(i);
    apply(fsm.on_released(i));
  }
};

}  // namespace

TEST_CASE("multi_fsm: takes every lock in order, then completes", "[unit][multi]") {
  multi_driver d(3);
  d.apply(d.fsm.start());
  for (int i = 0; i < 3; ++i) d.acquired({});
  CHECK(d.completions == 1);
  CHECK_FALSE(d.result);
  CHECK(d.fsm.taken() == 3);
  CHECK(d.violation == "");
}

TEST_CASE("multi_fsm: an empty set fails with path_empty", "[unit][multi]") {
  multi_driver d(0);
  d.apply(d.fsm.start());
  CHECK(d.completions == 1);
  CHECK(d.result == errc::path_empty);
}

TEST_CASE("multi_fsm: a failure completes only once the locks taken are released", "[unit][multi]") {
  multi_driver d(3);
  d.apply(d.fsm.start());
  d.acquired({});
  d.acquired({});
  d.acquired(errc::lock_timeout);
  CHECK(d.completions == 0);  // two releases outstanding
  CHECK(d.releasing.size() == 2);
  d.released(0);
  CHECK(d.completions == 0);
  d.released(0);
  CHECK(d.completions == 1);
  CHECK(d.result == errc::lock_timeout);
  CHECK(d.violation == "");
}

TEST_CASE("multi_fsm: a lock granted after the cancellation is given back too", "[unit][multi]") {
  multi_driver d(2);
  d.apply(d.fsm.start());
  d.apply(d.fsm.cancel(boost::asio::error::operation_aborted));
  d.acquired({});  // the grant raced the cancellation
  REQUIRE(d.releasing.size() == 1);
  d.released(0);
  CHECK(d.completions == 1);
  CHECK(d.result == boost::asio::error::operation_aborted);
  CHECK(d.violation == "");
}

TEST_CASE("multi_fsm property: random outcomes, cancellations and release orders", "[unit][multi][property]") {
  for (unsigned seed = 1; seed <= 3000; ++seed) {
    std::mt19937 rng(seed);
    std::size_t n = rng() % 5;
    multi_driver d(n);
    d.apply(d.fsm.start());
    bool cancelled = false;
    for (int step = 0; step < 100 && !d.completions; ++step) {
      switch (rng() % 4) {
        case 0:
          if (!cancelled && rng() % 3 == 0) {
            cancelled = true;
            d.apply(d.fsm.cancel(boost::asio::error::operation_aborted));
          }
          break;
        case 1:
        case 2:
          if (d.acquiring) d.acquired(rng() % 4 == 0 ? error_code(errc::lock_timeout) : error_code{});
          break;
        case 3:
          if (!d.releasing.empty()) d.released(rng() % d.releasing.size());
          break;
      }
    }
    INFO("seed " << seed);
    REQUIRE(d.violation == "");
    REQUIRE(d.completions == 1);  // every run ends: one completion
    if (cancelled) CHECK(d.result);
    if (!d.result) CHECK(d.held.size() == n);
    else CHECK(d.held.empty());
  }
}
