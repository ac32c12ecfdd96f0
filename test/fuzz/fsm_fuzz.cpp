// libFuzzer driver of the state machines' property tests: the fuzzer's bytes are the choices
// the seeded Catch2 tests draw from their generator (test/unit/sim/properties.hpp: the same
// inputs, the same invariants, the same oracle of the grant rule). The first byte picks the
// machine: acquire_fsm with connection drops and reconnects, acquire_fsm without, or hold_fsm (the
// release). A broken invariant prints what broke and aborts, which libFuzzer reports as a crash.
//
// Build and run: scripts/fuzz.sh [seconds] (clang++-14 with libfuzzer-14-dev), or configure
// with -DZKLOCK_FUZZ=ON and a clang compiler for the zklock_fsm_fuzz target.
#include "sim/properties.hpp"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  zklock::testing::byte_source src{data + 1, size - 1};
  std::optional<std::string> broken;
  const char* machine = "";
  switch (data[0] % 3) {
    case 0:
      machine = "acquire_fsm (connection faults)";
      broken = zklock::testing::run_lock_property(src, true);
      break;
    case 1:
      machine = "acquire_fsm";
      broken = zklock::testing::run_lock_property(src, false);
      break;
    default:
      machine = "hold_fsm";
      broken = zklock::testing::run_hold_property(src);
      break;
  }
  if (broken) {
    std::fprintf(stderr, "zklock fsm property broken: %s: %s\n", machine, broken->c_str());
    std::abort();
  }
  return 0;
}
