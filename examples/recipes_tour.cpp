// A tour of the recipes beyond the mutex, each on its own session (as separate processes would
// be), all on one thread:
//   readers share a shared_mutex, a writer waits for them, a downgrade lets a reader in;
//   4 workers share a semaphore of 2 leases;
//   two transfers lock two accounts each with a multi_lock, in opposite orders, without
//   deadlock, and write them with a transaction guarded by the locks (check_op).
//   recipes_tour [HOSTS] [ROOT]
#include <zklock/multi_lock.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

struct fleet {
  std::vector<std::unique_ptr<zklock::session>> s;
  asio::awaitable<void> connect(const std::string& hosts, int n) {
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < n; ++i) {
      zklock::session_options o;
      o.connect = hosts;
      s.push_back(std::make_unique<zklock::session>(ex, o));
      co_await s.back()->async_connect(asio::use_awaitable);
    }
  }
};

asio::awaitable<void> readers_and_writer(fleet& f, std::string root) {
  auto ex = co_await asio::this_coro::executor;
  const std::string path = root + "/dataset";
  int readers = 0, max_readers = 0, entered = 0, done = 0;
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      zklock::shared_mutex m(*f.s[i], path);
      auto g = co_await m.async_acquire_shared(asio::use_awaitable);
      max_readers = std::max(max_readers, ++readers);
      ++entered;
      co_await sleep_for(300ms);
      --readers;
      co_await g.async_release(asio::use_awaitable);
      ++done;
    }, asio::detached);
  }
  while (entered < 3) co_await sleep_for(5ms);  // the three readers in (however slow the machine)
  zklock::shared_mutex w(*f.s[3], path);
  auto t0 = std::chrono::steady_clock::now();
  auto g = co_await w.async_acquire(asio::use_awaitable);  // waits for the three readers
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::cout << "shared_mutex: readers at once: " << max_readers << "; the writer waited " << waited.count()
            << " ms for them (readers inside when it got in: " << readers << ")\n";
  // a reader queues behind the write hold; the downgrade lets it in, the write side stays ours
  bool reader_in = false;
  zklock::lock_guard rg;
  asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
    zklock::shared_mutex m(*f.s[0], path);
    rg = co_await m.async_acquire_shared(asio::use_awaitable);
    reader_in = true;
  }, asio::detached);
  co_await sleep_for(200ms);
  bool before = reader_in;
  co_await g.async_downgrade(asio::use_awaitable);
  for (int i = 0; i < 100 && !reader_in; ++i) co_await sleep_for(10ms);
  std::cout << "shared_mutex: reader in before the downgrade: " << (before ? "yes" : "no")
            << ", after: " << (reader_in ? "yes" : "no") << "\n";
  co_await g.async_release(asio::use_awaitable);
  co_await rg.async_release(asio::use_awaitable);
  while (done < 3) co_await sleep_for(10ms);
}

asio::awaitable<void> semaphore_workers(fleet& f, std::string root) {
  auto ex = co_await asio::this_coro::executor;
  int inside = 0, max_inside = 0, done = 0;
  for (int i = 0; i < 4; ++i) {
    asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
      zklock::semaphore sem(*f.s[i], root + "/encoders", 2);
      for (int k = 0; k < 3; ++k) {
        auto lease = co_await sem.async_acquire(asio::use_awaitable);
        max_inside = std::max(max_inside, ++inside);
        co_await sleep_for(50ms);
        --inside;
        co_await lease.async_release(asio::use_awaitable);
      }
      ++done;
    }, asio::detached);
  }
  while (done < 4) co_await sleep_for(10ms);
  std::cout << "semaphore: 4 workers x 3 jobs, leases held at once: " << max_inside << " (max 2)\n";
}

asio::awaitable<void> transfers(fleet& f, std::string root) {
  auto ex = co_await asio::this_coro::executor;
  auto& admin = *f.s[0];
  for (auto acct : {"/acct-a", "/acct-b"}) {
    auto [ec, st] = co_await admin.async_create(root + acct, "100", zklock::create_mode::persistent,
                                                asio::as_tuple(asio::use_awaitable));
    if (ec && ec != zklock::zk_errc::node_exists) throw boost::system::system_error(ec);
    co_await admin.async_set_data(root + acct, "100", -1, asio::use_awaitable);
  }
  int done = 0;
  auto transfer = [&](int who, std::string from, std::string to, int amount) -> asio::awaitable<void> {
    auto& s = *f.s[who];
    // given in opposite orders by the two transfers: the multi_lock takes them by path
    zklock::multi_lock ml(s, std::vector<std::string>{root + "/locks" + from, root + "/locks" + to});
    for (int k = 0; k < 5; ++k) {
      auto g = co_await ml.async_acquire(asio::use_awaitable);
      auto a = co_await s.async_get_data(root + from, asio::use_awaitable);
      auto b = co_await s.async_get_data(root + to, asio::use_awaitable);
      std::vector<zklock::multi_op> ops{
          zklock::multi_op::set_data(root + from, std::to_string(std::stoi(a.data) - amount)),
          zklock::multi_op::set_data(root + to, std::to_string(std::stoi(b.data) + amount))};
      for (auto it = g.guards().rbegin(); it != g.guards().rend(); ++it) ops.insert(ops.begin(), it->check_op());
      co_await s.async_multi(std::move(ops), asio::use_awaitable);  // applies only while both locks are ours
      co_await g.async_release(asio::use_awaitable);
    }
    ++done;
  };
  asio::co_spawn(ex, transfer(1, "/acct-a", "/acct-b", 7), asio::detached);
  asio::co_spawn(ex, transfer(2, "/acct-b", "/acct-a", 3), asio::detached);
  while (done < 2) co_await sleep_for(10ms);
  auto a = co_await admin.async_get_data(root + "/acct-a", asio::use_awaitable);
  auto b = co_await admin.async_get_data(root + "/acct-b", asio::use_awaitable);
  std::cout << "multi_lock: 2 x 5 transfers in opposite orders: a=" << a.data << " b=" << b.data
            << " (expected 80 and 120, total " << std::stoi(a.data) + std::stoi(b.data) << ")\n";
}

asio::awaitable<void> run(std::string hosts, std::string root) {
  fleet f;
  co_await f.connect(hosts, 4);
  co_await readers_and_writer(f, root);
  co_await semaphore_workers(f, root);
  co_await transfers(f, root);
  for (auto& s : f.s) co_await s->async_close(asio::use_awaitable);
}

int main(int argc, char** argv) {
  if (argc > 3 || (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0))) {
    bool help = argc <= 3;
    (help ? std::cout : std::cerr) << "usage: recipes_tour [HOSTS] [ROOT]\n"
                                      "  connect to HOSTS (default 127.0.0.1:2181) and show the shared lock, the\n"
                                      "  semaphore and the multi-lock under ROOT (default /zklock-tour)\n";
    return help ? 0 : 2;
  }
  std::string hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  std::string root = argc > 2 ? argv[2] : "/zklock-tour";
  asio::io_context ioc;
  int rc = 0;
  asio::co_spawn(ioc, run(hosts, root), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const boost::system::system_error& err) {
      std::cerr << "error: " << err.code().message() << "\n";
      rc = 1;
    }
  });
  ioc.run();
  return rc;
}
