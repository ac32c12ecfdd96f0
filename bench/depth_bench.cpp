// zklock-depth-bench: N waiters on one lock path from ONE session (--waiter-sessions S: spread
// over S sessions of this process, waiter i on session i mod S), behind a holder of the first:
// all N acquires start at once (a burst), then the holder releases and every grant
// releases at once (the drain). Prints one line of key=value pairs (and --json FILE):
//   queue_s            burst start -> all N nodes made and every waiter waiting (nothing in flight)
//   drain_releases_per_s, drain_s
//   requests_per_release, events_per_release, cpu_us_per_release (the drain, this process)
//   kb_per_waiter      resident memory grown during the burst, per waiter
//   max_outstanding, max_queued, listings_coalesced (the sessions' windows, session_stats: the
//   most of any session, and the sum of the coalesced listings)
//   ok=0 with error=... when the burst or the drain failed (a server that died, a timeout)
// Same keys as the Curator peer's --kind depth (bench/peers/curator/CuratorBench.java).
// --sessions N instead connects N sessions in this process (one io_context) and prints
// connect_s, kb_per_session and fds_per_session (the descriptors the process holds per session).
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {
long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
double cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
double secs(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }
int open_fds() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n - 1;  // the directory's own
}

// N sessions of one process: how long they take to connect, their memory and descriptors.
int run_sessions(const std::string& connect, int n) {
  asio::io_context ioc;
  zklock::session_options o;
  o.connect = connect;
  o.session_timeout = std::chrono::seconds(30);
  o.connect_timeout = std::chrono::seconds(120);
  o.log_threshold = zklock::log_level::error;
  const long rss0 = rss_kb();
  const int fds0 = open_fds();
  std::vector<std::unique_ptr<zklock::session>> ss;
  int connected = 0, failed = 0;
  std::string error;
  const auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i) {
    ss.push_back(std::make_unique<zklock::session>(ioc.get_executor(), o));
    ss.back()->async_connect([&](zklock::error_code ec) {
      if (ec) {
        ++failed;
        if (error.empty()) error = ec.message();
      } else {
        ++connected;
      }
    });
  }
  while (connected + failed < n && ioc.run_one_for(std::chrono::seconds(5))) {
  }
  const auto t1 = clock_type::now();
  const long rss1 = rss_kb();
  const int fds1 = open_fds();
  std::printf("impl=\"zklock\" sessions=%d connected=%d failed=%d connect_s=%.3f kb_per_session=%.2f fds_per_session=%.2f%s%s\n",
              n, connected, failed, secs(t1 - t0), double(rss1 - rss0) / n, double(fds1 - fds0) / n,
              error.empty() ? "" : " error=", error.c_str());
  ss.clear();
  ioc.run_for(std::chrono::milliseconds(100));
  return failed ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zklock-depth-bench: N waiters on one path from one session, burst then drain"};
  std::string connect = "127.0.0.1:2181", path = "/zklock-bench/depth", json_file;
  int waiters = 1000;
  std::size_t window = zklock::session_options{}.max_outstanding_requests;
  double timeout_s = 300;
  int sessions = 0, drain_releases = 0, waiter_sessions = 1;
  app.add_option("--drain-releases", drain_releases,
                 "measure the drain over its first this many releases, then close the session (0: all N)");
  app.add_option("--sessions", sessions, "instead: connect this many sessions, report memory and descriptors per session");
  app.add_option("--connect", connect, "ZooKeeper hosts");
  app.add_option("--path", path, "lock path");
  app.add_option("--waiters", waiters, "acquires started at once behind the holder");
  app.add_option("--waiter-sessions", waiter_sessions, "spread the waiters over this many sessions (1)");
  app.add_option("--window", window, "session_options::max_outstanding_requests");
  app.add_option("--timeout-s", timeout_s, "give up (ok=0) after this long in all");
  app.add_option("--json", json_file, "also write the result as JSON");
  CLI11_PARSE(app, argc, argv);
  if (sessions > 0) return run_sessions(connect, sessions);

  asio::io_context ioc;
  zklock::session_options o;
  o.connect = connect;
  o.session_timeout = std::chrono::seconds(20);
  o.max_outstanding_requests = window;
  o.log_threshold = zklock::log_level::error;
  if (waiter_sessions < 1) waiter_sessions = 1;
  std::vector<std::unique_ptr<zklock::session>> ss;
  for (int i = 0; i < waiter_sessions; ++i) ss.push_back(std::make_unique<zklock::session>(ioc.get_executor(), o));
  zklock::session& s = *ss[0];
  // the sessions' counters, summed (the window's maxima: the most of any session)
  auto stats = [&ss] {
    zklock::session_stats sum;
    for (auto& x : ss) {
      auto st = x->stats();
      sum.requests_sent += st.requests_sent;
      sum.watch_events += st.watch_events;
      sum.outstanding_requests += st.outstanding_requests;
      sum.queued_requests += st.queued_requests;
      sum.listings_coalesced += st.listings_coalesced;
      sum.max_outstanding_requests = std::max(sum.max_outstanding_requests, st.max_outstanding_requests);
      sum.max_queued_requests = std::max(sum.max_queued_requests, st.max_queued_requests);
    }
    return sum;
  };
  std::vector<std::pair<std::string, std::string>> out;
  auto put = [&](const std::string& k, const std::string& v) { out.emplace_back(k, v); };
  auto num = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  put("impl", "zklock");
  put("waiters", std::to_string(waiters));
  put("window", std::to_string(window));
  put("sessions", std::to_string(waiter_sessions));
  std::string error;
  bool finished = false;
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_s));

  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        for (auto& x : ss) co_await x->async_connect(asio::use_awaitable);
        zklock::mutex head(s, path);
        auto held = co_await head.async_acquire(asio::use_awaitable);
        std::vector<std::unique_ptr<zklock::mutex>> ms;
        ms.reserve(waiters);
        for (int i = 0; i < waiters; ++i) ms.push_back(std::make_unique<zklock::mutex>(*ss[i % waiter_sessions], path));
        const long rss0 = rss_kb();
        const auto sent0 = stats().requests_sent;
        int granted = 0, failed = 0;
        bool closing = false;
        const int measured = drain_releases > 0 && drain_releases < waiters ? drain_releases : waiters;
        const auto t0 = clock_type::now();
        for (int i = 0; i < waiters; ++i)
          ms[i]->async_acquire([&](zklock::error_code ec, zklock::lock_guard g) {
            if (ec) {
              ++failed;
              if (error.empty() && !closing) error = "acquire: " + ec.message();
              return;
            }
            ++granted;
            (void)g;  // the drain: released at once, in the background (the guard's destructor)
          });
        asio::steady_timer t(ioc);
        // queued: every node made and its waiter waiting (nothing left in flight or in the window)
        for (;;) {
          auto st = stats();
          if (failed || clock_type::now() > deadline) break;
          if (st.queued_requests == 0 && st.outstanding_requests == 0) {
            auto [ec, ch] = co_await s.async_get_children(path, asio::as_tuple(asio::use_awaitable));
            if (ec) {
              error = "list: " + ec.message();
              break;
            }
            if (ch.children.size() == static_cast<std::size_t>(waiters) + 1 && stats().outstanding_requests == 0) break;
          }
          t.expires_after(std::chrono::milliseconds(5));
          co_await t.async_wait(asio::use_awaitable);
        }
        const auto t1 = clock_type::now();
        if (!error.empty() || clock_type::now() > deadline) {
          if (error.empty()) error = "queue: timed out";
          co_return;
        }
        const long rss1 = rss_kb();
        auto st1 = stats();
        put("queue_s", num(secs(t1 - t0)));
        put("kb_per_waiter", num(double(rss1 - rss0) / waiters));
        put("queue_requests", std::to_string(st1.requests_sent - sent0));
        const double c0 = cpu_s();
        const auto t2 = clock_type::now();
        { auto release = std::move(held); }  // released in the background
        while (granted < measured && failed == 0 && clock_type::now() < deadline) {
          t.expires_after(std::chrono::milliseconds(2));
          co_await t.async_wait(asio::use_awaitable);
        }
        const auto t3 = clock_type::now();
        const double c1 = cpu_s();
        auto st2 = stats();
        const int done = granted;
        if (done < measured) {
          if (error.empty()) error = "drain: " + std::to_string(done) + " of " + std::to_string(measured) + " granted";
          co_return;
        }
        put("drain_measured", std::to_string(done));
        put("drain_s", num(secs(t3 - t2)));
        put("drain_releases_per_s", num(done / secs(t3 - t2)));
        put("requests_per_release", num(double(st2.requests_sent - st1.requests_sent) / done));
        put("events_per_release", num(double(st2.watch_events - st1.watch_events) / done));
        put("cpu_us_per_release", num((c1 - c0) * 1e6 / done));
        put("max_outstanding", std::to_string(st2.max_outstanding_requests));
        put("max_queued", std::to_string(st2.max_queued_requests));
        put("listings_coalesced", std::to_string(st2.listings_coalesced));
        closing = true;  // the waiters not measured complete with session_closed
        for (auto& x : ss) co_await x->async_close(asio::use_awaitable);
      },
      [&](std::exception_ptr e) {
        finished = true;
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          if (error.empty()) error = x.what();
        }
        for (auto& x : ss) x->async_close([](zklock::error_code) {});
      });
  // Until the run is over (a listing of a deep dir may take longer than a pause here), then
  // until nothing is left to do (the sessions' closes).
  while (clock_type::now() < deadline + std::chrono::seconds(5))
    if (!ioc.run_one_for(std::chrono::milliseconds(200)) && finished) break;
  put("ok", error.empty() ? "1" : "0");
  if (!error.empty()) put("error", error);
  std::string line, json = "{";
  for (auto& [k, v] : out) {
    bool text = k == "impl" || k == "error";
    line += (line.empty() ? "" : " ") + k + "=" + (text ? "\"" + v + "\"" : v);
    json += (json.size() > 1 ? ", " : "") + ("\"" + k + "\": ") + (text ? "\"" + v + "\"" : v);
  }
  json += "}\n";
  std::cout << line << std::endl;
  if (!json_file.empty()) std::ofstream(json_file) << json;
  return error.empty() ? 0 : 1;
}
