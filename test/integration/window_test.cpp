// The session's window of outstanding requests (session_options::max_outstanding_requests)
// against a real server: a burst never exceeds it, waiting listings coalesce, and what waits
// in it completes when cancelled or when the session closes. Requests are counted, never timed.
#include "common.hpp"

#include "engine/session_impl.hpp"

#include <zklock/mutex.hpp>

using namespace zklock;

namespace {
session_options windowed(const std::string& connect, std::size_t window) {
  auto o = options_for(connect);
  o.max_outstanding_requests = window;
  return o;
}
}  // namespace

TEST_CASE_METHOD(server_fixture, "a burst of 3,000 acquires on one session never has more than the window outstanding",
                 "[integration][window]") {
  constexpr int n = 3000;
  constexpr std::size_t window = 64;
  auto& s = connect(windowed(srv.connect_string(), window));
  auto& observer = connect();
  run_test(
      ioc,
      [&]() -> asio::awaitable<void> {
        mutex head(s, "/locks/burst");
        auto g = co_await head.async_acquire(asio::use_awaitable);
        const auto sent_before = s.stats().requests_sent;
        std::vector<std::unique_ptr<mutex>> ms;
        int completed = 0;
        std::vector<error_code> errors;
        for (int i = 0; i < n; ++i) {
          ms.push_back(std::make_unique<mutex>(s, "/locks/burst"));
          ms.back()->async_acquire([&](error_code ec, lock_guard) {
            ++completed;
            errors.push_back(ec);
          });
        }
        // every contender's node is made and every one waits behind the holder
        for (;;) {
          auto ch = co_await observer.async_get_children("/locks/burst", asio::use_awaitable);
          if (ch.children.size() == n + 1) break;
          co_await sleep_for(50ms);
        }
        co_await sleep_for(300ms);  // their listings and watches answered
        auto st = s.stats();
        CHECK(completed == 0);
        CHECK(st.max_outstanding_requests <= window);
        CHECK(st.max_outstanding_requests == window);  // the burst filled it
        CHECK(st.max_queued_requests > n / 2);
        CHECK(st.listings_coalesced > 0);
        // a create and a listing each at most, and the watches: fewer listings than contenders
        CHECK(st.requests_sent - sent_before < 4u * n);
        // the holder's session ends: every waiter completes, and their nodes go with it
        co_await s.async_close(asio::use_awaitable);
        while (completed < n) co_await sleep_for(10ms);
        for (auto& ec : errors) CHECK(ec == condition::session_lost);
        auto left = co_await observer.async_get_children("/locks/burst", asio::use_awaitable);
        CHECK(left.children.empty());
      },
      120s);
}

TEST_CASE_METHOD(server_fixture, "listings that wait in the window coalesce and are answered after the creates before them",
                 "[integration][window]") {
  auto& s = connect(windowed(srv.connect_string(), 1));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_create("/coalesce", "", create_mode::persistent, asio::use_awaitable);
    const auto sent_before = s.stats().requests_sent;
    std::vector<std::string> first, second;
    int done = 0;
    s.async_get_data("/coalesce", [&](error_code, data_result) { ++done; });  // fills the window
    s.async_create("/coalesce/a", "", create_mode::ephemeral, [&](error_code ec, create_result) {
      CHECK_FALSE(ec);
      ++done;
    });
    s.async_get_children("/coalesce", [&](error_code ec, children_result r) {
      CHECK_FALSE(ec);
      first = r.children;
      ++done;
    });
    s.async_create("/coalesce/b", "", create_mode::ephemeral, [&](error_code ec, create_result) {
      CHECK_FALSE(ec);
      ++done;
    });
    s.async_get_children("/coalesce", [&](error_code ec, children_result r) {
      CHECK_FALSE(ec);
      second = r.children;
      ++done;
    });
    while (done < 5) co_await sleep_for(1ms);
    std::sort(first.begin(), first.end());
    std::sort(second.begin(), second.end());
    CHECK(second == std::vector<std::string>{"a", "b"});
    CHECK(first == second);  // one listing, sent after both creates
    CHECK(s.stats().requests_sent - sent_before == 4);
    CHECK(s.stats().listings_coalesced == 1);
    CHECK(s.stats().max_outstanding_requests == 1);
  });
}

TEST_CASE_METHOD(server_fixture, "the engine's askers of a coalesced listing share its one result and a caller of async_get_children gets a copy",
                 "[integration][window]") {
  auto& s = connect(windowed(srv.connect_string(), 3));  // (a listing takes 3 askers then)
  auto engine = zklock::detail::access::impl(s);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_create("/shared", "", create_mode::persistent, asio::use_awaitable);
    co_await s.async_create("/shared/a", "", create_mode::ephemeral, asio::use_awaitable);
    std::vector<zklock::detail::shared_children> shared;
    children_result copy;
    int done = 0;
    for (int i = 0; i < 3; ++i) s.async_get_data("/shared", [&](error_code, data_result) { ++done; });  // fill the window
    auto ask = [&] {
      engine->get_children("/shared", nullptr, zklock::detail::shared_children_handler([&](error_code ec, zklock::detail::shared_children r) {
                             CHECK_FALSE(ec);
                             shared.push_back(r);
                             ++done;
                           }));
    };
    ask();
    s.async_get_children("/shared", [&](error_code ec, children_result r) {
      CHECK_FALSE(ec);
      copy = std::move(r);
      ++done;
    });
    ask();
    while (done < 6) co_await sleep_for(1ms);
    CHECK(s.stats().listings_coalesced == 2);
    REQUIRE(shared.size() == 2);
    REQUIRE(shared[0]);
    CHECK(shared[0] == shared[1]);  // one result, not a copy per asker
    CHECK(shared[0]->children == std::vector<std::string>{"a"});
    CHECK(copy.children == shared[0]->children);
    CHECK(&copy.children != &shared[0]->children);
  });
}

TEST_CASE_METHOD(server_fixture, "a request cancelled while it waits in the window is never sent",
                 "[integration][window]") {
  auto& s = connect(windowed(srv.connect_string(), 1));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    const auto sent_before = s.stats().requests_sent;
    int done = 0;
    error_code waited;
    s.async_exists("/", [&](error_code, std::optional<node_stat>) { ++done; });  // fills the window
    asio::cancellation_signal cancel;
    s.async_get_data("/", asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, data_result) {
                       waited = ec;
                       ++done;
                     }));
    cancel.emit(asio::cancellation_type::total);
    while (done < 2) co_await sleep_for(1ms);
    co_await sleep_for(50ms);
    CHECK(waited == asio::error::operation_aborted);
    CHECK(s.stats().requests_sent - sent_before == 1);
  });
}

TEST_CASE_METHOD(server_fixture, "requests waiting in the window fail with session_closed when the session closes",
                 "[integration][window]") {
  auto& s = connect(windowed(srv.connect_string(), 4));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    constexpr int n = 500;
    int done = 0, closed = 0;
    for (int i = 0; i < n; ++i)
      s.async_exists("/", [&](error_code ec, std::optional<node_stat>) {
        ++done;
        if (ec == errc::session_closed) ++closed;
      });
    co_await s.async_close(asio::use_awaitable);
    while (done < n) co_await sleep_for(1ms);
    CHECK(closed >= n - 4);  // all but those the C client held (it fails them as it closes)
    CHECK(s.stats().requests_sent <= 4u + 1);
  });
}

TEST_CASE_METHOD(proxied_fixture, "a drain of 300 waiters on one session: no listing on a handoff",
                 "[integration][window][depth]") {
  // The waiters' windows (K = 2) move along the session's view of the dir (src/sansio/dir_view.hpp):
  // once every waiter has its listing and watches, no release makes anyone list the dir again.
  // Listings are counted by the proxy (getChildren2 on the dir), never timed.
  constexpr int n = 300;
  const std::string path = "/locks/depth";
  auto& s = connect_proxied();
  auto& holder = connect();
  run_test(
      ioc,
      [&]() -> asio::awaitable<void> {
        mutex head(holder, path);
        auto g = co_await head.async_acquire(asio::use_awaitable);
        mutex_options o;
        o.watched_blockers = 2;
        std::vector<std::unique_ptr<mutex>> ms;
        int granted = 0, released = 0;
        std::vector<error_code> errors;
        for (int i = 0; i < n; ++i) {
          ms.push_back(std::make_unique<mutex>(s, path, o));
          ms.back()->async_acquire([&](error_code ec, lock_guard g) {
            ++granted;
            if (ec) errors.push_back(ec);
            g.async_release([&](error_code) { ++released; });
          });
        }
        for (;;) {  // the queue formed: every node made, every listing and watch answered
          auto ch = co_await holder.async_get_children(path, asio::use_awaitable);
          auto st = s.stats();
          if (ch.children.size() == n + 1 && st.outstanding_requests == 0 && st.queued_requests == 0) break;
          co_await sleep_for(50ms);
        }
        co_await sleep_for(200ms);
        proxy.count_requests(12, path);  // getChildren2 of the dir
        const auto sent_before = s.stats().requests_sent;
        co_await g.async_release(asio::use_awaitable);
        while (released < n) co_await sleep_for(10ms);
        CHECK(errors.empty());
        CHECK(granted == n);
        CHECK(proxy.requests_counted() == 0);
        const double per_release = double(s.stats().requests_sent - sent_before) / n;
        INFO("requests per release: " << per_release);
        CHECK(per_release < 4);  // the release's delete, a watch as the window moves, a check now and then
        auto left = co_await holder.async_get_children(path, asio::use_awaitable);
        CHECK(left.children.empty());
      },
      120s);
}
