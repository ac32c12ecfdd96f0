// The Asio contract of the API, each against a real server: handlers never run inline, a pending
// operation keeps its handler's io_context running, a guard destroyed anywhere releases through
// the session's executor, a deferred release survives a move, total cancellation is refused on
// the wire, default tokens, the handler's associated allocator, teardown with a release in flight.
#include "common.hpp"

#include <zklock/multi_lock.hpp>

#include <future>
#include <thread>

using namespace zklock;
using zklock::test::zk_server;

namespace {
// Starts an operation by `start(handler)`: its handler must not run inside start(); once `ioc`
// runs (for `limit` at most) it must have run, with `want`.
template <class Start>
void check_not_inline(asio::io_context& ioc, Start start, error_code want, std::chrono::seconds limit) {
  bool ran = false;
  start([&](error_code ec, auto&&...) {
    CHECK(ec == want);
    ran = true;
  });
  CHECK_FALSE(ran);
  ioc.restart();
  ioc.run_for(limit);
  CHECK(ran);
}
}  // namespace

TEST_CASE_METHOD(server_fixture, "handlers never run inside the initiating function", "[integration][promise]") {
  auto s = std::make_unique<session>(ioc.get_executor(), options_for(srv.connect_string()));
  watch w;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s->async_connect(asio::use_awaitable);
    co_await s->async_exists("/nothing", w, asio::use_awaitable);
  }());
  s.reset();  // the watch outlives its session

  lock_guard empty;
  check_not_inline(
      ioc, [&](auto handler) { empty.async_release(asio::bind_executor(ioc, std::move(handler))); },
      errc::already_released, 2s);
  check_not_inline(ioc, [&](auto handler) { w.async_wait(std::move(handler)); }, errc::session_closed, 2s);

  // a guard released twice: the second completes later too
  session s2(ioc.get_executor(), options_for(srv.connect_string()));
  lock_guard g;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s2.async_connect(asio::use_awaitable);
    mutex m(s2, "/locks/inline");
    g = co_await m.async_acquire(asio::use_awaitable);
    co_await g.async_release(asio::use_awaitable);
  }());
  check_not_inline(ioc, [&](auto handler) { g.async_release(std::move(handler)); }, errc::already_released, 1s);
}

TEST_CASE_METHOD(server_fixture, "a pending operation keeps its handler's io_context running", "[integration][promise]") {
  // The handler runs on another io_context than the session's: that one must not run out of
  // work (and return from run()) while the acquire waits.
  asio::io_context handler_ioc;
  auto& holder_s = connect();
  auto& s = connect();
  lock_guard holder;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex hm(holder_s, "/locks/work");
    holder = co_await hm.async_acquire(asio::use_awaitable);
  }());
  mutex m(s, "/locks/work");
  std::atomic<bool> handler_ran{false};
  lock_guard got;
  m.async_acquire(asio::bind_executor(handler_ioc, [&](error_code ec, lock_guard g) {
    CHECK_FALSE(ec);
    got = std::move(g);
    handler_ran = true;
  }));
  std::atomic<bool> ran_before_return{false};
  std::thread t([&] {
    handler_ioc.run();  // returns only when no work is left: after the handler
    ran_before_return = handler_ran.load();
  });
  ioc.run_for(300ms);
  CHECK_FALSE(handler_ran);
  holder.async_release(asio::detached);
  for (int i = 0; i < 100 && !handler_ran; ++i) ioc.run_for(100ms);
  t.join();
  CHECK(ran_before_return);
  // the guard's release needs the session's loop
  asio::post(ioc, [g = std::move(got)]() mutable {});
  ioc.run_for(500ms);
}

TEST_CASE_METHOD(server_fixture, "a guard destroyed on another thread releases through the session's executor", "[integration][promise]") {
  auto work = asio::make_work_guard(ioc);
  session s(ioc.get_executor(), options_for(srv.connect_string()));
  session observer(ioc.get_executor(), options_for(srv.connect_string()));
  std::thread loop([&] { ioc.run(); });
  asio::co_spawn(ioc, s.async_connect(asio::use_awaitable), asio::use_future).get();
  asio::co_spawn(ioc, observer.async_connect(asio::use_awaitable), asio::use_future).get();
  mutex m(s, "/locks/threads");
  // The session is busy on its thread meanwhile (as a server's would be), so a destructor that
  // touched it from here would race with the loop (ThreadSanitizer: the tsan preset).
  std::atomic<bool> busy{true};
  auto traffic = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        while (busy) co_await s.async_exists("/locks", asio::use_awaitable);
      },
      asio::use_future);
  for (int i = 0; i < 20; ++i) {
    std::future<lock_guard> f = asio::co_spawn(ioc, m.async_acquire(asio::use_awaitable), asio::use_future);
    lock_guard g = f.get();  // received on this thread
    CHECK(g.node_path().starts_with("/locks/threads/"));
  }  // destroyed here, while the loop runs on the other thread
  busy = false;
  traffic.get();
  auto empty = asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<bool> {
        co_await until_children(observer, "/locks/threads", 0);
        co_return true;
      },
      asio::use_future);
  CHECK(empty.get());
  work.reset();
  asio::post(ioc, [&] { ioc.stop(); });
  loop.join();
}

TEST_CASE_METHOD(server_fixture, "a deferred release captures the hold: the guard may move before it is launched", "[integration][promise]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/deferred");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    auto release = g.async_release();  // deferred: not launched yet
    CHECK(g.status() == lock_status::released);
    lock_guard moved = std::move(g);
    auto [ec] = co_await std::move(release)(tuple_awaitable);
    CHECK_FALSE(ec);
    CHECK(co_await children_of(s, "/locks/deferred") == 0);
    CHECK_FALSE(moved.owns_lock());

    // a deferred release never launched still releases
    auto g2 = co_await m.async_acquire(asio::use_awaitable);
    { auto never = g2.async_release(); }
    co_await until_children(s, "/locks/deferred", 0);
  }());
}

TEST_CASE_METHOD(server_fixture, "total cancellation is refused for a request on the wire, terminal is honoured", "[integration][promise][cancel]") {
  auto& s = connect();
  run_test(ioc, [&]() -> asio::awaitable<void> {
    for (auto type : {asio::cancellation_type::total, asio::cancellation_type::terminal}) {
      asio::cancellation_signal sig;
      std::optional<error_code> got;
      std::string path;
      s.async_create("/cancel-" + std::to_string(static_cast<int>(type)), "", create_mode::persistent,
                     asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, create_result r) {
                       got = ec;
                       path = r.path;
                     }));
      sig.emit(type);
      while (!got) co_await sleep_for(1ms);
      if (type == asio::cancellation_type::total) {
        CHECK_FALSE(*got);  // completed with the create's real outcome
        CHECK_FALSE(path.empty());
      } else {
        CHECK(*got == asio::error::operation_aborted);
      }
    }
  }());
}

TEST_CASE_METHOD(server_fixture, "as_default_on_t: a session and a mutex whose operations default to use_awaitable", "[integration][promise]") {
  // its own sessions: of another type than the fixture's, and connected by the test
  using awaitable_session = asio::use_awaitable_t<>::as_default_on_t<zklock::session>;
  using awaitable_mutex = asio::use_awaitable_t<>::as_default_on_t<zklock::mutex>;
  awaitable_session s(ioc, options_for(srv.connect_string()));  // from an execution context
  zklock::session plain(ioc.get_executor(), options_for(srv.connect_string()));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect();  // no token
    awaitable_mutex m(s, "/locks/default-token");
    lock_guard g = co_await m.async_acquire();
    CHECK(g.owns_lock());
    CHECK((co_await m.async_contenders()).size() == 1);
    co_await g.async_release(asio::use_awaitable);
    // a session of the plain type converts
    auto converted = asio::use_awaitable_t<>::as_default_on(std::move(plain));
    co_await converted.async_connect();
    CHECK(is_connected(converted.state()));
    CHECK(converted.stats().requests_sent == 0);
    co_await s.async_close();
  }());
}

namespace {

// Counts what goes through a handler's associated allocator.
struct alloc_counts {
  int allocations = 0;
  long live_bytes = 0;
};

template <class T>
struct counting_allocator {
  using value_type = T;
  alloc_counts* counts;
  explicit counting_allocator(alloc_counts* c) noexcept : counts(c) {}
  template <class U>
  counting_allocator(const counting_allocator<U>& o) noexcept : counts(o.counts) {}
  T* allocate(std::size_t n) {
    ++counts->allocations;
    counts->live_bytes += static_cast<long>(n * sizeof(T));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    counts->live_bytes -= static_cast<long>(n * sizeof(T));
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const counting_allocator<U>& o) const noexcept { return counts == o.counts; }
};

}  // namespace

TEST_CASE_METHOD(server_fixture, "a handler's associated allocator stores the handler and is paid back before it runs",
          "[integration][promise]") {
  // Asio's rule: memory from the associated allocator is deallocated before the handler is
  // invoked. Each operation here completes with a handler bound to a counting allocator; in the
  // handler, everything allocated through it must be back.
  auto& s = connect();
  auto& other = connect();

  struct probe {
    alloc_counts counts;
    bool ran = false;
    long live_at_upcall = -1;
    void operator()() {
      ran = true;
      live_at_upcall = counts.live_bytes;
    }
  };
  auto check = [](const probe& p, const char* what) {
    INFO(what);
    CHECK(p.ran);
    CHECK(p.counts.allocations > 0);   // the allocator was used ...
    CHECK(p.live_at_upcall == 0);      // ... and paid back before the upcall
    CHECK(p.counts.live_bytes == 0);
  };
  auto run_until = [&](const probe& p) {
    for (int i = 0; i < 100 && !p.ran; ++i) ioc.run_for(50ms);
  };

  probe read;
  s.async_exists("/zookeeper", asio::bind_allocator(counting_allocator<void>(&read.counts),
                                                    [&](error_code ec, std::optional<node_stat>) {
                                                      CHECK_FALSE(ec);
                                                      read();
                                                    }));
  run_until(read);
  check(read, "async_exists");

  // an acquire that waits behind another session's holder, then is granted
  mutex theirs(other, "/locks/alloc"), ours(s, "/locks/alloc");
  lock_guard held, got;
  run_test(ioc, [&]() -> asio::awaitable<void> { held = co_await theirs.async_acquire(asio::use_awaitable); }());
  probe acquire;
  ours.async_acquire(asio::bind_allocator(counting_allocator<void>(&acquire.counts), [&](error_code ec, lock_guard g) {
    CHECK_FALSE(ec);
    got = std::move(g);
    acquire();
  }));
  ioc.run_for(200ms);
  CHECK_FALSE(acquire.ran);
  held.async_release(asio::detached);
  run_until(acquire);
  check(acquire, "async_acquire after a wait");

  probe release;
  got.async_release(asio::bind_allocator(counting_allocator<void>(&release.counts), [&](error_code ec) {
    CHECK_FALSE(ec);
    release();
  }));
  run_until(release);
  check(release, "async_release");

  // a cancelled acquire: completes while its cleanup may still be under way
  run_test(ioc, [&]() -> asio::awaitable<void> { held = co_await theirs.async_acquire(asio::use_awaitable); }());
  probe cancelled;
  asio::cancellation_signal sig;
  ours.async_acquire(asio::bind_allocator(counting_allocator<void>(&cancelled.counts),
                                          asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lock_guard) {
                                            CHECK(ec == asio::error::operation_aborted);
                                            cancelled();
                                          })));
  ioc.run_for(100ms);
  sig.emit(asio::cancellation_type::terminal);
  run_until(cancelled);
  check(cancelled, "a cancelled async_acquire");
  held.async_release(asio::detached);
  ioc.run_for(300ms);
}

TEST_CASE("a session and its io_context destroyed while a release is in flight leave nothing alive",
          "[integration][promise]") {
  // A guard's release owes the server a delete until the reply; the engine keeps the hold
  // alive for it. When the session is destroyed and its io_context is never run again (a
  // program's teardown), that must not leave the hold and the engine keeping each other alive.
  zk_server srv;
  std::weak_ptr<detail::session_impl> engine;
  {
    asio::io_context ioc;
    {
      session s(ioc.get_executor(), options_for(srv.connect_string()));
      engine = detail::access::impl(s);
      lock_guard g;
      run_test(ioc, [&]() -> asio::awaitable<void> {
        co_await s.async_connect(asio::use_awaitable);
        mutex m(s, "/locks/teardown");
        g = co_await m.async_acquire(asio::use_awaitable);
      }());
      g = lock_guard{};  // posts the release
      ioc.poll();        // sends it; the reply is not read
      CHECK_FALSE(engine.expired());
    }  // the session closes
  }    // the io_context goes without running again
  CHECK(engine.expired());
}

TEST_CASE_METHOD(server_fixture, "an empty multi_lock completes through the session's executor and never inline", "[integration][promise][multi]") {
  // It used to complete with path_empty through asio::system_executor: a handler with no
  // executor of its own ran on the system executor's thread, not in the session's io_context.
  session s(ioc.get_executor(), options_for(srv.connect_string()));
  multi_lock none(s, std::vector<std::string>{});
  std::atomic<bool> done{false};
  bool on_session_executor = false;
  error_code got;
  none.async_acquire([&](error_code ec, multi_guard) {
    got = ec;
    on_session_executor = ioc.get_executor().running_in_this_thread();
    done = true;
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(done);  // not inline, and not before the io_context runs
  ioc.run_for(1s);
  REQUIRE(done);
  CHECK(got == errc::path_empty);
  CHECK(on_session_executor);
}
