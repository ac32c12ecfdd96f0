#include "session_setup.hpp"

#include <zklock/path.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <netdb.h>

#include <cerrno>
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
  // Each server and its cause once: " (HOST:PORT: Connection refused, 12 attempts)".
  auto where = log.failure_summary();
  if (where.empty()) where = " (" + s.options().connect + ": no answer)";
  if (r.index() == 2) {
    say("cannot connect within --timeout" + where);
    co_return exit_error;
  }
  if (auto [ec] = std::get<0>(r); ec) {
    if (!log.resolve_failure.empty())
      say("cannot resolve the hosts of '" + s.options().connect + "': " + log.resolve_failure +
          " (the ZooKeeper client's getaddrinfo)");
    else if (ec == zklock::errc::connect_timeout)
      say("cannot connect within " + seconds_str(co.connect_timeout) + " s (--connect-timeout)" + where);
    else
      say("cannot connect to " + s.options().connect + ": " + ec.message() + log.failure_summary());
    co_return exit_error;
  }
  if (auto t = s.negotiated_timeout(); t != to_ms(co.session_timeout) && !co.quiet)
    say("note: the server set the session timeout to " + seconds_str(t.count() / 1000.0) + " s (asked for " +
        seconds_str(co.session_timeout) + " s)");
  co_return 0;
}

std::optional<std::string> unresolvable_host(std::string_view connect) {
  zklock::error_code ec;
  auto parts = zklock::parse_connect_string(connect, ec);  // (checked by the caller: the one grammar)
  for (const auto& e : parts.endpoints) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(e.host.c_str(), nullptr, &hints, &res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0)
      return "cannot resolve host '" + e.host + "'" +
             (parts.endpoints.size() > 1 ? " of '" + std::string(connect) + "'" : std::string()) + ": " +
             (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
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
