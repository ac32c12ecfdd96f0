// Connecting to what is not a ZooKeeper server (issue 21 §3): an endpoint that answers HTTP,
// a host that does not resolve, a port that refuses, a port that never answers. Each fails
// with an error that says which endpoint and why; none is reported connected.
#include "common.hpp"

#include <zklock/error.hpp>

#include <array>
#include <memory>
#include <string>

using namespace zklock;

namespace {

// An acceptor on a free loopback port that answers anything with an HTTP error (any TCP
// service on a wrong port in a connect string), then closes; counts the connections.
struct fake_http_server {
  asio::ip::tcp::acceptor acceptor;
  int connections = 0;

  explicit fake_http_server(asio::io_context& ioc) : acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
  }
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()); }

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket sock) {
      if (ec) return;
      ++connections;
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

}  // namespace

TEST_CASE("an endpoint that answers HTTP is not reported connected", "[integration][session][connect]") {
  asio::io_context ioc;
  fake_http_server http(ioc);
  auto opts = options_for(http.connect_string());
  opts.connect_timeout = 5s;
  session s(ioc.get_executor(), opts);
  std::vector<session_state> states;  // every state the session went through
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (auto known = s.state();;) {
      auto [ec, st] = co_await s.async_wait_state(known, tuple_awaitable);
      if (ec) co_return;
      states.push_back(known = st);
    }
  }, asio::detached);
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
