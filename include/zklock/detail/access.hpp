// detail::access: the library's one way into its public classes' private members (Boost.MySQL's
// detail::access). A class that befriends it (`friend struct detail::access;`) lets the library
// build it through a private constructor and reach its engine; users never need it.
#pragma once

#include <utility>

namespace zklock::detail {

/// Static functions that reach the private members of any class that befriends this one.
struct access {
  /// A `T` built through its private constructor (a watch from its state, a guard from its
  /// hold, a leadership from its guard and identity).
  template <class T, class... Args>
  static T construct(Args&&... args) {
    return T(std::forward<Args>(args)...);
  }
  /// The engine behind a public object: a session's `impl_` (its session_impl).
  template <class T>
  static const auto& impl(const T& object) noexcept {
    return object.impl_;
  }
  /// A handle's shared state: a watch's `state_`.
  template <class T>
  static const auto& state(const T& object) noexcept {
    return object.state_;
  }
};

}  // namespace zklock::detail
