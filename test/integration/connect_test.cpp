// Connecting to what is not a ZooKeeper server: an endpoint that answers HTTP,
// a host that does not resolve, a port that refuses, a port that never answers. Each fails
// with an error that says which endpoint and why; none is reported connected.
#include "common.hpp"

#include <zklock/error.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>

using namespace zklock;

namespace {

// An acceptor on a free loopback port that answers anything with an HTTP error (any TCP
// service on a wrong port in a connect string), then closes; counts the connections. With
// `close_at_once`, it closes each connection as soon as it accepted it, answering nothing.
struct fake_http_server {
  asio::ip::tcp::acceptor acceptor;
  int connections = 0;
  bool close_at_once = false;

  explicit fake_http_server(asio::io_context& ioc, bool close_at_once = false)
      : acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0}), close_at_once(close_at_once) {
    accept();
  }
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()); }

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket sock) {
      if (ec) return;
      ++connections;
      if (close_at_once) {
        boost::system::error_code ignored;
        sock.close(ignored);
        return accept();
      }
      auto s = std::make_shared<asio::ip::tcp::socket>(std::move(sock));
      auto buf = std::make_shared<std::array<char, 512>>();
      s->async_read_some(asio::buffer(*buf), [s, buf](boost::system::error_code, std::size_t) {
        static const std::string answer =
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nConnection: close\r\n\r\n"
            "Bad Request";
        asio::async_write(*s, asio::buffer(answer), [s](boost::system::error_code, std::size_t) {
          boost::system::error_code ignored;
          s->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        });
      });
      accept();
    });
  }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Appends every state `s` goes through to `states`, until the session is destroyed.
void record_states(session& s, std::vector<session_state>& states) {
  asio::co_spawn(s.get_executor(), [&s, &states]() -> asio::awaitable<void> {
    for (auto known = s.state();;) {
      auto [ec, st] = co_await s.async_wait_state(known, tuple_awaitable);
      if (ec) co_return;
      states.push_back(known = st);
    }
  }, asio::detached);
}

// Drops the connection through `proxy` `drops` times; after each, the session (whose states
// record_states appends to `states`) must reconnect to the same session within 10 s.
// Each drop comes just after a reply: the server has heard from the session at that moment,
// so its session timeout runs from the drop, not from a ping up to a third of it earlier.
asio::awaitable<void> drop_and_reconnect(zklock::test::tcp_proxy& proxy, session& s,
                                         const std::vector<session_state>& states, int drops) {
  auto id = s.session_id();
  auto count = [&](session_state st) { return std::count(states.begin(), states.end(), st); };
  auto before = count(session_state::reconnected);
  for (int i = 1; i <= drops; ++i) {
    auto [ec_touch, stat] = co_await s.async_exists("/", tuple_awaitable);
    REQUIRE_FALSE(ec_touch);
    proxy.drop_all();
    co_await until([&] { return count(session_state::reconnected) == before + i || count(session_state::expired) > 0; },
                   10s);
    CHECK(count(session_state::expired) == 0);
    CHECK(s.session_id() == id);
  }
}

}  // namespace

TEST_CASE("an endpoint that answers HTTP is not reported connected", "[integration][session][connect]") {
  asio::io_context ioc;
  fake_http_server http(ioc);
  auto opts = options_for(http.connect_string());
  opts.connect_timeout = 5s;
  session s(ioc.get_executor(), opts);
  std::vector<session_state> states;  // every state the session went through
  record_states(s, states);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto t0 = std::chrono::steady_clock::now();
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    auto took = std::chrono::steady_clock::now() - t0;
    INFO("async_connect: " << ec.message() << ", session id 0x" << std::hex << s.session_id());
    CHECK(ec == errc::not_zookeeper);
    CHECK(ec == condition::session_lost);
    CHECK(s.state() == session_state::disconnected);
    // At once: the answer is decisive, no need to wait for the connect timeout.
    CHECK(took < 2s);
    // The message names the endpoint.
    CHECK(contains(ec.message(), http.connect_string()));
    CHECK(http.connections >= 1);
    co_await sleep_for(200ms);  // a connected state reported late would show here
  }());
  for (auto st : states) CHECK(st != session_state::connected);
}

TEST_CASE("a host that does not resolve fails with its name and the cause", "[integration][session][connect]") {
  asio::io_context ioc;
  session s(ioc.get_executor(), options_for("zklock-no-such-host.invalid:2181"));
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    INFO("async_connect: [" << ec.category().name() << ":" << ec.value() << "] " << ec.message());
    CHECK(ec == errc::unresolvable_host);
    CHECK(ec == condition::session_lost);
    CHECK(contains(ec.message(), "zklock-no-such-host.invalid"));
    CHECK(contains(ec.message(), "resolve"));
    CHECK(s.state() == session_state::disconnected);
  }());
}

TEST_CASE("a port that refuses: the connect timeout's error says refused and where", "[integration][session][connect]") {
  asio::io_context ioc;
  auto endpoint = "127.0.0.1:" + std::to_string(zklock::test::free_port());
  auto opts = options_for(endpoint);
  opts.connect_timeout = 1500ms;
  session s(ioc.get_executor(), opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    INFO("async_connect: " << ec.message());
    CHECK(ec == errc::connect_timeout);  // the code keeps its meaning
    CHECK(ec == condition::session_lost);
    CHECK(contains(ec.message(), "within the connect timeout"));
    CHECK(contains(ec.message(), endpoint));
    CHECK(contains(ec.message(), "Connection refused"));
  }());
}

TEST_CASE("a port that refuses: the endpoint and its cause are told twice, a log line and the error",
          "[integration][session][connect]") {
  asio::io_context ioc;
  auto endpoint = "127.0.0.1:" + std::to_string(zklock::test::free_port());
  auto opts = options_for(endpoint);
  opts.connect_timeout = 1500ms;
  opts.log_threshold = log_level::warn;  // the default
  auto lines = std::make_shared<std::vector<std::string>>();
  opts.log = [lines](log_level, std::string_view m) { lines->emplace_back(m); };
  session s(ioc.get_executor(), opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    REQUIRE(ec == errc::connect_timeout);
    std::string told;
    for (auto& l : *lines) told += l + "\n";
    told += ec.message() + "\n";
    INFO(told);
    auto count = [&](const std::string& part) {
      int n = 0;
      for (auto at = told.find(part); at != std::string::npos; at = told.find(part, at + 1)) ++n;
      return n;
    };
    CHECK(count(endpoint) == 2);  // the summary's line when it first failed, and the error
    CHECK(count("Connection refused") == 2);
    CHECK(count("Host is down") == 0);
  }());
}

// One endpoint that is not ZooKeeper among others that are: it is one unreachable server.
// The C client tries the endpoints in a random order, so each case connects many times: 12, and
// more (64 at most) until it was tried (a 1 in 4,096 chance that 12 never try it).
TEST_CASE_METHOD(server_fixture, "a non-ZooKeeper endpoint beside a ZooKeeper server: every connect succeeds",
          "[integration][session][connect]") {
  fake_http_server http(ioc);
  fake_http_server closing(ioc, true);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    for (auto* bad : {&http, &closing}) {
      for (int i = 0; i < 12 || (bad->connections == 0 && i < 64); ++i) {
        auto connect = srv.connect_via(i % 2 ? bad->connect_string() + "," + srv.address()
                                             : srv.address() + "," + bad->connect_string());
        session s(co_await asio::this_coro::executor, options_for(connect));
        auto [ec] = co_await s.async_connect(tuple_awaitable);
        INFO(connect << " (" << (bad == &http ? "answers HTTP" : "closes at once") << "), connect " << i << ": "
                     << ec.message());
        CHECK_FALSE(ec);
        CHECK(s.state() == session_state::connected);
        auto [ec_read, r] = co_await s.async_get_children("/", tuple_awaitable);
        CHECK_FALSE(ec_read);
      }
    }
    CHECK(http.connections >= 1);  // it was tried
    CHECK(closing.connections >= 1);
  }());
}

TEST_CASE("only non-ZooKeeper endpoints: the connect fails with not_zookeeper, naming each",
          "[integration][session][connect]") {
  asio::io_context ioc;
  fake_http_server one(ioc), two(ioc);
  auto opts = options_for(one.connect_string() + "," + two.connect_string());
  opts.connect_timeout = 5s;
  session s(ioc.get_executor(), opts);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    auto t0 = std::chrono::steady_clock::now();
    auto [ec] = co_await s.async_connect(tuple_awaitable);
    INFO("async_connect: " << ec.message());
    CHECK(ec == errc::not_zookeeper);
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);  // decided by the answers, not the timeout
    CHECK(contains(ec.message(), one.connect_string()));
    CHECK(contains(ec.message(), two.connect_string()));
    CHECK(s.state() == session_state::disconnected);
  }());
}

// With two servers the C client 3.8 moves two endpoints on per failed connection
// (handle_error, then zookeeper_interest), so after a drop it keeps choosing the non-ZooKeeper
// endpoint and never the proxy: unless that endpoint leaves its list, the session expires.
// The HTTP endpoint closes each connection at once until the session is connected (an
// ordinary failure, which the connect passes over), so that a reconnect is what meets its answer.
TEST_CASE_METHOD(proxied_fixture, "a non-ZooKeeper endpoint met on a reconnect never ends the session", "[integration][session][connect]") {
  fake_http_server http(ioc, /*close_at_once=*/true);
  auto& s = connect(options_for(srv.connect_via(proxy.connect_string() + "," + http.connect_string())));
  std::vector<session_state> states;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    record_states(s, states);
    http.close_at_once = false;
    // Each drop makes the C client go to the next endpoint of its list: the HTTP one, until
    // it is known not to be ZooKeeper.
    int http_before = http.connections;
    co_await drop_and_reconnect(proxy, s, states, 4);
    CHECK(http.connections > http_before);  // the reconnects met it ...
    CHECK(http.connections <= http_before + 1);  // ... once: then it left the list
    auto [ec_read, r] = co_await s.async_get_children("/", tuple_awaitable);
    CHECK_FALSE(ec_read);
  }());
  for (auto st : states) CHECK(st != session_state::expired);
}

TEST_CASE_METHOD(proxied_fixture, "a non-ZooKeeper endpoint found at the connect is not tried on the reconnects", "[integration][session][connect]") {
  fake_http_server http(ioc);
  run_test(ioc, [&]() -> asio::awaitable<void> {
    // The C client tries the endpoints in a random order: connect until it met the HTTP one.
    std::optional<session> s;
    for (int i = 0; i < 40 && http.connections == 0; ++i) {
      s.emplace(ioc.get_executor(), options_for(srv.connect_via(proxy.connect_string() + "," + http.connect_string())));
      co_await s->async_connect(asio::use_awaitable);
    }
    REQUIRE(http.connections == 1);
    std::vector<session_state> states;
    record_states(*s, states);
    co_await drop_and_reconnect(proxy, *s, states, 3);
    CHECK(http.connections == 1);
  }());
}

// A port that refuses is an ordinary unreachable server, which stays in the C client's list;
// the C client 3.8 moves two endpoints on per failed connection (handle_error, then
// zookeeper_interest), so with two servers, after a drop, it kept choosing the refusing port
// and never the proxy: the session expired at its timeout while a server of its connect string
// was up. The engine puts it back after each failure: every endpoint is tried in turn.
TEST_CASE_METHOD(proxied_fixture, "a refusing endpoint met on a reconnect never ends the session", "[integration][session][connect]") {
  auto refusing = "127.0.0.1:" + std::to_string(zklock::test::free_port());
  auto& s = connect(options_for(srv.connect_via(proxy.connect_string() + "," + refusing)));
  std::vector<session_state> states;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    record_states(s, states);
    co_await drop_and_reconnect(proxy, s, states, 4);
  }());
}

// Four endpoints, one a live ZooKeeper server: of an even number the C client alone tries half
// after a drop (the other half from the one it was connected to), never its own server again.
// Two refuse, one accepts and never answers (its connection times out at 2/3 of the session
// timeout): every reconnect goes round them and back to the live one.
TEST_CASE_METHOD(proxied_fixture, "of four endpoints one is ZooKeeper: every reconnect reaches it", "[integration][session][connect]") {
  zklock::test::tcp_proxy silent(ioc.get_executor(), srv.port());
  silent.blackhole(true);
  auto refusing_one = "127.0.0.1:" + std::to_string(zklock::test::free_port());
  auto refusing_two = "127.0.0.1:" + std::to_string(zklock::test::free_port());
  session s(ioc.get_executor(), options_for(srv.connect_via(proxy.connect_string() + "," + refusing_one + "," +
                                                            silent.connect_string() + "," + refusing_two),
                                            6000ms));
  std::vector<session_state> states;
  run_test(ioc, [&]() -> asio::awaitable<void> {
    co_await s.async_connect(asio::use_awaitable);
    record_states(s, states);
    co_await drop_and_reconnect(proxy, s, states, 4);
    auto [ec_read, r] = co_await s.async_get_children("/", tuple_awaitable);
    CHECK_FALSE(ec_read);
  }());
  for (auto st : states) CHECK(st != session_state::expired);
}
