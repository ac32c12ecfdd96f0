// Load client for stock_server: C concurrent clients (coroutines on one thread) each send R
// "buy N" requests, spread round-robin over the servers; meanwhile one pinger per server
// measures "ping" round trips, showing that servers keep answering while buys wait for locks.
//
//   stock_client --servers host:port[,host:port...] [--item N] [--clients C] [--requests R]
//
// Prints `sold=X soldout=Y initial=I remaining=Z oversold=W` where W = X - (I - Z): the number of
// sales the store did not account for (0 when correct). Exit status: 0 if nothing was oversold
// and no request failed, 1 if oversold (W != 0 or X > I), 3 if requests failed, 2 usage.
#include <CLI/CLI.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

struct latencies {
  std::vector<double> ms;
  void add(clock_type::time_point t0) { ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count()); }
  std::string summary() {
    if (ms.empty()) return "n=0";
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
    char buf[160];
    std::snprintf(buf, sizeof buf, "n=%zu p50=%.2f ms p99=%.2f ms max=%.2f ms", ms.size(), at(0.5), at(0.99), ms.back());
    return buf;
  }
};

// One line-protocol connection.
class conn {
 public:
  explicit conn(asio::any_io_executor ex) : sock_(ex) {}
  asio::awaitable<void> open(const tcp::resolver::results_type& ep) {
    co_await asio::async_connect(sock_, ep, asio::use_awaitable);
    sock_.set_option(tcp::no_delay(true));
  }
  asio::awaitable<std::string> request(std::string line) {
    line += '\n';
    co_await asio::async_write(sock_, asio::buffer(line), asio::use_awaitable);
    auto n = co_await asio::async_read_until(sock_, asio::dynamic_buffer(buf_, 4096), '\n', asio::use_awaitable);
    std::string reply = buf_.substr(0, n - 1);
    buf_.erase(0, n);
    co_return reply;
  }

 private:
  tcp::socket sock_;
  std::string buf_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load client for stock_server"};
  std::vector<std::string> servers;
  long item = 1;
  int clients = 20, requests = 10;
  app.add_option("--servers", servers, "host:port of the stock servers (comma-separated)")->required()->delimiter(',');
  app.add_option("--item", item, "item to buy")->capture_default_str();
  app.add_option("--clients", clients, "concurrent clients")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--requests", requests, "buy requests per client")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  for (const auto& s : servers) {  // host:port with a port in 1..65535 (an empty one is a typo)
    auto colon = s.rfind(':');
    std::string port = colon == std::string::npos ? "" : s.substr(colon + 1);
    bool ok = colon != std::string::npos && colon > 0 && !port.empty() && port.size() <= 5 &&
              port.find_first_not_of("0123456789") == std::string::npos && std::stoi(port) >= 1 &&
              std::stoi(port) <= 65535;
    if (!ok) {
      std::cerr << "stock_client: --servers: bad server '" << s << "': expected host:port with a port in 1..65535\n";
      return 2;
    }
  }

  asio::io_context ioc;
  std::vector<tcp::resolver::results_type> endpoints;
  long initial = -1, remaining = -1, sold = 0, soldout = 0, failed = 0;
  std::vector<long> per_server_sold(servers.size());
  latencies buy_lat;
  std::vector<latencies> ping_lat(servers.size());
  bool load_done = false;
  int exit_code = 0;
  std::string item_s = std::to_string(item);

  auto run = [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    tcp::resolver resolver(ex);
    for (const auto& s : servers) {
      auto colon = s.rfind(':');
      endpoints.push_back(co_await resolver.async_resolve(s.substr(0, colon), s.substr(colon + 1), asio::use_awaitable));
    }
    {
      conn c(ex);
      co_await c.open(endpoints[0]);
      auto r = co_await c.request("stock " + item_s);
      try {
        initial = std::stol(r);
      } catch (...) {
        throw std::runtime_error("stock " + item_s + ": " + r);
      }
    }

    // Pingers: one per server, until the load is over.
    for (std::size_t i = 0; i < servers.size(); ++i) {
      asio::co_spawn(ex, [&, i, ex]() -> asio::awaitable<void> {
        conn c(ex);
        co_await c.open(endpoints[i]);
        asio::steady_timer t(ex);
        while (!load_done) {
          auto t0 = clock_type::now();
          auto r = co_await c.request("ping");
          if (r != "pong") throw std::runtime_error("ping: " + r);
          ping_lat[i].add(t0);
          t.expires_after(std::chrono::milliseconds(5));
          co_await t.async_wait(asio::use_awaitable);
        }
      }, asio::detached);
    }

    // Buyers.
    int running = clients;
    asio::steady_timer all_done(ex, clock_type::time_point::max());
    for (int k = 0; k < clients; ++k) {
      std::size_t i = k % servers.size();
      asio::co_spawn(ex, [&, i, ex]() -> asio::awaitable<void> {
        conn c(ex);
        co_await c.open(endpoints[i]);
        for (int r = 0; r < requests; ++r) {
          auto t0 = clock_type::now();
          auto reply = co_await c.request("buy " + item_s);
          buy_lat.add(t0);
          if (reply.rfind("ok ", 0) == 0) {
            ++sold;
            ++per_server_sold[i];
          } else if (reply == "soldout") {
            ++soldout;
          } else {
            ++failed;
            std::cerr << "server " << servers[i] << ": " << reply << "\n";
          }
        }
      }, [&](std::exception_ptr e) {
        if (e) {
          ++failed;
          try { std::rethrow_exception(e); } catch (const std::exception& x) { std::cerr << "client: " << x.what() << "\n"; }
        }
        if (--running == 0) all_done.cancel();
      });
    }
    auto t0 = clock_type::now();
    co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
    double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    load_done = true;

    conn c(ex);
    co_await c.open(endpoints[0]);
    remaining = std::stol(co_await c.request("stock " + item_s));

    std::printf("%d clients x %d requests over %zu servers in %.2f s (%.0f buys/s)\n", clients, requests,
                servers.size(), secs, clients * requests / secs);
    for (std::size_t i = 0; i < servers.size(); ++i)
      std::printf("  server %s: sold %ld; ping during load: %s\n", servers[i].c_str(), per_server_sold[i],
                  ping_lat[i].summary().c_str());
    std::printf("  buy latency: %s\n", buy_lat.summary().c_str());
    if (failed) std::printf("  failed requests: %ld\n", failed);
    long oversold = sold - (initial - remaining);
    std::printf("sold=%ld soldout=%ld initial=%ld remaining=%ld oversold=%ld\n", sold, soldout, initial, remaining,
                oversold);
    exit_code = oversold != 0 || sold > initial ? 1 : failed ? 3 : 0;
  };

  asio::co_spawn(ioc, run(), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      std::cerr << "stock_client: " << x.what() << "\n";
    }
    exit_code = 3;
    ioc.stop();
  });
  ioc.run();
  return exit_code;
}
