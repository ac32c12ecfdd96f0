// zklock locks ROOT: every lock directory under ROOT, who holds it for how long and who waits,
// and the deadlocks across them. Reads only: a listing per directory and a read per contender,
// many in flight at once.
#pragma once

#include <zklock/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstddef>
#include <optional>
#include <string>

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

// Lists and prints (stdout) with the connected session `s`. Returns the exit status: 0, or 1
// when ROOT does not exist or a directory could not be read (what could be read is printed).
// Stops at once, printing nothing, when one of `sigs` comes first (status 128+N).
boost::asio::awaitable<int> run_locks(zklock::session& s, const locks_options& o, boost::asio::signal_set& sigs);

}  // namespace zklock_cli
