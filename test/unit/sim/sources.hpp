// Where the simulations' random choices come from (test/unit/sim): `operator()` gives the next
// choice (an unsigned number) and `exhausted()` says the input is used up. The seeded Catch2
// property tests draw from a seeded generator (never used up), the libFuzzer driver
// (test/fuzz) from its bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace zklock::testing {

/// A seeded source: the generator the Catch2 property tests have always used.
struct seeded_source {
  std::mt19937 rng;
  explicit seeded_source(std::uint32_t seed) : rng(seed) {}
  std::uint32_t operator()() { return rng(); }
  bool exhausted() const noexcept { return false; }
};

/// The fuzzer's source: one byte a choice; 0 once the bytes are used up.
struct byte_source {
  const std::uint8_t* data;
  std::size_t size;
  std::uint32_t operator()() {
    if (size == 0) {
      used_up = true;
      return 0;
    }
    --size;
    return *data++;
  }
  bool exhausted() const noexcept { return used_up; }
  bool used_up = false;
};

}  // namespace zklock::testing
