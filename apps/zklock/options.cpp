#include "command.hpp"

#include <zklock/path.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace zklock_cli {

void say(const std::string& s) { std::fprintf(stderr, "zklock: %s\n", s.c_str()); }

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
}

std::string seconds_str(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return buf;
}

// The length of the well-formed UTF-8 sequence at the start of `s`; 0 when it is not one.
std::size_t utf8_length(std::string_view s) {
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  std::size_t n = b(0) >= 0xf0 && b(0) <= 0xf4 ? 4 : b(0) >= 0xe0 ? 3 : b(0) >= 0xc2 && b(0) < 0xe0 ? 2 : 0;
  if (n == 0 || s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i)
    if ((b(i) & 0xc0) != 0x80) return 0;
  // no overlong forms, surrogates or code points past U+10FFFF
  if ((n == 3 && b(0) == 0xe0 && b(1) < 0xa0) || (n == 3 && b(0) == 0xed && b(1) >= 0xa0) ||
      (n == 4 && b(0) == 0xf0 && b(1) < 0x90) || (n == 4 && b(0) == 0xf4 && b(1) >= 0x90))
    return 0;
  return n;
}

std::string line_field(std::string_view id, std::string_view also) {
  if (id.empty()) return "-";
  std::string r;
  for (std::size_t i = 0; i < id.size();) {
    auto ch = static_cast<unsigned char>(id[i]);
    std::size_t n = ch >= 0x80 ? utf8_length(id.substr(i)) : 1;
    if (n == 0 || ch < 0x20 || ch == 0x7f || ch == '\\' || also.find(static_cast<char>(ch)) != std::string_view::npos) {
      char esc[5];
      std::snprintf(esc, sizeof esc, "\\x%02x", ch);
      r += esc;
      n = 1;
    } else {
      r += id.substr(i, n);
    }
    i += n;
  }
  return r;
}

constexpr double max_seconds = 2147483;  // the session timeout goes to the C client in int ms

std::optional<std::string> parse_seconds(const std::string& name, const std::string& text, bool zero_ok, double& out) {
  char* end = nullptr;
  double v = NAN;
  if (!text.empty() && !std::isspace(static_cast<unsigned char>(text[0]))) v = std::strtod(text.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(v) || (zero_ok ? v < 0 : v <= 0))
    return name + ": expected a number of seconds " + (zero_ok ? ">= 0" : "> 0") + ", got '" + text + "'";
  if (v > max_seconds) return name + ": at most " + std::to_string(static_cast<long>(max_seconds)) + " seconds, got '" + text + "'";
  out = v;
  return std::nullopt;
}

int parse_leases(const std::string& t, int& out) {
  auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), out);
  if (err != std::errc() || end != t.data() + t.size() || out < 1) {
    say("--semaphore: expected a whole number of leases >= 1, got '" + t + "'");
    return exit_usage;
  }
  return 0;
}

int check_lock_path(const std::string& path) {
  if (auto ec = zklock::validate_lock_path(path)) {
    say("bad lock path '" + path + "': " + ec.message());
    return exit_usage;
  }
  return 0;
}

void add_common(CLI::App* app, cli_context& ctx) {
  auto& o = ctx.common;
  app->add_option("-c,--connect", o.connect, "ZooKeeper hosts: host:port[,host:port...][/chroot]")
      ->default_str("$ZKLOCK_CONNECT, else 127.0.0.1:2181");
  app->add_option("--session-timeout", ctx.session_timeout,
                  "ZooKeeper session timeout in seconds (the server clamps it to [2, 20] ticks; "
                  "zklock says so when it does)")
      ->type_name("SECONDS")
      ->capture_default_str();
  app->add_option("--connect-timeout", ctx.connect_timeout, "give up connecting after this many seconds")
      ->type_name("SECONDS")
      ->capture_default_str();
  app->add_option("--digest-file", ctx.digest_file,
                  "read digest credentials USER:PASSWORD from this file (else $ZKLOCK_DIGEST); "
                  "never on the command line, where other users can read them")
      ->type_name("PATH");
  app->add_option("--acl", o.acl,
                  "ACL of the nodes zklock creates (the lock node, a missing lock dir and parents): "
                  "'creator' (all permissions to the credentials' user only: ZooKeeper's creator_all) or "
                  "'open'")
      ->type_name("creator|open")
      ->default_str("creator with --digest-file or $ZKLOCK_DIGEST, else open")
      ->check(CLI::IsMember({"creator", "open"}));
  auto* quiet = app->add_flag("-q,--quiet", o.quiet, "only errors");
  app->add_flag("-v,--verbose", o.verbose, "all of the ZooKeeper client's log")->excludes(quiet);
}

}  // namespace zklock_cli
