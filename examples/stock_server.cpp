// Stock server: a line-based TCP service selling items whose stock is kept in ZooKeeper.
// Run several of these against one ZooKeeper: each "buy" takes the item's distributed lock, so
// no two servers sell the last unit twice. One thread serves every connection, every lock wait
// and the ZooKeeper session: a request waiting for a lock blocks nothing ("ping" stays fast).
//
//   stock_server --connect HOSTS [--port P] [--init ITEMS COUNT [--reset]] [--unsafe]
//                [--max-local-handoffs K] [--no-local-queue]
//
// Each item's mutex has a local queue (zklock::mutex_options::local_queue): the many
// connections buying one item wait in this process behind a single node of ours, and hand the
// lock to each other without a ZooKeeper round trip, giving it up to the other servers after K
// consecutive local grants when they wait (K = 1: as fair as one node per buyer).
//
// ZooKeeper layout: /stock/items/<N> holds item N's count in decimal; /stock/locks/<N> is the
// lock dir of item N.
//
// Protocol (one request per line, one reply per line):
//   buy N    -> "ok <remaining>" | "soldout" | "error <why>"
//   stock N  -> "<count>" | "error <why>"
//   ping     -> "pong"
//   stats    -> the server's counters and its session's lock metrics in the Prometheus text
//               format (zklock::to_prometheus: waits, holds, handoffs, timeouts, losses per
//               item lock), several lines, the last one "# EOF"
#include <zklock/metrics.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;
using zklock::error_code;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

std::optional<long> parse_long(std::string_view s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string item_path(long n) { return "/stock/items/" + std::to_string(n); }
std::string lock_path(long n) { return "/stock/locks/" + std::to_string(n); }

struct server {
  zklock::session& zk;
  bool unsafe = false;
  zklock::mutex_options lock_options;
  std::map<long, std::unique_ptr<zklock::mutex>> locks;  // one mutex object per item
  long buys = 0, sold = 0, soldout = 0, errors = 0;
  std::vector<double> lock_wait_ms;

  zklock::mutex& lock_for(long item) {
    auto& m = locks[item];
    if (!m) m = std::make_unique<zklock::mutex>(zk, lock_path(item), lock_options);
    return *m;
  }

  asio::awaitable<std::string> buy(long item) {
    ++buys;
    if (unsafe) co_return co_await sell_unlocked(item);
    auto t0 = clock_type::now();
    // Waits in the item's queue: this coroutine is suspended, the thread serves others.
    auto [ec, guard] = co_await lock_for(item).async_acquire(use_tuple);
    if (ec) {
      ++errors;
      co_return "error lock: " + ec.message();
    }
    lock_wait_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    std::string reply = co_await sell_one(item, guard);
    auto [rec] = co_await guard.async_release(use_tuple);
    if (rec) std::cerr << "release " << lock_path(item) << ": " << rec.message() << "\n";
    co_return reply;
  }

  // Under the lock: read the count, write count-1.
  asio::awaitable<std::string> sell_one(long item, zklock::lock_guard& guard) {
    auto [ec, data] = co_await zk.async_get_data(item_path(item), use_tuple);
    if (ec == zklock::zk_errc::no_node) {
      ++errors;
      co_return "error no such item";
    }
    if (ec) {
      ++errors;
      co_return "error read: " + ec.message();
    }
    auto count = parse_long(data.data);
    if (!count) {
      ++errors;
      co_return "error bad count '" + data.data + "'";
    }
    if (*count <= 0) {
      ++soldout;
      co_return "soldout";
    }
    // The write commits only if (1) our lock node still exists, i.e. our session did not expire
    // and nobody else can hold the lock, and (2) nobody wrote the count since we read it.
    // Either check failing would mean the lock was not exclusive: never sell then.
    auto ops = guard.guarded({zklock::multi_op::set_data(item_path(item), std::to_string(*count - 1), data.stat.version)});
    auto [mec, results] = co_await zk.async_multi(std::move(ops), use_tuple);
    if (mec) {
      ++errors;
      if (!results.empty() && results[0].ec == zklock::zk_errc::no_node) co_return "error lock lost before the write";
      if (mec == zklock::zk_errc::bad_version) co_return "error conflict: the count changed under our lock";
      co_return "error write: " + mec.message();
    }
    ++sold;
    co_return "ok " + std::to_string(*count - 1);
  }

  // --unsafe: what happens without the lock: read, then write blindly. Concurrent buyers
  // (on this server or another) read the same count and each sell "the last one".
  asio::awaitable<std::string> sell_unlocked(long item) {
    auto [ec, data] = co_await zk.async_get_data(item_path(item), use_tuple);
    auto count = ec ? std::nullopt : parse_long(data.data);
    if (!count) {
      ++errors;
      co_return "error read: " + (ec ? ec.message() : "bad count");
    }
    if (*count <= 0) {
      ++soldout;
      co_return "soldout";
    }
    auto [wec, st] = co_await zk.async_set_data(item_path(item), std::to_string(*count - 1), -1, use_tuple);
    if (wec) {
      ++errors;
      co_return "error write: " + wec.message();
    }
    ++sold;
    co_return "ok " + std::to_string(*count - 1);
  }

  asio::awaitable<std::string> stock(long item) {
    auto [ec, data] = co_await zk.async_get_data(item_path(item), use_tuple);
    if (ec == zklock::zk_errc::no_node) co_return "error no such item";
    if (ec) co_return "error read: " + ec.message();
    co_return data.data;
  }

  // One line, printed on SIGTERM.
  std::string summary() {
    auto w = lock_wait_ms;
    std::sort(w.begin(), w.end());
    char buf[256];
    std::snprintf(buf, sizeof buf, "buys=%ld ok=%ld soldout=%ld errors=%ld lock_wait_p50_ms=%.1f lock_wait_max_ms=%.1f",
                  buys, sold, soldout, errors, w.empty() ? 0.0 : w[w.size() / 2], w.empty() ? 0.0 : w.back());
    return buf;
  }

  // Prometheus text exposition: our counters, then what zklock counted for the item locks.
  std::string stats() {
    std::string out;
    auto counter = [&](const char* name, const char* help, long v) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
             std::to_string(v) + "\n";
    };
    counter("stock_buys_total", "Buy requests.", buys);
    counter("stock_sold_total", "Units sold.", sold);
    counter("stock_soldout_total", "Buys refused: sold out.", soldout);
    counter("stock_errors_total", "Buys that failed.", errors);
    return out + zklock::to_prometheus(zk.lock_metrics()) + "# EOF";
  }

  asio::awaitable<std::string> handle(std::string_view line) {
    auto sp = line.find(' ');
    std::string_view cmd = line.substr(0, sp);
    std::string_view arg = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
    if (cmd == "ping") co_return "pong";
    if (cmd == "stats") co_return stats();
    if (cmd == "buy" || cmd == "stock") {
      auto item = parse_long(arg);
      if (!item || *item < 0) co_return "error usage: " + std::string(cmd) + " N";
      // (no co_await inside ?: : g++ 12 miscompiles it)
      std::string reply;
      if (cmd == "buy")
        reply = co_await buy(*item);
      else
        reply = co_await stock(*item);
      co_return reply;
    }
    co_return "error unknown command";
  }

  asio::awaitable<void> serve(tcp::socket sock) {
    std::string buf;
    for (;;) {
      auto [ec, n] = co_await asio::async_read_until(sock, asio::dynamic_buffer(buf, 4096), '\n', use_tuple);
      if (ec) break;
      std::string line = buf.substr(0, n - 1);
      buf.erase(0, n);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line == "quit") break;
      std::string reply = co_await handle(line);
      reply += '\n';
      auto [wec, _] = co_await asio::async_write(sock, asio::buffer(reply), use_tuple);
      if (wec) break;
    }
  }
};

// Keeps the session alive: after an expiry, starts a new one (the lock objects stay usable).
asio::awaitable<void> keep_session(zklock::session& zk) {
  auto known = zk.state();
  for (;;) {
    auto [ec, st] = co_await zk.async_wait_state(known, use_tuple);
    if (ec) co_return;
    known = st;
    if (st == zklock::session_state::closed) co_return;
    if (st == zklock::session_state::expired) {
      std::cerr << "session expired: reconnecting\n";
      auto [cec] = co_await zk.async_connect(use_tuple);
      if (cec) std::cerr << "reconnect failed: " << cec.message() << "\n";
      known = zk.state();
    }
  }
}

asio::awaitable<void> create_if_missing(zklock::session& zk, std::string path, std::string data) {
  auto [ec, r] = co_await zk.async_create(path, std::move(data), zklock::create_mode::persistent, use_tuple);
  if (ec && ec != zklock::zk_errc::node_exists) throw boost::system::system_error(ec, "create " + path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Stock server: sells items whose stock lives in ZooKeeper, one lock per item"};
  std::string connect = "127.0.0.1:2181", bind = "127.0.0.1";
  unsigned short port = 0;
  std::vector<long> init;
  bool reset = false;
  app.add_option("--connect", connect, "ZooKeeper hosts")->capture_default_str();
  app.add_option("--bind", bind, "address to listen on")->capture_default_str();
  app.add_option("--port", port, "TCP port (0: pick a free one)")->capture_default_str();
  auto* init_opt = app.add_option("--init", init, "ITEMS COUNT: create items 1..ITEMS with COUNT each if missing")
                       ->expected(2);
  app.add_flag("--reset", reset, "with --init: set the counts even if the items exist")->needs(init_opt);
  bool unsafe = false;
  app.add_flag("--unsafe", unsafe, "sell WITHOUT the lock (blind writes), to see overselling");
  bool no_local_queue = false;
  int max_local_handoffs = 1;
  app.add_flag("--no-local-queue", no_local_queue, "one ZooKeeper node per waiting buyer (the plain mutex)");
  app.add_option("--max-local-handoffs", max_local_handoffs,
                 "consecutive local grants while another server waits for the item")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  asio::io_context ioc;  // the only thread
  zklock::session zk{ioc.get_executor(), {.connect = connect}};
  server srv{zk, unsafe};
  srv.lock_options.local_queue = !no_local_queue;
  srv.lock_options.max_local_handoffs = max_local_handoffs;
  tcp::acceptor acceptor{ioc};
  asio::signal_set signals{ioc, SIGINT, SIGTERM};
  int rc = 0;

  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    co_await zk.async_connect(asio::use_awaitable);
    if (!init.empty()) {
      co_await create_if_missing(zk, "/stock", "");
      co_await create_if_missing(zk, "/stock/items", "");
      for (long n = 1; n <= init[0]; ++n) {
        co_await create_if_missing(zk, item_path(n), std::to_string(init[1]));
        if (reset) co_await zk.async_set_data(item_path(n), std::to_string(init[1]), -1, asio::use_awaitable);
      }
    }
    asio::co_spawn(ioc, keep_session(zk), asio::detached);

    tcp::endpoint ep{asio::ip::make_address(bind), port};
    acceptor.open(ep.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(ep);
    acceptor.listen();
    std::cout << "listening on " << acceptor.local_endpoint().port() << std::endl;
    for (;;) {
      auto [ec, sock] = co_await acceptor.async_accept(use_tuple);
      if (ec == asio::error::operation_aborted) break;
      if (ec) continue;
      sock.set_option(tcp::no_delay(true));
      asio::co_spawn(ioc, srv.serve(std::move(sock)), asio::detached);
    }
  }, [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      std::cerr << "stock_server: " << x.what() << "\n";
    }
    rc = 1;
    ioc.stop();
  });

  signals.async_wait([&](error_code ec, int) {
    if (ec) return;
    std::cerr << "stock_server: " << srv.summary() << "\n";
    acceptor.close();
    zk.async_close([&](error_code) { ioc.stop(); });
  });
  ioc.run();
  return rc;
}
