// Error codes that carry their own message: which host, which endpoint, what failed. Private
// to src/.
#pragma once

#include <zklock/error.hpp>

#include <string>

namespace zklock::detail {

/// `e` with `message` as its message(): the same value, in a category that compares equal to
/// zklock_category() (Boost.System identifies a category by its id), so `ec == e`, the
/// conditions and switch-on-value code see `e` itself. Each distinct message is kept for the
/// life of the process (the error_code points at it); past a bound the plain `e` is returned.
error_code with_message(errc e, std::string message);

}  // namespace zklock::detail
