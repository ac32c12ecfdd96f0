// try_lock_cost: what a failed try-lock costs. One session holds PATH; a second session calls
// mutex::async_try_acquire on it N times (each must fail with errc::lock_busy) and reports the
// latency of each try (p50, p99, mean), the requests the session sent per try
// (session::stats().requests_sent) and the write transactions the server committed per try
// (the delta of the zxid that `srvr` reports: every create and delete takes one). Uses only API
// that predates the list-first try-lock (commit 6be6f9c), so the same file builds against the
// library before it (d1fa2a7) for a before/after comparison.
//   try_lock_cost HOST:PORT [N] [PATH]       (a throwaway server: the tries are writes before)
// The srvr word goes to 127.0.0.1 or localhost only (four_letter.hpp): HOST is one of them.
#include <four_letter.hpp>  // test/support: the four-letter-word client
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

// The server's last committed zxid, from the `srvr` four-letter word ("Zxid: 0x...").
long long server_zxid(const std::string& host_port) {
  const auto reply = zklock::test::four_letter(host_port, "srvr", std::chrono::seconds(10));
  auto at = reply.find("Zxid: ");
  if (at == std::string::npos) throw std::runtime_error("no Zxid in srvr reply: " + reply);
  return std::stoll(reply.substr(at + 6), nullptr, 16);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: try_lock_cost HOST:PORT [N] [PATH]\n";
    return 2;
  }
  const std::string connect = argv[1];
  const int n = argc > 2 ? std::stoi(argv[2]) : 2000;
  const std::string path = argc > 3 ? argv[3] : "/bench/try-lock-cost";
  asio::io_context ioc;
  int status = 1;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    zklock::session_options opts;
    opts.connect = connect;
    zklock::session holder_session{ex, opts}, trier_session{ex, opts};
    co_await holder_session.async_connect(asio::use_awaitable);
    co_await trier_session.async_connect(asio::use_awaitable);
    zklock::mutex held{holder_session, path}, trier{trier_session, path};
    auto guard = co_await held.async_acquire(asio::use_awaitable);
    // One unrecorded try: the dir exists, the connection is warm.
    boost::system::error_code ec;
    co_await trier.async_try_acquire(asio::redirect_error(asio::use_awaitable, ec));

    std::vector<double> us;
    us.reserve(n);
    int not_busy = 0;
    const auto requests_before = trier_session.stats().requests_sent;
    const long long zxid_before = server_zxid(connect);
    const auto start = clock_type::now();
    for (int i = 0; i < n; ++i) {
      auto t0 = clock_type::now();
      auto g = co_await trier.async_try_acquire(asio::redirect_error(asio::use_awaitable, ec));
      us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
      if (ec != zklock::errc::lock_busy) ++not_busy;
    }
    const double wall_s = std::chrono::duration<double>(clock_type::now() - start).count();
    const long long zxid_after = server_zxid(connect);
    const auto requests = trier_session.stats().requests_sent - requests_before;
    double mean = 0;
    for (double x : us) mean += x / n;
    std::printf("tries=%d not_busy=%d p50_us=%.0f p99_us=%.0f mean_us=%.0f tries_per_s=%.0f "
                "requests_per_try=%.3f server_writes_per_try=%.3f\n",
                n, not_busy, percentile(us, 0.5), percentile(us, 0.99), mean, n / wall_s,
                static_cast<double>(requests) / n, static_cast<double>(zxid_after - zxid_before) / n);
    co_await guard.async_release(asio::use_awaitable);
    co_await trier_session.async_close(asio::use_awaitable);
    co_await holder_session.async_close(asio::use_awaitable);
    status = not_busy == 0 ? 0 : 1;
  }, [](std::exception_ptr e) {
    if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { std::cerr << "try_lock_cost: " << x.what() << "\n"; }
  });
  ioc.run();
  return status;
}
