// Faults of the session engine that the proxies of the other tests do not make:
// a server that is killed or a port that refuses while requests are in flight, fd exhaustion,
// several sessions and a user socket on one io_context while a connection dies inside a send,
// an authentication the server rejects.
#include "common.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <list>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace zklock;

namespace {

// The C client's log and zklock's own, as the session's sink receives them.
struct log_lines {
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  log_sink sink() const {
    return [l = lines](log_level, std::string_view m) { l->emplace_back(m); };
  }
  std::size_t size() const { return lines->size(); }
  int count(std::string_view needle, std::size_t from = 0) const {
    int n = 0;
    for (std::size_t i = from; i < lines->size(); ++i)
      if ((*lines)[i].find(needle) != std::string::npos) ++n;
    return n;
  }
  std::string dump(std::size_t from = 0) const {
    std::string out;
    for (std::size_t i = from; i < lines->size(); ++i) out += (*lines)[i] + "\n";
    return out;
  }
};

// options_for with the session's log in `log`: the C client's own lines, at their own level,
// from `threshold` up.
session_options logged_options(const std::string& connect, std::chrono::milliseconds session_timeout,
                               const log_lines& log, log_level threshold) {
  auto opts = options_for(connect, session_timeout);
  opts.log = log.sink();
  opts.summarize_client_log = false;
  opts.log_threshold = threshold;
  return opts;
}

std::set<int> open_fds() {
  std::set<int> fds;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    int own = ::dirfd(d);
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.' && std::atoi(e->d_name) != own) fds.insert(std::atoi(e->d_name));
    ::closedir(d);
  }
  return fds;
}

// Fills the process's fd table, so that socket() fails with EMFILE: lowers RLIMIT_NOFILE to
// just above the highest open fd and takes every free fd below it. top_up() takes the fds
// freed since. The destructor gives everything back.
class fd_exhaustion {
 public:
  fd_exhaustion() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    auto fds = open_fds();
    rlimit lim = saved_;
    lim.rlim_cur = (fds.empty() ? 0 : *fds.rbegin()) + 1;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    top_up();
  }
  ~fd_exhaustion() {
    for (int fd : fillers_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  fd_exhaustion(const fd_exhaustion&) = delete;
  fd_exhaustion& operator=(const fd_exhaustion&) = delete;
  void top_up() {
    for (;;) {
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fillers_.push_back(fd);
    }
  }

 private:
  rlimit saved_{};
  std::vector<int> fillers_;
};

// The engine's warning when the C client closed its socket inside a request call.
constexpr std::string_view dropped_in_send = "the ZooKeeper connection failed while a request was sent";

// Requests sent at once, before the loop has seen the connection's end: their send() fails
// and the C client closes the socket inside the call (nonblocking_send).
void send_requests(session& s, int n, int* replies = nullptr) {
  for (int i = 0; i < n; ++i)
    s.async_exists("/zookeeper", [replies](error_code, std::optional<node_stat>) {
      if (replies) ++*replies;
    });
}

// An echo server on 127.0.0.1, on the test's io_context, for a user's sockets.
struct echo_pair {
  asio::ip::tcp::acceptor acceptor;
  explicit echo_pair(asio::any_io_executor ex) : acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0}) {}
  // Serves one connection.
  asio::awaitable<void> serve() {
    auto served = co_await acceptor.async_accept(asio::use_awaitable);
    char buf[256];
    for (;;) {
      auto [ec, n] = co_await served.async_read_some(asio::buffer(buf), tuple_awaitable);
      if (ec) co_return;
      auto [wec, wn] = co_await asio::async_write(served, asio::buffer(buf, n), tuple_awaitable);
      if (wec) co_return;
    }
  }
};

// One round trip on `client` within `limit`: false when the reply does not come.
asio::awaitable<bool> echo_round_trip(asio::ip::tcp::socket& client, std::chrono::milliseconds limit) {
  using namespace asio::experimental::awaitable_operators;
  char out = 'x', in = 0;
  co_await asio::async_write(client, asio::buffer(&out, 1), asio::use_awaitable);
  asio::steady_timer t(co_await asio::this_coro::executor, limit);
  auto r = co_await (asio::async_read(client, asio::buffer(&in, 1), tuple_awaitable) || t.async_wait(tuple_awaitable));
  co_return r.index() == 0 && !std::get<0>(std::get<0>(r)) && in == out;
}

}  // namespace

TEST_CASE_METHOD(own_server_fixture<server_fixture>,
                 "replies the C client makes up (socket() fails: fd exhaustion) do not move the validity deadline",
                 "[integration][fault][engine][timing]") {
  // While the server is unreachable and socket() fails, the C client completes every queued
  // request with ZSYSTEMERROR. Those replies never reached a server: the deadline of the last
  // real reply stands, and the guard turns lost by it.
  log_lines log;
  auto& s = connect(logged_options(srv.connect_string(), 4000ms, log, log_level::error));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex m(s, "/locks/made-up");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    srv.kill();
    co_await await_state(s, session_state::suspended, 10s);
    // No server can answer any more: this deadline is final.
    const auto deadline = g.valid_until();
    auto latest = deadline;
    auto made_up = std::make_shared<int>(0);
    std::optional<std::chrono::steady_clock::time_point> lost_at;
    {
      fd_exhaustion full;
      while (std::chrono::steady_clock::now() < deadline + 1500ms) {
        s.async_exists("/locks", [made_up](error_code ec, std::optional<node_stat>) {
          if (ec == zk_errc::system_error) ++*made_up;
        });
        co_await sleep_for(50ms);
        full.top_up();  // a socket the C client closed since
        if (g.owns_lock()) latest = std::max(latest, g.valid_until());
        if (g.status() == lock_status::lost) {
          lost_at = std::chrono::steady_clock::now();
          break;
        }
      }
    }
    auto ms = [&](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(t - deadline).count();
    };
    INFO("requests completed with ZSYSTEMERROR: " << *made_up << "; socket() failures logged: "
                                                  << log.count("socket() call failed"));
    INFO("valid_until moved by " << ms(latest) << " ms; lost " << (lost_at ? std::to_string(ms(*lost_at)) : "never")
                                 << " ms after the deadline");
    CHECK(*made_up > 0);  // the premise: the C client did make replies up
    CHECK(latest == deadline);
    REQUIRE(lost_at.has_value());
    CHECK(*lost_at <= deadline + 300ms);
    CHECK(g.status() == lock_status::lost);
  }(), 60s);
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>, "a connection dropped inside a send is reported suspended at once",
                 "[integration][fault][engine]") {
  // kill -9: the server's kernel closes its sockets; requests sent before the loop sees the end
  // of the stream make the C client close its socket inside the send, without a session event;
  // its next connect is refused.
  log_lines log;
  auto& s = connect(logged_options(srv.connect_string(), 8000ms, log, log_level::info));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto id = s.session_id();
    mutex m(s, "/locks/in-send");
    auto g = co_await m.async_acquire(asio::use_awaitable);
    auto mark = log.size();
    srv.kill();
    send_requests(s, 5);
    INFO(log.dump(mark));
    REQUIRE(log.count(dropped_in_send, mark) == 1);  // the premise
    co_await await_state(s, session_state::suspended, 2s);
    co_await sleep_for(100ms);  // the hold hears of it through a posted handler
    CHECK(g.status() == lock_status::maybe_lost);
    srv.start();
    co_await await_state(s, session_state::reconnected, 30s);
    CHECK(s.session_id() == id);
    CHECK(g.status() == lock_status::held);
    co_await g.async_release(asio::use_awaitable);
  }(), 90s);
}

TEST_CASE_METHOD(server_fixture,
                 "a refused server after a connection dropped inside a send does not cost the next healthy connection",
                 "[integration][fault][engine]") {
  // Three addresses, each a proxy to the same server. The proxy we are connected to dies (its
  // port refuses from then on) and requests die inside the send. The C client tries the same
  // address first (its round robin has not moved since the connect), which refuses: it cleans
  // up inside zookeeper_process, the lost connection's requests failing there, and (that
  // address not being the last of its list) connects to the next one at once, which is
  // healthy: that connection must be kept, not shut down at its handshake.
  std::vector<std::unique_ptr<zklock::test::tcp_proxy>> proxies;
  std::string addresses;
  for (int i = 0; i < 3; ++i) {
    proxies.push_back(std::make_unique<zklock::test::tcp_proxy>(ioc.get_executor(), srv.port()));
    addresses += (i ? "," : "") + proxies.back()->connect_string();
  }
  log_lines log;
  auto& s = connect(logged_options(srv.connect_via(addresses), 8000ms, log, log_level::info));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto id = s.session_id();
    auto ours = std::find_if(proxies.begin(), proxies.end(), [](auto& p) { return p->connections_accepted() == 1; });
    REQUIRE(ours != proxies.end());
    const std::string dead = (*ours)->connect_string();
    auto mark = log.size();
    ours->reset();  // closes its connections and its port
    send_requests(s, 5);
    REQUIRE(log.count(dropped_in_send, mark) == 1);  // the premise
    co_await await_state(s, session_state::reconnected, 30s);
    co_await sleep_for(1500ms);  // an extra cycle would show by now
    INFO(log.dump(mark));
    int accepted = 0;
    for (auto& p : proxies)
      if (p) accepted += p->connections_accepted();
    // the premise: the first address tried after the drop was the dead one, and it refused
    std::size_t first_refused = SIZE_MAX, first_initiated = SIZE_MAX;
    for (std::size_t i = mark; i < log.size(); ++i) {
      const auto& line = (*log.lines)[i];
      if (first_refused == SIZE_MAX && line.find("server refused to accept the client") != std::string::npos &&
          line.find(dead) != std::string::npos)
        first_refused = i;
      if (first_initiated == SIZE_MAX && line.find("initiated connection to server") != std::string::npos)
        first_initiated = i;
    }
    REQUIRE(first_refused < first_initiated);
    CHECK(accepted == 1);  // one handshake after the drop, not two
    CHECK(log.count("initiated connection to server", mark) == 1);
    CHECK(s.state() == session_state::reconnected);
    CHECK(s.session_id() == id);
    co_await s.async_close(asio::use_awaitable);
  }(), 60s);
}

namespace {
// Sessions a (through `proxy`) and b (direct) are connected on `ioc`. Drops a's connection inside
// a send and, in the same handler, calls `take_fd` to open sockets until every number that a's
// socket had (the C client's, and the engine's own) is in use again: the lowest free numbers,
// once the gaps below are filled. Then checks that `healthy` still works, and b and a too.
template <class TakeFd, class Healthy>
asio::awaitable<void> drop_in_send_then(session& a, session& b, zklock::test::tcp_proxy& proxy, const log_lines& log,
                                        TakeFd take_fd, Healthy healthy) {
  auto mark = log.size();
  proxy.drop_all();  // closes the proxy's sockets too: look for a's numbers after
  auto before = open_fds();
  send_requests(a, 5);
  REQUIRE(log.count(dropped_in_send, mark) == 1);  // the premise
  auto after = open_fds();
  std::vector<int> freed;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(freed));
  REQUIRE_FALSE(freed.empty());  // a's socket, closed by the C client
  auto pre = open_fds();
  std::vector<int> placeholders;
  for (int number : freed) {
    if (open_fds().count(number)) continue;  // an earlier socket got it (a session opens two)
    for (;;) {  // fill the free numbers below it
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      if (fd >= number) {
        ::close(fd);
        break;
      }
      placeholders.push_back(fd);
    }
    take_fd();
  }
  for (int fd : placeholders) ::close(fd);
  auto post = open_fds();
  std::string numbers, reused;
  for (int fd : freed) numbers += std::to_string(fd) + " ";
  for (int fd : post)
    if (!pre.count(fd)) reused += std::to_string(fd) + " ";
  INFO("a's numbers: " << numbers << "; the new sockets': " << reused);
  for (int fd : freed) CHECK((post.count(fd) && !pre.count(fd)));  // the premise: all in use again
  co_await healthy();
  co_await await_state(a, session_state::reconnected, 30s);
  auto e = co_await b.async_exists("/", asio::use_awaitable);  // the root (the chroot on a shared server)
  CHECK(e.has_value());
  auto e2 = co_await a.async_exists("/", asio::use_awaitable);
  CHECK(e2.has_value());
}
}  // namespace

TEST_CASE_METHOD(proxied_fixture,
                 "a connection dropped inside a send leaves the other sockets on its io_context registered",
                 "[integration][fault][engine]") {
  log_lines log;
  auto opts_a = options_for(srv.connect_via(proxy.connect_string()), 8000ms);
  opts_a.log = log.sink();
  opts_a.log_threshold = log_level::warn;
  auto& a = connect(opts_a);
  auto& b = connect(8000ms);

  SECTION("a user's socket") {
    echo_pair echo(ioc.get_executor());
    std::list<asio::ip::tcp::socket> users;
    run_test(ioc, [&]() -> asio::awaitable<void> {
      co_await drop_in_send_then(
          a, b, proxy, log,
          [&] {
            auto& user = users.emplace_back(ioc);
            user.connect(echo.acceptor.local_endpoint());
            asio::co_spawn(ioc, echo.serve(), asio::detached);
          },
          [&]() -> asio::awaitable<void> {
            for (int i = 0; i < 10; ++i) {
              int n = 0;
              for (auto& user : users) {
                bool ok = co_await echo_round_trip(user, 2000ms);
                INFO("round trip " << i << " on user socket " << n++);
                REQUIRE(ok);
              }
              co_await sleep_for(100ms);
            }
          });
    }(), 90s);
  }

  SECTION("another session's connection") {
    std::list<session> late;
    std::vector<std::optional<error_code>> connected;
    run_test(ioc, [&]() -> asio::awaitable<void> {
      co_await drop_in_send_then(
          a, b, proxy, log,
          [&] {
            auto& c = late.emplace_back(ioc.get_executor(), options_for(srv.connect_string(), 8000ms));
            auto i = connected.size();
            connected.emplace_back();
            c.async_connect([&connected, i](error_code ec) { connected[i] = ec; });  // opens its socket in the call
          },
          [&]() -> asio::awaitable<void> {
            auto until = std::chrono::steady_clock::now() + 5s;
            auto all = [&] { return std::all_of(connected.begin(), connected.end(), [](auto& c) { return c.has_value(); }); };
            while (!all() && std::chrono::steady_clock::now() < until) co_await sleep_for(20ms);
            for (auto& c : connected) {
              REQUIRE(c.has_value());
              CHECK_FALSE(*c);
            }
            for (auto& c : late) CHECK(c.state() == session_state::connected);
          });
    }(), 90s);
  }
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>,
                 "a session whose authentication the server rejects ends: guards are lost and waiting acquires fail",
                 "[integration][fault][engine][auth]") {
  // ZooKeeper 3.8's digest provider accepts any "user:password"; a server whose digest provider
  // is disabled (zookeeper.DigestAuthenticationProvider.enabled=false) answers AUTHFAILED and
  // closes the connection. The session is connected with digest auth, holds one lock and waits
  // for another; the server restarts with digest disabled: the reconnect's auth fails.
  // 20 s sessions: a server restart on a loaded machine must not expire them first (the
  // auth failure, not an expiry, is what ends the session here)
  auto opts = options_for(srv.connect_string(), 20000ms);
  opts.digest_auth = "alice:secret";
  auto& s = connect(opts);
  auto& other = connect(20000ms);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    mutex held_m(s, "/locks/auth-held");
    auto g = co_await held_m.async_acquire(asio::use_awaitable);
    mutex om(other, "/locks/auth-wait");
    auto og = co_await om.async_acquire(asio::use_awaitable);
    mutex wm(s, "/locks/auth-wait");
    std::optional<error_code> waiter;
    wm.async_acquire([&](error_code ec, lock_guard) { waiter = ec; });
    co_await sleep_for(300ms);
    REQUIRE_FALSE(waiter.has_value());  // queued behind `other`

    srv.stop();
    co_await await_state(s, session_state::suspended, 10s);
    ::setenv("JAVA_TOOL_OPTIONS", "-Dzookeeper.DigestAuthenticationProvider.enabled=false", 1);
    srv.start();
    ::unsetenv("JAVA_TOOL_OPTIONS");
    // The handshake succeeds (reconnected), then the auth reply says AUTHFAILED.
    auto seen = s.state();
    auto until = std::chrono::steady_clock::now() + 20s;
    std::optional<std::chrono::steady_clock::time_point> ended_at;
    while (std::chrono::steady_clock::now() < until) {
      seen = s.state();
      if (!ended_at && seen != session_state::suspended && !is_connected(seen)) ended_at = std::chrono::steady_clock::now();
      if (ended_at && (waiter || std::chrono::steady_clock::now() > *ended_at + 2s)) break;
      co_await sleep_for(20ms);
    }
    INFO("state " << to_string(seen));
    REQUIRE(ended_at.has_value());
    CHECK(seen == session_state::closed);
    // within a moment of the state change, not at the validity deadline
    co_await sleep_for(200ms);
    CHECK(g.status() == lock_status::lost);
    REQUIRE(waiter.has_value());
    CHECK((*waiter == errc::session_closed || *waiter == zk_errc::auth_failed));
    co_await og.async_release(asio::use_awaitable);
  }(), 90s);
}

TEST_CASE_METHOD(own_server_fixture<server_fixture>,
                 "a session holds two descriptors, connected and after a reconnect, and none once closed",
                 "[integration][fault][engine]") {
  // The C client's socket and the dup of it the io_context waits on (engine/loop.cpp), and no
  // more: none left behind by a reconnect or a close. Counted in /proc/self/fd, with the
  // io_context's own already open.
  constexpr int n = 20;
  auto& first = connect(20000ms);
  const auto before = open_fds().size();
  std::vector<session*> ss;
  for (int i = 0; i < n; ++i) ss.push_back(&connect(20000ms));
  CHECK(open_fds().size() == before + 2 * n);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    // a reconnect (the C client closes its socket and opens another): still two each
    srv.stop();
    for (auto* s : ss) co_await await_state(*s, session_state::suspended, 10s);
    srv.start();
    for (auto* s : ss) co_await await_state(*s, session_state::reconnected, 30s);
    CHECK(open_fds().size() == before + 2 * n);
    // and each still hears its socket: a lock taken and released on every session in turn
    for (auto* s : ss) {
      mutex m(*s, "/locks/one-fd");
      auto g = co_await m.async_acquire(asio::use_awaitable);
      co_await g.async_release(asio::use_awaitable);
    }
    for (auto* s : ss) co_await s->async_close(asio::use_awaitable);
    CHECK(open_fds().size() == before);
    co_await first.async_close(asio::use_awaitable);
  }(), 90s);
}
