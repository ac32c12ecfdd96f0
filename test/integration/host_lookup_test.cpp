// A host name is looked up off the loop and outside the C client's lock: while a session's
// lookup is slow (a DNS server that takes its time), a timer on its io_context and another
// session's calls on another thread go on; after a connection loss the name is looked up again
// the same way, and the C client, which would look it up on the loop under the lock before
// each reconnect attempt, only ever parses addresses. A server that moved (its name now names
// another address) is followed; localhost and an IPv6 literal connect.
//
// How a lookup is made slow: this test binary defines getaddrinfo (below), which the dynamic
// linker binds every caller in the process to, ours (asio's resolver) and the C client's
// (libzookeeper_st) alike. Names under ".zklock.test" (the .test domain is reserved: no DNS
// server answers for it) map to the address the table gives them, after the delay it gives;
// every other name goes to the C library's getaddrinfo unchanged. Where a lookup runs, and for
// how long, is thus the real program's; only the DNS server is stood in for.
#include "common.hpp"
#include "stall_probes.hpp"

#include <dlfcn.h>
#include <netdb.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

using namespace zklock;
using zklock::test::zk_server;

namespace host_lookup_test {

using clock_type = std::chrono::steady_clock;

struct fake_name {
  std::string address;  // what it resolves to ("127.0.0.1", "::1")
  std::chrono::milliseconds delay{0};
};

// The names of the fake DNS, and every lookup of one: its name and the thread it ran on.
std::mutex table_mutex;
std::map<std::string, fake_name, std::less<>> table;
std::vector<std::pair<std::string, std::thread::id>> lookups;

void set_name(const std::string& name, std::string address, std::chrono::milliseconds delay) {
  std::lock_guard lock(table_mutex);
  table[name] = {std::move(address), delay};
}
std::vector<std::pair<std::string, std::thread::id>> lookups_of(const std::string& name) {
  std::lock_guard lock(table_mutex);
  std::vector<std::pair<std::string, std::thread::id>> r;
  for (const auto& l : lookups)
    if (l.first == name) r.push_back(l);
  return r;
}
long lookups_on(const std::string& name, std::thread::id thread) {
  auto all = lookups_of(name);
  return std::count_if(all.begin(), all.end(), [&](const auto& l) { return l.second == thread; });
}

}  // namespace host_lookup_test

extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                           struct addrinfo** res) {
  using real_fn = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  static const auto real = reinterpret_cast<real_fn>(::dlsym(RTLD_NEXT, "getaddrinfo"));
  std::string_view name = node ? node : "";
  if (!name.ends_with(".zklock.test")) return real(node, service, hints, res);
  using namespace host_lookup_test;
  host_lookup_test::fake_name entry;
  {
    std::lock_guard lock(table_mutex);
    lookups.emplace_back(std::string(name), std::this_thread::get_id());
    auto it = table.find(name);
    if (it == table.end()) return EAI_NONAME;  // never asked of a real DNS server
    entry = it->second;
  }
  std::this_thread::sleep_for(entry.delay);
  return real(entry.address.c_str(), service, hints, res);
}

namespace host_lookup_test {

using zklock::test::caller_thread;
using zklock::test::loop_thread;
using zklock::test::ticker;

// Forwards connections from [::1]:port to 127.0.0.1:port (the server's), until closed.
struct v6_forwarder {
  asio::ip::tcp::acceptor acceptor;
  std::uint16_t port;
  std::vector<std::shared_ptr<asio::ip::tcp::socket>> sockets;
  v6_forwarder(asio::io_context& ioc, std::uint16_t p) : acceptor(ioc), port(p) {
    asio::ip::tcp::endpoint at(asio::ip::make_address("::1"), port);
    acceptor.open(at.protocol());
    acceptor.set_option(asio::ip::v6_only(true));
    acceptor.bind(at);
    acceptor.listen();
    accept();
  }
  void accept() {
    acceptor.async_accept([this](error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      auto client = std::make_shared<asio::ip::tcp::socket>(std::move(s));
      auto server = std::make_shared<asio::ip::tcp::socket>(acceptor.get_executor());
      error_code cec;
      server->connect({asio::ip::make_address("127.0.0.1"), port}, cec);
      if (!cec) {
        sockets.push_back(client);
        sockets.push_back(server);
        pipe(client, server);
        pipe(server, client);
      }
      accept();
    });
  }
  static void pipe(std::shared_ptr<asio::ip::tcp::socket> from, std::shared_ptr<asio::ip::tcp::socket> to) {
    auto buf = std::make_shared<std::array<char, 16384>>();
    from->async_read_some(asio::buffer(*buf), [from, to, buf](error_code ec, std::size_t n) {
      if (ec) {
        error_code ignored;
        to->close(ignored);
        return;
      }
      asio::async_write(*to, asio::buffer(buf->data(), n), [from, to, buf](error_code ec, std::size_t) {
        if (!ec) pipe(from, to);
      });
    });
  }
  void close() {
    error_code ignored;
    acceptor.close(ignored);
    for (auto& s : sockets) s->close(ignored);
    sockets.clear();
  }
};

// The connect string of `srv` with `host` for its address (its chroot kept).
std::string with_host(const zk_server& srv, const std::string& host) {
  return srv.connect_via(host + ":" + std::to_string(srv.port()));
}

session_options lookup_options(const std::string& connect) {
  auto o = options_for(connect, 4000ms);
  o.connect_timeout = 20s;
  return o;
}

long ms_since(clock_type::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
}

// Prints what the probes saw while `what` went on, and checks that nothing stalled and that
// `name` was never looked up on the loop's thread (this one).
void check_not_stalled(const std::string& what, const ticker& tick, const caller_thread& caller, const std::string& name) {
  auto on_loop = lookups_on(name, std::this_thread::get_id());
  std::cout << what << "; a 10 ms timer on its io_context fired at most " << tick.latest_us / 1000.0
            << " ms late; another session's call on another thread took at most " << caller.longest_us / 1000.0
            << " ms; lookups of the name: " << lookups_of(name).size() << ", on the loop's thread: " << on_loop
            << std::endl;
  CHECK(on_loop == 0);
  CHECK(tick.latest_us < 500'000);
  CHECK(caller.longest_us < 500'000);
}

// (The tests in the namespace too: a using-directive would leak into the next source of a unity
// batch.)

TEST_CASE("a slow lookup of a host name stalls neither its io_context nor another session on another thread",
          "[integration][connect][promise]") {
  zk_server srv;
  const std::string name = "slow-connect.zklock.test";
  set_name(name, "127.0.0.1", 1500ms);
  loop_thread other;
  session bystander{other.ioc, options_for(srv.connect_string())};
  bystander.async_connect(asio::use_future).get();
  caller_thread caller(bystander);

  asio::io_context ioc;
  session s(ioc, lookup_options(with_host(srv, name)));
  ticker tick(ioc);
  std::optional<error_code> connected;
  auto t0 = clock_type::now();
  s.async_connect([&](error_code ec) { connected = ec; });
  REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 30s, 1ms));
  auto connect_ms = ms_since(t0);
  tick.stop();
  ioc.run_for(20ms);
  check_not_stalled("connect to a name whose lookup takes 1500 ms: connected in " + std::to_string(connect_ms) + " ms",
                    tick, caller, name);
  INFO("async_connect: " << connected->message());
  CHECK_FALSE(*connected);
  CHECK(s.state() == session_state::connected);
  CHECK(connect_ms >= 1400);  // the lookup was slow: the stand-in DNS server did its part
  s.async_close([](error_code) {});
  ioc.run_for(200ms);
  bystander.async_close(asio::use_future).get();
}

TEST_CASE("after a connection loss the name is looked up again off the loop and the C client never looks it up",
          "[integration][connect][promise]") {
  zk_server srv;
  asio::io_context ioc;
  zklock::test::tcp_proxy proxy(ioc.get_executor(), srv.port());
  const std::string name = "slow-reconnect.zklock.test";
  set_name(name, "127.0.0.1", 100ms);
  loop_thread other;
  session bystander{other.ioc, options_for(srv.connect_string())};
  bystander.async_connect(asio::use_future).get();

  session s(ioc, lookup_options(srv.connect_via(name + ":" + std::to_string(proxy.port()))));
  std::optional<error_code> connected;
  s.async_connect([&](error_code ec) { connected = ec; });
  REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 30s));
  REQUIRE_FALSE(*connected);
  auto id = s.session_id();
  set_name(name, "127.0.0.1", 1500ms);  // the DNS server turns slow
  auto before = lookups_of(name).size();
  ioc.run_for(1100ms);  // (one lookup per second at most)

  caller_thread caller(bystander);
  ticker tick(ioc);
  auto t0 = clock_type::now();
  proxy.drop_all();
  // (reconnected only follows a suspension; a reconnect may take less than one step of the loop)
  REQUIRE(run_until(ioc, [&] { return s.state() == session_state::reconnected; }, 10s, 1ms));
  auto reconnect_ms = ms_since(t0);
  // The new lookup ends (on the resolver's thread) while the loop goes on.
  REQUIRE(run_until(ioc, [&] { return lookups_of(name).size() > before; }, 10s, 1ms));
  ioc.run_for(1600ms);
  tick.stop();
  ioc.run_for(20ms);
  check_not_stalled("a connection lost, the name's lookup taking 1500 ms: reconnected in " +
                        std::to_string(reconnect_ms) + " ms, " + std::to_string(lookups_of(name).size() - before) +
                        " lookup(s) after the loss",
                    tick, caller, name);
  CHECK(s.session_id() == id);
  CHECK(lookups_of(name).size() > before);  // looked up again
  s.async_close([](error_code) {});
  ioc.run_for(200ms);
  bystander.async_close(asio::use_future).get();
}

TEST_CASE("a server whose name moves to another address is followed by a suspended session",
          "[integration][connect]") {
  zk_server srv;
  asio::io_context ioc;
  std::optional<v6_forwarder> v6;
  try {
    v6.emplace(ioc, srv.port());
  } catch (const boost::system::system_error& e) {
    WARN("no IPv6 loopback here (" << e.what() << "): skipped");
    return;
  }
  const std::string name = "moving.zklock.test";
  set_name(name, "::1", 0ms);
  session s(ioc, lookup_options(with_host(srv, name)));
  std::optional<error_code> connected;
  s.async_connect([&](error_code ec) { connected = ec; });
  REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 30s));
  REQUIRE_FALSE(*connected);
  REQUIRE(!v6->sockets.empty());  // through [::1]
  auto id = s.session_id();
  ioc.run_for(1100ms);  // (one lookup per second at most)
  // The server moves: its name now names 127.0.0.1, and nothing answers at [::1] any more.
  set_name(name, "127.0.0.1", 0ms);
  auto t0 = clock_type::now();
  v6->close();
  // (reconnected only follows a suspension; a reconnect may take less than one step of the loop)
  REQUIRE(run_until(ioc, [&] { return s.state() == session_state::reconnected; }, 10s, 1ms));
  std::cout << "a server's name moved from ::1 to 127.0.0.1: reconnected in " << ms_since(t0) << " ms" << std::endl;
  CHECK(s.session_id() == id);
  s.async_close([](error_code) {});
  ioc.run_for(200ms);
}

TEST_CASE("a lookup that outlasts the connect timeout fails with connect_timeout naming the host and a cancel ends it at once",
          "[integration][connect]") {
  const std::string name = "stuck.zklock.test";
  set_name(name, "127.0.0.1", 1500ms);
  asio::io_context ioc;
  auto opts = lookup_options(name + ":2181");
  opts.connect_timeout = 300ms;
  session s(ioc, opts);
  std::optional<error_code> connected;
  auto t0 = clock_type::now();
  s.async_connect([&](error_code ec) { connected = ec; });
  REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 10s, 1ms));
  auto timeout_ms = ms_since(t0);
  INFO("async_connect: " << connected->message());
  CHECK(*connected == errc::connect_timeout);
  CHECK(connected->message().find(name) != std::string::npos);
  CHECK(timeout_ms < 1000);  // the lookup is not waited for
  CHECK(s.state() == session_state::disconnected);

  asio::cancellation_signal cancel;
  connected.reset();
  opts.connect_timeout = 20s;
  session c(ioc, opts);
  c.async_connect(asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec) { connected = ec; }));
  ioc.run_for(50ms);
  t0 = clock_type::now();
  cancel.emit(asio::cancellation_type::terminal);
  REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 10s, 1ms));
  CHECK(*connected == asio::error::operation_aborted);
  CHECK(ms_since(t0) < 500);
  CHECK(c.state() == session_state::disconnected);
}

TEST_CASE("a name that does not resolve among names that do: the others are tried and our warning names it with no "
          "line of the C client's resolver",
          "[integration][connect]") {
  zk_server srv;
  set_name("present.zklock.test", "127.0.0.1", 0ms);
  auto port = std::to_string(srv.port());
  auto opts = lookup_options(srv.connect_via("missing.zklock.test:" + port + ",present.zklock.test:" + port));
  std::vector<std::string> lines;
  opts.log_threshold = log_level::debug;
  opts.log = [&](log_level, std::string_view line) { lines.emplace_back(line); };
  asio::io_context ioc;
  session s(ioc, opts);
  std::optional<error_code> connected;
  s.async_connect([&](error_code ec) { connected = ec; });
  REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 30s));
  INFO("async_connect: " << connected->message());
  CHECK_FALSE(*connected);
  auto logged = [&](std::string_view part) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != l.npos; });
  };
  for (const auto& l : lines) UNSCOPED_INFO(l);
  CHECK(logged("cannot resolve the ZooKeeper host 'missing.zklock.test'"));
  CHECK_FALSE(logged("resolve_hosts"));  // the C client's "ZOO_ERROR@resolve_hosts@947: getaddrinfo: ..."
  CHECK_FALSE(logged("getaddrinfo"));
  s.async_close([](error_code) {});
  ioc.run_for(200ms);
}

TEST_CASE("localhost and an IPv6 literal in brackets connect", "[integration][connect]") {
  zk_server srv;
  asio::io_context ioc;
  auto connect = [&](const std::string& cs) {
    session s(ioc, lookup_options(cs));
    std::optional<error_code> connected;
    s.async_connect([&](error_code ec) { connected = ec; });
    REQUIRE(run_until(ioc, [&] { return connected.has_value(); }, 30s));
    INFO(cs << ": " << connected->message());
    CHECK_FALSE(*connected);
    s.async_close([](error_code) {});
    ioc.run_for(100ms);
  };
  connect(with_host(srv, "localhost"));
  std::optional<v6_forwarder> v6;
  try {
    v6.emplace(ioc, srv.port());
  } catch (const boost::system::system_error& e) {
    WARN("no IPv6 loopback here (" << e.what() << "): [::1] skipped");
    return;
  }
  connect(with_host(srv, "[::1]"));
}

}  // namespace host_lookup_test
