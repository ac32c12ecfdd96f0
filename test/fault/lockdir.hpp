// The lock dir seen from outside the clients, by sessions of the harness's own (direct to the
// ensemble): what a run left behind (nodes, watches).
#pragma once

#include "zk_server.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace zklock::fault {

struct leftovers {
  int nodes = -1;
  std::vector<std::string> node_names;
  int watches = 0;
  std::vector<std::string> watch_lines;
};

// Children of `dir` (-1 when it could not be read); `names`: "name owner=0x<session>".
int count_nodes(const std::string& connect, const std::string& dir, std::vector<std::string>* names);

// `wchp` (path -> sessions) of every serving member: watches on the lock dir or its children.
int count_watches(const zklock::test::zk_ensemble& ens, const std::string& dir, std::vector<std::string>* lines);

}  // namespace zklock::fault
