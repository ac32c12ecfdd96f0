#include <zklock/path.hpp>

#include "error_message.hpp"

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
}  // namespace

error_code validate_lock_path(std::string_view path) {
  // Still path_not_absolute (the code a caller compares), with a message that says what is wrong.
  if (path == "/")
    return detail::with_message(errc::path_not_absolute,
                                "the root '/' cannot be a lock path: name a node under it, e.g. '/locks/a'");
  return validate_path(path);
}

error_code validate_connect_string(std::string_view connect) noexcept {
  if (connect.empty()) return errc::empty_connect_string;
  std::string_view hosts = connect;
  auto slash = connect.find('/');
  if (slash != std::string_view::npos) {
    hosts = connect.substr(0, slash);
    std::string_view chroot = connect.substr(slash);
    if (auto ec = validate_path(chroot)) return ec;
  }
  if (hosts.empty()) return errc::malformed_connect_string;
  std::size_t start = 0;
  while (start <= hosts.size()) {
    std::size_t end = hosts.find(',', start);
    if (end == std::string_view::npos) end = hosts.size();
    std::string_view hp = hosts.substr(start, end - start);
    auto colon = hp.rfind(':');
    if (colon == std::string_view::npos) return errc::malformed_connect_string;
    std::string_view host = hp.substr(0, colon), port = hp.substr(colon + 1);
    if (!valid_host(host) || port.empty()) return errc::malformed_connect_string;
    unsigned value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535)
      return errc::malformed_connect_string;
    start = end + 1;
  }
  return {};
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
