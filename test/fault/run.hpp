// One run of a scenario: the clients, their proxies, the fenced resource, the nemesis, the heal,
// the stop, the leftovers, the checker.
#pragma once

#include "checker.hpp"
#include "options.hpp"
#include "zk_server.hpp"

#include <cstdint>
#include <string>

namespace zklock::fault {

struct harness {
  options o;
  std::string work;
  zklock::test::zk_ensemble* ens = nullptr;
  std::uint64_t base_seed = 0;
  std::string prefix;  // of the runs' lock dirs and work dirs: a pass's, apart from the others' (--pass)

  run_result run(const std::string& scenario, int run_index);
};

}  // namespace zklock::fault
