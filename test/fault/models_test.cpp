// The models (models.hpp) on hand-made histories: for each rule a history that breaks it is
// caught (by that rule), and a good one passes every rule. Times in ms from 0.
#include "history.hpp"
#include "models.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

using namespace zklock::fault;

namespace {

constexpr std::int64_t ms = 1'000'000;

struct builder {
  history h;
  explicit builder(std::string recipe = "mutex", int capacity = 1) {
    h.run.recipe = std::move(recipe);
    h.run.capacity = capacity;
    h.run.session_timeout_ns = 2000 * ms;
    h.run.liveness_margin_ns = 5000 * ms;
    h.run.end_ns = 100000 * ms;
  }
  // a granted section: acquire sent at `invoke`, granted at `grant`, stopped at `stop`
  h_acquire& section(std::string who, std::int64_t invoke, std::int64_t grant, std::int64_t stop, std::int64_t token,
                     std::string side = "exclusive") {
    h_acquire a;
    a.id = int(h.acquires.size()) + 1;
    a.process = std::move(who);
    a.side = std::move(side);
    a.invoke_ns = invoke * ms;
    a.complete_ns = grant * ms;
    a.outcome = "ok";
    a.token = token;
    a.stop_ns = stop * ms;
    h.acquires.push_back(a);
    write(a.id, grant, "ok");  // the grant's own write, as the workers send it
    return h.acquires.back();
  }
  h_acquire& failed(std::string who, std::int64_t invoke, std::int64_t complete) {
    h_acquire a;
    a.id = int(h.acquires.size()) + 1;
    a.process = std::move(who);
    a.invoke_ns = invoke * ms;
    a.complete_ns = complete * ms;
    a.outcome = complete ? "error" : "indeterminate";
    h.acquires.push_back(a);
    return h.acquires.back();
  }
  h_write& write(int acquire, std::int64_t at, std::string outcome) {
    auto& a = h.acquires[std::size_t(acquire - 1)];
    h_write w;
    w.id = int(h.writes.size()) + 1;
    w.acquire = acquire;
    w.process = a.process;
    w.token = a.token;
    w.invoke_ns = at * ms;
    w.complete_ns = at * ms + ms / 10;
    w.outcome = std::move(outcome);
    a.last_write_ns = std::max(a.last_write_ns, w.invoke_ns);
    h.writes.push_back(w);
    return h.writes.back();
  }
  h_write& znode(int acquire, std::int64_t at, std::int64_t read, std::int64_t version, std::string outcome = "ok") {
    auto& w = write(acquire, at, std::move(outcome));
    w.resource = "znode";
    w.read = read;
    w.value = read + 1;
    w.version = w.outcome == "ok" ? version : -1;
    return w;
  }
  void told(int acquire, std::int64_t at, std::string how = "status=lost") {
    auto& a = h.acquires[std::size_t(acquire - 1)];
    a.told_lost_ns = at * ms;
    a.told_how = std::move(how);
  }
};

std::vector<std::string> rules(const history& h) {
  std::vector<std::string> r;
  for (auto& v : check_models(h)) r.push_back(v.rule);
  return r;
}
bool has(const std::vector<std::string>& v, const std::string& rule) {
  return std::find(v.begin(), v.end(), rule) != v.end();
}

// a good mutex history: three holders one after the other, a znode counter incremented in turn
builder good_mutex() {
  builder b;
  b.section("a", 0, 1, 20, 10);
  b.znode(1, 10, 0, 1);
  b.section("b", 2, 25, 45, 11);
  b.znode(2, 30, 1, 2);
  b.section("c", 3, 50, 70, 12);
  b.znode(3, 60, 2, 3);
  b.h.run.heal_ns = 40 * ms;
  b.h.run.end_ns = 1000 * ms;
  return b;
}

}  // namespace

TEST_CASE("models: a good mutex history passes every rule", "[unit][fault][models]") {
  CHECK(rules(good_mutex().h).empty());
}

TEST_CASE("models: exclusion: overlapping holders, the earlier never told it lost", "[unit][fault][models]") {
  builder b;
  b.section("a", 0, 1, 30, 10);
  b.section("b", 2, 20, 40, 11);
  auto r = rules(b.h);
  CHECK(has(r, "exclusion"));
  // the same overlap, the earlier holder told it lost and nothing of it accepted late: allowed
  b.told(1, 30);
  CHECK(rules(b.h).empty());
  // ... but a write of it accepted by the register after the later holder's first write is not
  b.write(1, 25, "ok");
  CHECK(has(rules(b.h), "exclusion"));
}

TEST_CASE("models: exclusion: an overlap is excused by a loss of the holder's own, not by a refusal alone",
          "[unit][fault][models]") {
  // b granted at 20 while a held; a's write at 25 refused by the register (b wrote first)
  auto overlap = [] {
    builder b;
    b.section("a", 0, 1, 26, 10);
    b.section("b", 2, 20, 40, 11);
    b.write(1, 25, "refused");
    b.told(1, 25, "refused by the register");
    return b;
  };
  // a's guard still held it: two live holders (a lock that granted b beside a), caught
  auto b = overlap();
  CHECK(has(rules(b.h), "exclusion"));
  b.h.acquires[0].lost_cause = "not-lost(Success)";
  CHECK(has(rules(b.h), "exclusion"));
  b.h.acquires[0].lost_cause = "unknown(no lost report within 200 ms)";
  CHECK(has(rules(b.h), "exclusion"));
  // a's guard turned lost with its node deleted (an operator's delete it had not heard of yet)
  b.h.acquires[0].lost_cause = "node_deleted";
  CHECK(rules(b.h).empty());
  // a history recorded before the cause was (read_history: no such field): the older rule
  b.h.acquires[0].lost_cause = lost_cause_not_recorded;
  CHECK(rules(b.h).empty());
  // a's process stopped by the nemesis before b's grant: the refusal is the fencing's catch
  auto p = overlap();
  p.h.pauses.push_back({"a", 5 * ms, 18 * ms});
  CHECK(rules(p.h).empty());
  // a's validity passed (its own check): excused; told 3,500 ms after b's grant (T = 2 s): not
  auto v = overlap();
  v.h.writes.pop_back();
  v.h.acquires[0].stop_ns = v.h.acquires[0].last_write_ns = 3520 * ms;
  v.told(1, 3520, "status=lost");
  CHECK(has(rules(v.h), "exclusion"));
  // ... unless it was stopped for most of that time
  v.h.pauses.push_back({"a", 100 * ms, 3000 * ms});
  CHECK(rules(v.h).empty());
}

TEST_CASE("models: lock-delay: a grant sooner than lock-delay after a holder stopped past its session",
          "[unit][fault][models]") {
  builder b;
  b.h.run.lock_delay_ns = 4000 * ms;
  b.section("a", 0, 1, 6000, 10);  // stopped at 5 for 3000 ms (> T = 2000): its session ended holding
  b.h.pauses.push_back({"a", 5 * ms, 3005 * ms});
  b.told(1, 3010);
  b.section("b", 2, 2500, 2600, 11);  // granted at the expiry, with no lock-delay
  CHECK(has(rules(b.h), "lock-delay"));
  // granted lock-delay after the stop (and after the expiry): good
  b.h.acquires[1].complete_ns = 4200 * ms;
  b.h.acquires[1].stop_ns = 4300 * ms;
  b.h.writes.back().invoke_ns = 4200 * ms;
  b.h.writes.back().complete_ns = 4200 * ms + ms / 10;
  b.h.acquires[1].last_write_ns = 4200 * ms;
  CHECK(!has(rules(b.h), "lock-delay"));
  // lock-delay off, or a stop shorter than a session timeout (the holder may release after
  // it): no rule
  b.h.acquires[1].complete_ns = 2500 * ms;
  b.h.run.lock_delay_ns = 0;
  CHECK(!has(rules(b.h), "lock-delay"));
  b.h.run.lock_delay_ns = 4000 * ms;
  b.h.pauses.back().to_ns = 1500 * ms;
  CHECK(!has(rules(b.h), "lock-delay"));
}

TEST_CASE("models: exclusion: the shared lock lets readers overlap, not a writer", "[unit][fault][models]") {
  builder b("shared");
  b.section("a", 0, 1, 30, 10, "read");
  b.section("b", 2, 3, 40, 11, "read");
  CHECK(rules(b.h).empty());
  b.section("c", 4, 35, 50, 12, "write");
  CHECK(has(rules(b.h), "exclusion"));
}

TEST_CASE("models: token-order: a later grant with a lower token, two leaders of one term", "[unit][fault][models]") {
  builder b;
  b.section("a", 0, 1, 10, 11);
  b.section("b", 2, 20, 30, 10);
  CHECK(has(rules(b.h), "token-order"));
  builder e("election");
  e.section("a", 0, 1, 10, 10);
  e.section("b", 2, 20, 30, 10);
  auto v = check_models(e.h);
  REQUIRE(!v.empty());
  CHECK(v[0].rule == "token-order");
  CHECK(v[0].what.find("two leaders of one term") != std::string::npos);
}

TEST_CASE("models: permits: never more than N leases at once", "[unit][fault][models]") {
  builder b("semaphore", 2);
  b.section("a", 0, 1, 30, 10, "lease");
  b.section("b", 0, 2, 30, 11, "lease");
  CHECK(rules(b.h).empty());
  b.section("c", 0, 3, 30, 12, "lease");
  CHECK(has(rules(b.h), "permits"));
  // a holder told it lost its lease is not counted after the grant that overlaps it
  b.told(1, 25);
  CHECK(rules(b.h).empty());
  // nor one the nemesis stopped (SIGSTOP) at that grant
  b.h.acquires[0].told_lost_ns = 0;
  CHECK(has(rules(b.h), "permits"));
  b.h.pauses.push_back({"a", 2 * ms, 40 * ms});
  CHECK(rules(b.h).empty());
}

TEST_CASE("models: acted-after-lost: a write sent after the holder was told", "[unit][fault][models]") {
  builder b;
  b.section("a", 0, 1, 30, 10);
  b.write(1, 10, "ok");
  b.told(1, 15);
  CHECK(rules(b.h).empty());
  b.write(1, 20, "refused");
  CHECK(has(rules(b.h), "acted-after-lost"));
}

TEST_CASE("models: stale-write: the register accepted a lower token", "[unit][fault][models]") {
  builder b;
  b.section("a", 0, 1, 10, 10);
  b.section("b", 2, 20, 30, 11);
  CHECK(rules(b.h).empty());
  // a's token accepted after b's (in the register's order): only a broken register does that
  h_write w = b.h.writes[0];
  w.id = int(b.h.writes.size()) + 1;
  w.invoke_ns = 25 * ms;
  b.h.writes.push_back(w);
  CHECK(has(rules(b.h), "stale-write"));
}

TEST_CASE("models: lost-update: an acknowledged increment overwritten", "[unit][fault][models]") {
  auto b = good_mutex();
  // c read the value before b's acknowledged write (1, not 2), and wrote version 3
  b.h.writes.back().read = 1;
  b.h.writes.back().value = 2;
  CHECK(has(rules(b.h), "lost-update"));
  // an unacknowledged write in between (a gap in versions) is not judged
  auto g = good_mutex();
  g.h.writes.back().version = 4;
  g.h.writes.back().read = 7;
  CHECK(rules(g.h).empty());
}

TEST_CASE("models: fenced-znode: a znode write sent after a later grant was accepted", "[unit][fault][models]") {
  builder b;
  b.section("a", 0, 1, 30, 10);
  b.section("b", 2, 20, 40, 11);
  b.told(1, 25);
  b.znode(1, 22, 0, 1, "refused");
  CHECK(rules(b.h).empty());
  b.znode(1, 23, 0, 1, "ok");  // sent after b's grant, accepted: the check op would have refused it
  auto r = rules(b.h);
  CHECK(has(r, "fenced-znode"));
}

TEST_CASE("models: liveness: a waiter that never completes after the heal, or waits while the lock is free",
          "[unit][fault][models]") {
  auto b = good_mutex();
  b.failed("d", 100, 0);  // never completed, sent after the heal; the history ends 900 ms later
  CHECK(rules(b.h).empty());
  b.h.run.end_ns = 10000 * ms;  // ... but 10 s later it has not: past T + margin
  CHECK(has(rules(b.h), "liveness"));
  // a waiter that completed, but only after the lock was free longer than T + lock-delay + margin
  builder f;
  f.section("a", 0, 1, 20, 10);
  f.failed("b", 2, 7500);  // within heal + T + margin (8000 ms), but the lock was free from 20 ms
  f.h.run.heal_ns = 1000 * ms;
  f.h.run.end_ns = 9000 * ms;
  auto v = check_models(f.h);
  REQUIRE(!v.empty());
  CHECK(v[0].rule == "liveness");
  CHECK(v[0].what.find("free") != std::string::npos);
}

TEST_CASE("models: fairness: local-queue's bound, through check_fairness", "[unit][fault][models]") {
  builder b("local-queue");
  b.h.run.max_local_handoffs = 1;
  // q waits while p's node (token >> 16 == 1) grants three coroutines after its child watch fired
  b.failed("q", 0, 100);
  for (int i = 0; i < 4; ++i) {
    auto& s = b.section("p." + std::to_string(i + 1), 0, 10 + 20 * i, 20 + 20 * i, (1 << 16) | (i + 1));
    s.child_events = i;  // each grant after a further child event
  }
  CHECK(has(rules(b.h), "fairness"));
  for (auto& a : b.h.acquires) a.child_events = a.child_events < 0 ? -1 : 0;
  CHECK(!has(rules(b.h), "fairness"));
}

TEST_CASE("history: written and read back, every field", "[unit][fault][models]") {
  auto b = good_mutex();
  b.told(2, 44, "refused by the register");
  b.h.acquires[1].lost_cause = "node_deleted";
  b.h.run.seed = 17448742689877540111ull;
  b.h.run.mutant = "ignore-lost";
  b.h.pauses.push_back({"b", 30 * ms, 35 * ms});
  auto file = (std::filesystem::temp_directory_path() / "zklock-history-test.jsonl").string();
  write_history(file, b.h);
  history r = read_history(file);
  std::remove(file.c_str());
  CHECK(r.run.seed == b.h.run.seed);
  CHECK(r.run.mutant == "ignore-lost");
  REQUIRE(r.acquires.size() == b.h.acquires.size());
  REQUIRE(r.writes.size() == b.h.writes.size());
  CHECK(r.acquires[1].told_how == "refused by the register");
  CHECK(r.acquires[1].lost_cause == "node_deleted");
  CHECK(r.acquires[1].told_lost_ns == 44 * ms);
  CHECK(r.writes.back().resource == "znode");
  CHECK(r.writes.back().version == 3);
  REQUIRE(r.pauses.size() == 1);
  CHECK(r.paused_at("b.2", 31 * ms));
  CHECK(rules(r) == rules(b.h));
}

TEST_CASE("history: from the register's journal", "[unit][fault][models]") {
  // KIND WHO TOKEN t_client t_recv extra verdict
  std::vector<record> j;
  auto rec = [&](std::string kind, std::string who, std::int64_t token, std::int64_t t, std::string extra = "",
                 int verdict = 0) {
    record x;
    x.kind = std::move(kind);
    x.who = std::move(who);
    x.token = token;
    x.t_client = t * ms;
    x.t_recv = t * ms + ms / 10;
    x.extra = std::move(extra);
    x.verdict = verdict;
    j.push_back(x);
  };
  rec("acquire", "a", 0, 0);
  rec("grant", "a", 10, 1, "/l/x-lock-1 side=exclusive ev=0", 1);
  rec("write", "a", 10, 11, "", 1);
  rec("zkwrite", "a", 10, 13, "read=0 value=1 version=1 outcome=ok fenced=1 invoke=" + std::to_string(12 * ms));
  rec("acquire", "b", 0, 2);
  rec("end", "a", 10, 21, "", 1);
  rec("released", "a", 10, 22, "ok");
  rec("grant", "b", 11, 23, "/l/x-lock-2 side=exclusive ev=0", 1);
  rec("lost", "b", 11, 30, "status=lost");
  rec("lost_cause", "b", 11, 31, "session_expired");
  rec("acquire", "c", 0, 31);
  rec("acquire_error", "c", 0, 40, "'operation canceled'");
  history h = history_of(j, {});
  REQUIRE(h.acquires.size() == 3);
  CHECK(h.acquires[0].outcome == "ok");
  CHECK(h.acquires[0].token == 10);
  CHECK(h.acquires[0].stop_ns == 21 * ms);
  CHECK(h.acquires[0].node == "/l/x-lock-1");
  CHECK(h.acquires[1].complete_ns == 23 * ms);
  CHECK(h.acquires[1].told_lost_ns == 30 * ms);
  CHECK(h.acquires[1].stop_ns == 30 * ms);
  CHECK(h.acquires[1].lost_cause == "session_expired");
  CHECK(h.acquires[2].outcome == "error");
  REQUIRE(h.writes.size() == 5);
  CHECK(h.writes[2].resource == "znode");
  CHECK(h.writes[2].invoke_ns == 12 * ms);
  CHECK(h.writes[2].version == 1);
}
