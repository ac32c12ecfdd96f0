// zklock locks ROOT: every lock directory under ROOT, who holds it for how long and who waits,
// and the deadlocks across them. Reads only: a listing per directory and a read per contender,
// many in flight at once.
#pragma once

#include <zklock/lock_view.hpp>
#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace zklock_cli {

struct locks_options {
  std::string root;
  int depth = 10;              // levels of directories listed below ROOT (0: ROOT alone)
  std::size_t limit = 100000;  // directories listed at most
  double older_than = -1;      // >= 0: only holders whose node is older than this (seconds)
  bool json = false;
  bool verbose = false;        // the requests and the time on stderr
};

// Parses --depth/--limit/--older-than given as text (empty: the default) into `o`; nullopt, or
// what is wrong with one of them.
std::optional<std::string> parse_locks_options(const std::string& depth, const std::string& limit,
                                               const std::string& older_than, locks_options& o);

// What a walk of ROOT found: each lock directory's view (a semaphore's at its own path).
struct lock_walk {
  std::vector<zklock::lock_dir_view> views;  // by path
  std::set<std::string> semaphore_layouts;   // views of a semaphore's PATH (its leases and locks below it)
  bool root_missing = false;
  bool truncated = false;  // stopped at --limit
  int errors = 0;          // directories or nodes that could not be read (each said)
  int signalled = 0;       // a signal of `sigs` came first: nothing else is set
};
// Lists ROOT and the directories below it (to --depth), reads every contender.
boost::asio::awaitable<lock_walk> walk_locks(zklock::session& s, const locks_options& o, boost::asio::signal_set& sigs);

// "0x1000a3f2e5c0007"
std::string session_str(std::int64_t id);
// "12.3s"
std::string age_str(double seconds);
// A JSON string of bytes (a byte outside UTF-8 as \u00XX).
std::string json_string(std::string_view s);
std::string json_number(double v);
// {"node", "kind", "session", "identity", "parent" (null: none), "age"}; the node's name after `node_prefix`.
std::string contender_json(const zklock::contender& c, std::int64_t now_ms, std::string_view node_prefix);
// A lock's JSON object: {"path", "kind", "holders" (`holders`), "waiters", "campaigning" (an
// election's candidates other than the leader; its "waiters" are empty), "oldest_wait"}.
std::string view_json(const zklock::lock_dir_view& v, const std::vector<zklock::contender>& holders, std::int64_t now_ms);
// "0x1000a3f2e5c0007 (web-1:4242)"
std::string contender_text(const zklock::contender& c);
std::int64_t now_ms();

// Lists and prints (stdout) with the connected session `s`. Returns the exit status: 0, or 1
// when ROOT does not exist or a directory could not be read (what could be read is printed).
// Stops at once, printing nothing, when one of `sigs` comes first (status 128+N).
boost::asio::awaitable<int> run_locks(zklock::session& s, const locks_options& o, boost::asio::signal_set& sigs);

}  // namespace zklock_cli
