// A set of an enum's values (0 to 31), one bit each: what a state machine has in flight (its
// requests sent and not yet answered) reads as one value, so "is X in flight", "nothing in
// flight" and "forget everything" (the session died) are one call each. No allocation, no Asio.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace zklock::detail {

template <class Enum>
class flag_set {
  static_assert(std::is_enum_v<Enum>, "flag_set holds the values of an enum");
  using bits = std::uint32_t;
  static constexpr bits bit(Enum e) noexcept { return bits{1} << static_cast<unsigned>(e); }

 public:
  constexpr flag_set() noexcept = default;
  constexpr flag_set(std::initializer_list<Enum> values) noexcept {
    for (Enum e : values) insert(e);
  }

  constexpr void insert(Enum e) noexcept { bits_ |= bit(e); }
  constexpr void erase(Enum e) noexcept { bits_ &= ~bit(e); }
  /// Erases `e`; returns whether it was there (a reply takes its request out of the set).
  constexpr bool take(Enum e) noexcept {
    bool was = contains(e);
    erase(e);
    return was;
  }
  constexpr void clear() noexcept { bits_ = 0; }
  constexpr bool contains(Enum e) const noexcept { return (bits_ & bit(e)) != 0; }
  /// Any of `other`'s values is here.
  constexpr bool contains_any(flag_set other) const noexcept { return (bits_ & other.bits_) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }

  friend constexpr bool operator==(flag_set, flag_set) noexcept = default;

 private:
  bits bits_ = 0;
};

}  // namespace zklock::detail
