#pragma once

#include <string>

namespace zklock::detail {
/// A fresh random UUID, the id in our nodes' names ("_c_<id>-lock-"): how a create lost with
/// the connection is found again (protected creation).
std::string new_client_id();
}  // namespace zklock::detail
