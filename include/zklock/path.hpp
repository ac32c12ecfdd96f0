// Validation of znode paths and connect strings: bad input gets a distinct error before any I/O.
#pragma once

#include <zklock/error.hpp>
#include <zklock/export.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

/// The longest path zklock accepts. A server drops the connection (instead of answering) on a
/// request larger than its jute.maxbuffer, 1 MiB by default: the C client reconnects, a lock
/// acquire retries its create, and the drop repeats forever. A lock's release transaction
/// carries its node's path twice, and a guarded transaction (check_op) one more time per op,
/// hence a quarter of that. (A server configured with a smaller jute.maxbuffer needs shorter
/// paths.)
inline constexpr std::size_t max_path_length = 256 * 1024;

/// Checks a znode path. Returns the first problem found, in this order: errc::path_empty,
/// path_not_absolute, path_too_long (more than max_path_length bytes), path_control_character,
/// path_trailing_slash, path_empty_segment, path_relative_segment. "/" is valid.
ZKLOCK_API error_code validate_path(std::string_view path) noexcept;

/// Checks the path of a lock (of any recipe: the lock dir whose children are the contenders'
/// nodes): validate_path's errors, and the root "/", which cannot be a lock dir
/// (errc::path_not_absolute, with a message that names the root). Every recipe object checks
/// its path with this before sending anything; a program may check user input with it first.
ZKLOCK_API error_code validate_lock_path(std::string_view path);

/// One server of a connect string.
struct connect_endpoint {
  std::string entry;       ///< as written: "zk1:2181", "[::1]:2181"
  std::string host;        ///< the host, without the brackets of an IPv6 address
  std::uint16_t port = 0;  ///< 1..65535
};

/// A connect string taken apart.
struct connect_string_parts {
  std::vector<connect_endpoint> endpoints;  ///< in the order written, at least one
  std::string chroot;                       ///< "" when none (or "/")
};

/// Parses "host:port[,host:port...][/chroot]", the one grammar of connect strings (the
/// session's, the zklock command's). Hosts are names, IPv4 addresses or bracketed IPv6
/// addresses; ports 1..65535; the optional chroot must be a valid path. On error, `ec` is
/// errc::empty_connect_string, errc::malformed_connect_string or the chroot's path error,
/// with a message that quotes the connect string and names the bad entry ("the port 'x' of
/// 'zk1:x' is not a number in 1..65535"), and the result is empty.
ZKLOCK_API connect_string_parts parse_connect_string(std::string_view connect, error_code& ec);

/// parse_connect_string's error, or none.
ZKLOCK_API error_code validate_connect_string(std::string_view connect);

/// "/a/b/c" -> "/a/b"; "/a" -> "/"; "/" -> "".
ZKLOCK_API std::string parent_path(std::string_view path);

/// Last segment: "/a/b/c" -> "c".
ZKLOCK_API std::string_view node_name(std::string_view path) noexcept;

/// `join_path("/a", "b")` -> "/a/b"; `join_path("/", "b")` -> "/b".
ZKLOCK_API std::string join_path(std::string_view parent, std::string_view child);

}  // namespace zklock
