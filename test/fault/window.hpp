// The partition window: a holder behind blackholed proxies, a zklock waiter
// connected directly; window = the holder's stop minus the successor's grant.
#pragma once

#include "options.hpp"
#include "zk_server.hpp"

#include <string>

namespace zklock::fault {

struct window_result {
  std::string client;
  int run = 0;
  double grant_ms = -1;      // successor's grant, ms after the partition began
  double stop_ms = -1;       // zklock: command exit; else -1
  double suspended_ms = -1;  // Curator / kazoo: SUSPENDED
  double lost_ms = -1;       // zklock library guard lost / Curator LOST / kazoo LOST
  double healed_ms = -1;     // when the partition was healed (kazoo: to see LOST at all)
  std::string note;
};

window_result measure_window(const options& o, zklock::test::zk_ensemble& ens, const std::string& client, int run,
                             const std::string& work);

}  // namespace zklock::fault
