#include "session_setup.hpp"

#include <zklock/path.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <netdb.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace zklock_cli {

using namespace asio::experimental::awaitable_operators;

zklock::session_options make_session_options(const common_options& o, const std::shared_ptr<zk_log>& log) {
  zklock::session_options so;
  so.connect = o.connect;
  so.session_timeout = to_ms(o.session_timeout);
  so.connect_timeout = to_ms(o.connect_timeout);
  so.digest_auth = o.digest;
  // With credentials, the nodes zklock creates are theirs alone unless --acl open says otherwise.
  so.default_acl = o.acl == "creator" || (o.acl.empty() && !o.digest.empty()) ? zklock::acl_policy::creator_all
                                                                             : zklock::acl_policy::open;
  log->show = o.quiet ? zklock::log_level::error : o.verbose ? zklock::log_level::debug : zklock::log_level::warn;
  so.log_threshold = zklock::log_level::debug;  // zk_log filters: it needs the info lines too
  so.summarize_client_log = false;              // zk_log summarises, with counts for its messages
  so.log = [log](zklock::log_level l, std::string_view m) { (*log)(l, m); };
  return so;
}

asio::awaitable<int> connect(zklock::session& s, asio::signal_set& sigs, const common_options& co, const zk_log& log,
                             steady::time_point deadline) {
  asio::steady_timer limit(s.get_executor(), deadline);
  auto r = co_await (s.async_connect(use_tuple) || sigs.async_wait(use_tuple) || limit.async_wait(use_tuple));
  if (r.index() == 1) co_return 128 + std::get<1>(std::get<1>(r));
  if (r.index() == 2) {
    say("cannot connect to " + s.options().connect + " within --timeout" + log.failure_summary());
    co_return exit_error;
  }
  if (auto [ec] = std::get<0>(r); ec) {
    say("cannot connect to " + s.options().connect + ": " + ec.message() + log.failure_summary());
    co_return exit_error;
  }
  if (auto t = s.negotiated_timeout(); t != to_ms(co.session_timeout) && !co.quiet)
    say("note: the server set the session timeout to " + seconds_str(t.count() / 1000.0) + " s (asked for " +
        seconds_str(co.session_timeout) + " s)");
  co_return 0;
}

namespace {

bool valid_host_name(std::string_view h) {
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':';
  });
}

// host:port entries of a connect string (without the chroot).
std::vector<std::string_view> connect_entries(std::string_view connect) {
  std::vector<std::string_view> r;
  std::string_view hosts = connect.substr(0, connect.find('/'));
  for (std::size_t start = 0;;) {
    auto end = hosts.find(',', start);
    r.push_back(hosts.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return r;
}

}  // namespace

std::string connect_problem(std::string_view connect, zklock::error_code ec) {
  auto slash = connect.find('/');
  if (slash != std::string_view::npos)
    if (auto pec = zklock::validate_path(connect.substr(slash)))
      return "chroot '" + std::string(connect.substr(slash)) + "': " + pec.message();
  if (slash == 0) return "no host:port before the chroot";
  for (auto hp : connect_entries(connect)) {
    std::string e(hp);
    if (hp.empty()) return "empty host:port entry (stray ',')";
    auto colon = hp.rfind(':');
    if (colon == std::string_view::npos || (hp.front() == '[' && hp.back() == ']'))
      return "'" + e + "' has no port (expected host:port)";
    auto host = hp.substr(0, colon), port = hp.substr(colon + 1);
    if (host.empty()) return "'" + e + "' has no host";
    if (!valid_host_name(host)) return "host '" + std::string(host) + "' is not a host name or address";
    unsigned value = 0;
    auto [p, pec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || pec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535)
      return "port '" + std::string(port) + "' of '" + e + "' is not a number in 1..65535";
  }
  return ec.message();
}

std::optional<std::string> unresolvable_host(std::string_view connect) {
  for (auto hp : connect_entries(connect)) {
    std::string host(hp.substr(0, hp.rfind(':')));
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0)
      return "cannot resolve host '" + host + "'" + (connect_entries(connect).size() > 1 ? " of '" + std::string(connect) + "'" : std::string()) +
             ": " + (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
  }
  return std::nullopt;
}

std::string default_connect() {
  const char* env = std::getenv("ZKLOCK_CONNECT");
  return env && *env ? env : "127.0.0.1:2181";
}

std::optional<std::string> read_digest(const std::string& file, std::string& digest) {
  std::string source = "$ZKLOCK_DIGEST";
  if (!file.empty()) {
    source = "--digest-file " + file;
    std::FILE* f = std::fopen(file.c_str(), "r");
    if (!f) return source + ": " + std::strerror(errno);
    char buf[1024] = {};
    if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
    std::fclose(f);
    digest = buf;
    while (!digest.empty() && (digest.back() == '\n' || digest.back() == '\r')) digest.pop_back();
  } else if (const char* env = std::getenv("ZKLOCK_DIGEST")) {
    digest = env;
  }
  ::unsetenv("ZKLOCK_DIGEST");
  if (!digest.empty() && (digest.find(':') == std::string::npos || digest.front() == ':'))
    return source + ": expected USER:PASSWORD";
  return std::nullopt;
}

}  // namespace zklock_cli
