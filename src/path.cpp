#include <zklock/path.hpp>

#include "error_message.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace zklock {

error_code validate_path(std::string_view path) noexcept {
  if (path.empty()) return errc::path_empty;
  if (path.front() != '/') return errc::path_not_absolute;
  if (path.size() > max_path_length) return errc::path_too_long;
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return errc::path_control_character;
  if (path.size() == 1) return {};
  if (path.back() == '/') return errc::path_trailing_slash;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(start, end - start);
    if (seg.empty()) return errc::path_empty_segment;
    if (seg == "." || seg == "..") return errc::path_relative_segment;
    start = end + 1;
  }
  return {};
}

error_code validate_lock_path(std::string_view path) {
  // Still path_not_absolute (the code a caller compares), with a message that says what is wrong.
  if (path == "/")
    return detail::with_message(errc::path_not_absolute,
                                "the root '/' cannot be a lock path: name a node under it, e.g. '/locks/a'");
  return validate_path(path);
}

namespace {
bool valid_host(std::string_view h) {
  if (h.empty()) return false;
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    for (char c : h.substr(1, h.size() - 2))
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')) return false;
    return true;
  }
  for (char c : h)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
  return true;
}

error_code malformed(std::string_view connect, const std::string& why) {
  return detail::with_message(errc::malformed_connect_string,
                              "malformed connect string '" + std::string(connect) + "': " + why +
                                  " (expected host:port[,host:port...][/chroot])");
}
}  // namespace

connect_string_parts parse_connect_string(std::string_view connect, error_code& ec) {
  ec = {};
  connect_string_parts parts;
  if (connect.empty()) {
    ec = errc::empty_connect_string;
    return parts;
  }
  std::string_view hosts = connect;
  if (auto slash = connect.find('/'); slash != std::string_view::npos) {
    hosts = connect.substr(0, slash);
    std::string_view chroot = connect.substr(slash);
    if (auto pec = validate_path(chroot)) {
      ec = detail::with_message(static_cast<errc>(pec.value()),
                                "the chroot '" + std::string(chroot) + "' of connect string '" + std::string(connect) +
                                    "': " + pec.message());
      return {};
    }
    if (chroot != "/") parts.chroot = std::string(chroot);
  }
  if (hosts.empty()) {
    ec = malformed(connect, "no host:port before the chroot");
    return {};
  }
  for (std::size_t start = 0, n = 1; start <= hosts.size(); ++n) {
    std::size_t end = std::min(hosts.find(',', start), hosts.size());
    std::string_view entry = hosts.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) {
      ec = malformed(connect, "entry " + std::to_string(n) + " is empty (a stray ',')");
      return {};
    }
    auto colon = entry.rfind(':');
    if (colon == std::string_view::npos || entry.back() == ']') {
      ec = malformed(connect, "'" + std::string(entry) + "' has no port");
      return {};
    }
    std::string_view host = entry.substr(0, colon), port = entry.substr(colon + 1);
    if (host.empty()) {
      ec = malformed(connect, "'" + std::string(entry) + "' has no host");
      return {};
    }
    if (!valid_host(host)) {
      ec = malformed(connect, "the host '" + std::string(host) + "' of '" + std::string(entry) +
                                  "' is not a host name, an IPv4 address or a bracketed IPv6 address");
      return {};
    }
    unsigned value = 0;
    auto [p, pec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || pec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
      ec = malformed(connect, "the port '" + std::string(port) + "' of '" + std::string(entry) +
                                  "' is not a number in 1..65535");
      return {};
    }
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    parts.endpoints.push_back({std::string(entry), std::string(host), static_cast<std::uint16_t>(value)});
  }
  return parts;
}

error_code validate_connect_string(std::string_view connect) {
  error_code ec;
  parse_connect_string(connect, ec);
  return ec;
}

std::string parent_path(std::string_view path) {
  if (path.size() <= 1) return {};
  auto pos = path.rfind('/');
  if (pos == 0) return "/";
  return std::string(path.substr(0, pos));
}

std::string_view node_name(std::string_view path) noexcept {
  auto pos = path.rfind('/');
  return pos == std::string_view::npos ? path : path.substr(pos + 1);
}

std::string join_path(std::string_view parent, std::string_view child) {
  std::string out(parent);
  if (out.empty() || out.back() != '/') out += '/';
  out += child;
  return out;
}

}  // namespace zklock
