// Every public header, and the main templates instantiated with the usual completion tokens, in
// one translation unit that check_headers.py compiles with -Wall -Wextra -Wshadow -Wconversion
// -pedantic -Werror under g++ and clang++ (a user's warning flags must not trip on our headers).
// It includes every header of include/zklock/ (check_headers.py fails when one is missing here).
// Not linked nor run: the functions below are only compiled (-fsyntax-only).
//
// The umbrella header comes first, alone (check_headers.py checks that it is the first include):
// the function after it names something from every public header, so <zklock/zklock.hpp> alone is
// enough for it; the headers' own includes below are then already included.
#include <zklock/zklock.hpp>

#include <string>
#include <vector>

namespace zklock_umbrella_check {

void every_header(zklock::session& s, zklock::lock_guard& g, zklock::multi_guard& mg) {
  zklock::mutex m{s, "/locks/m"};                    // mutex.hpp
  zklock::shared_mutex rw{s, "/locks/rw"};           // shared_mutex.hpp
  zklock::semaphore sem{s, "/locks/sem", 2};         // semaphore.hpp
  zklock::election e{s, "/election", "node-1"};      // election.hpp
  zklock::multi_lock ml{s, {{"/locks/a", zklock::multi_lock::side::write}}};  // multi_lock.hpp
  m.async_acquire([](zklock::error_code, zklock::lock_guard) {});
  g.async_release([](zklock::error_code) {});        // lock_guard.hpp
  mg.async_release([](zklock::error_code) {});
  zklock::async_revoke_holders(s, "/locks/a", [](zklock::error_code, std::vector<std::string>) {});  // revoke.hpp
  zklock::error_code ec = zklock::validate_lock_path("/locks/a");  // path.hpp, error.hpp
  (void)ec;
  zklock::lock_metrics_snapshot snapshot{};          // metrics.hpp
  std::string text = zklock::to_prometheus(snapshot);
  (void)text;
  zklock::node_stat stat{};                          // types.hpp
  (void)stat;
  (void)rw;
  (void)sem;
  (void)e;
  (void)ml;
}

}  // namespace zklock_umbrella_check

#include <zklock/election.hpp>
#include <zklock/error.hpp>
#include <zklock/export.hpp>
#include <zklock/lock_guard.hpp>
#include <zklock/lock_view.hpp>
#include <zklock/metrics.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/revoke.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/types.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;
using zklock::error_code;

namespace zklock_header_check {

// Callbacks: every operation of the session, a watch, every recipe and the guards.
void with_callbacks(zklock::session& s, zklock::watch& w, zklock::lock_guard& g, zklock::multi_guard& mg) {
  s.async_connect([](error_code) {});
  s.async_close([](error_code) {});
  s.async_wait_state(zklock::session_state::connected, [](error_code, zklock::session_state) {});
  s.async_create("/a", "data", zklock::create_mode::ephemeral_sequential, [](error_code, zklock::create_result) {});
  s.async_delete("/a", -1, [](error_code) {});
  s.async_exists("/a", [](error_code, std::optional<zklock::node_stat>) {});
  s.async_exists("/a", w, [](error_code, std::optional<zklock::node_stat>) {});
  s.async_get_children("/a", [](error_code, zklock::children_result) {});
  s.async_get_children("/a", w, [](error_code, zklock::children_result) {});
  s.async_get_data("/a", [](error_code, zklock::data_result) {});
  s.async_get_data("/a", w, [](error_code, zklock::data_result) {});
  s.async_set_data("/a", "data", 3, [](error_code, zklock::node_stat) {});
  s.async_multi({zklock::multi_op::check("/a", -1)}, [](error_code, std::vector<zklock::multi_result>) {});
  s.async_remove_watch(w, [](error_code) {});
  w.async_wait([](error_code, zklock::watch_event) {});

  zklock::mutex m{s, "/locks/m"};
  m.async_acquire([](error_code, zklock::lock_guard) {});
  m.async_acquire_for(std::chrono::seconds(2), [](error_code, zklock::lock_guard) {});
  m.async_try_acquire([](error_code, zklock::lock_guard) {});
  m.async_acquire(zklock::owner_id{7}, [](error_code, zklock::lock_guard) {});
  m.async_contenders([](error_code, std::vector<zklock::contender>) {});

  zklock::shared_mutex rw{s, "/locks/rw"};
  rw.async_acquire([](error_code, zklock::lock_guard) {});
  rw.async_acquire_for(std::chrono::milliseconds(500), [](error_code, zklock::lock_guard) {});
  rw.async_try_acquire([](error_code, zklock::lock_guard) {});
  rw.async_acquire(zklock::owner_id{7}, [](error_code, zklock::lock_guard) {});
  rw.async_acquire_shared([](error_code, zklock::lock_guard) {});
  rw.async_acquire_shared_for(std::chrono::milliseconds(500), [](error_code, zklock::lock_guard) {});
  rw.async_try_acquire_shared([](error_code, zklock::lock_guard) {});
  rw.async_acquire_shared(zklock::owner_id{7}, [](error_code, zklock::lock_guard) {});
  rw.async_contenders([](error_code, std::vector<zklock::contender>) {});

  zklock::election e{s, "/election", "node-1"};
  e.async_campaign([](error_code, zklock::leadership) {});
  e.async_campaign_for(std::chrono::seconds(1), [](error_code, zklock::leadership l) {
    l.async_resign([](error_code) {});
  });
  e.async_leader([](error_code, std::optional<zklock::leader_info>) {});
  e.async_observe(std::nullopt, [](error_code, std::optional<zklock::leader_info>) {});

  zklock::semaphore sem{s, "/locks/sem", 2};
  sem.async_acquire([](error_code, zklock::lock_guard) {});
  sem.async_acquire_for(std::chrono::seconds(1), [](error_code, zklock::lock_guard) {});
  sem.async_try_acquire([](error_code, zklock::lock_guard) {});
  sem.async_leases([](error_code, std::vector<zklock::contender>) {});

  zklock::multi_lock ml{s, {{"/locks/a", zklock::multi_lock::side::read}, {"/locks/b", zklock::multi_lock::side::write}}};
  zklock::multi_lock ml_paths{s, std::vector<std::string>{"/locks/a", "/locks/b"}};
  ml.async_acquire([](error_code, zklock::multi_guard) {});
  ml_paths.async_acquire_for(std::chrono::seconds(1), [](error_code, zklock::multi_guard) {});
  mg.async_release([](error_code) {});

  g.async_wait_lost(asio::bind_cancellation_slot(g.lost_slot(), [](error_code) {}));
  g.async_wait_deadline(std::chrono::seconds(1), [](error_code) {});
  g.async_wait_revoked([](error_code) {});
  zklock::async_request_revoke(s, "/locks/a/_c_x-lock-0000000001", [](error_code) {});
  zklock::async_revoke_holders(s, "/locks/a", [](error_code, std::vector<std::string>) {});
  zklock::async_revoke_holders(s, "/sem/leases", 3, [](error_code, std::vector<std::string>) {});
  g.async_downgrade([](error_code) {});
  g.async_release([](error_code) {});
}

// Coroutines: use_awaitable, and the default token (deferred) awaited.
asio::awaitable<void> with_awaitable(zklock::session& s) {
  co_await s.async_connect(asio::use_awaitable);
  zklock::watch w;
  auto stat = co_await s.async_exists("/a", w, asio::use_awaitable);
  if (stat) co_await w.async_wait(asio::use_awaitable);
  zklock::mutex m{s, "/locks/m"};
  auto g = co_await m.async_acquire(asio::use_awaitable);
  std::vector<zklock::multi_op> ops{zklock::multi_op::set_data("/data", "1")};  // g++ 12: no braced list in a co_await
  co_await s.async_multi(g.guarded(std::move(ops)), asio::use_awaitable);
  co_await g.async_release(asio::use_awaitable);
  zklock::shared_mutex rw{s, "/locks/rw"};
  auto r = co_await rw.async_acquire_shared_for(std::chrono::seconds(1), asio::use_awaitable);
  zklock::semaphore sem{s, "/locks/sem", 2};
  auto lease = co_await sem.async_try_acquire(asio::use_awaitable);
  zklock::multi_lock ml{s, std::vector<std::string>{"/locks/a", "/locks/b"}};
  auto all = co_await ml.async_acquire(asio::use_awaitable);
  co_await all.async_release(asio::use_awaitable);
  co_await s.async_close(asio::use_awaitable);
}

asio::awaitable<void> with_deferred(zklock::session& s) {
  co_await s.async_connect();  // the session's default token: asio::deferred
  auto children = co_await s.async_get_children("/locks", asio::deferred);
  zklock::mutex m{s, "/locks/m"};
  auto g = co_await m.async_try_acquire();
  co_await g.async_downgrade(asio::deferred);
  co_await g.async_wait_lost();
  co_await g.async_wait_deadline(std::chrono::milliseconds(500));
  co_await g.async_wait_revoked();
  auto revoked = co_await zklock::async_revoke_holders(s, "/locks/a");
  (void)revoked;
  co_await zklock::async_request_revoke(s, "/locks/a/_c_x-lock-0000000001");
  zklock::shared_mutex rw{s, "/locks/rw"};
  auto w = co_await rw.async_acquire(asio::deferred);
  zklock::semaphore sem{s, "/locks/sem", 2};
  auto leases = co_await sem.async_leases();
  zklock::multi_lock ml{s, std::vector<std::string>{"/locks/a"}};
  auto all = co_await ml.async_acquire_for(std::chrono::seconds(1), asio::deferred);
  co_await all.async_release();
}

// Objects whose operations need no token, and use_future.
asio::awaitable<void> with_default_tokens(asio::io_context& ioc) {
  using awaitable_session = asio::use_awaitable_t<>::as_default_on_t<zklock::session>;
  using awaitable_mutex = asio::use_awaitable_t<>::as_default_on_t<zklock::mutex>;
  awaitable_session s{ioc, zklock::session_options{}};
  co_await s.async_connect();
  awaitable_mutex m{s, "/locks/m"};
  auto g = co_await m.async_acquire();
  auto moved = asio::use_awaitable.as_default_on(zklock::mutex{s, "/locks/n"});
  auto g2 = co_await moved.async_try_acquire();
  auto other = asio::use_awaitable.as_default_on(zklock::session{ioc});
  auto rw = asio::use_awaitable_t<>::as_default_on_t<zklock::shared_mutex>{s, "/locks/rw"};
  auto r = co_await rw.async_acquire_shared();
  auto sem = asio::use_awaitable_t<>::as_default_on_t<zklock::semaphore>{s, "/locks/sem", 2};
  auto lease = co_await sem.async_acquire();
  auto ml = asio::use_awaitable_t<>::as_default_on_t<zklock::multi_lock>{s, std::vector<std::string>{"/a"}};
  auto all = co_await ml.async_acquire();
}

void with_future(zklock::session& s) {
  zklock::mutex m{s, "/locks/m"};
  std::future<zklock::lock_guard> f = m.async_acquire(asio::use_future);
  (void)f;
}

}  // namespace zklock_header_check
