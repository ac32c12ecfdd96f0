// The rules a test driver keeps of its own while it carries out a machine's actions (a second
// request while one is in flight, a release without a node, ...): the first one broken.
#pragma once

#include <string>

namespace zklock::testing {

struct driver_rules {
  std::string violation;  // the first broken rule, in words; empty while none is

  void forbid(const std::string& what) {
    if (violation.empty()) violation = what;
  }
};

}  // namespace zklock::testing
