#!/usr/bin/env bash
# Configures and builds zklock (RelWithDebInfo) into build/: every target, or only the targets
# named as arguments (the demo builds just the library and the demo program). Installs what is
# missing first: DEPS=demo only what the demo needs (scripts/deps.sh), everything by default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh "${DEPS:-all}"
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
# Each of these is always passed, so a later build in the same dir without it (the test
# command's after the demo's) is configured as every other build again:
# UNITY_BUILD=ON (the demo's): each target's sources compiled in batches of UNITY_BATCH (0: all
#   in one, the demo's library: 40.1 s of compile CPU against 51.7 in 3 batches of 12).
# BUILD_TESTS=OFF (the demo's): the tests not even configured (no Catch2 needed).
# UNITY_LIBRARY=ON (the test command's): the library alone as a unity build (CMakeLists.txt).
# DEMO_BUILD=ON (the demo's): the library without the recipes the demo does not link
#   (CMakeLists.txt); every other build passes OFF, so the test command builds the whole library.
# BENCH_O0=ON (the test command's): the benchmark programs at -O0 (bench/CMakeLists.txt); OFF
#   for every other build, so scripts/bench's measures -O2 programs.
# LIBRARY_PIC=ON (the test command's): the library's objects position-independent, for the shared
#   library of the package test to link them (CMakeLists.txt).
# APPS_O0=ON (the test command's): the zklock tool at -O0 (CMakeLists.txt); -O1 otherwise.
# DEBUG_INFO: RelWithDebInfo's debug info, -g by default; the test command's -g1 (line tables:
#   4-12 % less compile time for a library source; the same code, and the installed library
#   has no debug info either way, CMakeLists.txt).
# TEST_CXX (the test command's: clang++-14): the C++ compiler of the test-only programs (the
#   tests, the fault tools, the benchmark programs at BENCH_O0; CMakeLists.txt ZKLOCK_TEST_CXX);
#   empty by default: the project's compiler for everything.
# CMAKE_ARGS: more -D options (the demo's: a build without optimization or debug info).
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DCMAKE_UNITY_BUILD="${UNITY_BUILD:-OFF}" -DCMAKE_UNITY_BUILD_BATCH_SIZE="${UNITY_BATCH:-8}" \
  -DZKLOCK_BUILD_TESTS="${BUILD_TESTS:-ON}" -DZKLOCK_UNITY_LIBRARY="${UNITY_LIBRARY:-OFF}" \
  -DZKLOCK_DEMO_BUILD="${DEMO_BUILD:-OFF}" -DZKLOCK_BENCH_O0="${BENCH_O0:-OFF}" \
  -DZKLOCK_APPS_O0="${APPS_O0:-OFF}" -DZKLOCK_LIBRARY_PIC="${LIBRARY_PIC:-OFF}" -DZKLOCK_TEST_CXX="${TEST_CXX:-}" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 ${DEBUG_INFO:--g} -DNDEBUG" ${CMAKE_ARGS:-} >&2
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" "${targets[@]}" >&2
