#!/usr/bin/env bash
# Runs the state machines' property test under libFuzzer (test/fuzz/fsm_fuzz.cpp): builds the
# driver with clang++-14 and -fsanitize=fuzzer,address,undefined from the state machines'
# sources only (no session engine, no ZooKeeper client), then fuzzes for the given time.
#   scripts/fuzz.sh [seconds=600] [extra libFuzzer flags...]
# Env: FUZZ_DIR (build dir and corpus, default build-fuzz), CXX (default clang++-14),
# FUZZ_BUILD_ONLY=1 (build, do not run).
# Crashes land in $FUZZ_DIR/crash-*; replay one with: $FUZZ_DIR/zklock_fsm_fuzz <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
CXX=${CXX:-clang++-14}

if ! command -v "$CXX" >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz.sh: installing clang-14 and libfuzzer-14-dev" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get install -y clang-14 libfuzzer-14-dev
fi

mkdir -p "$FUZZ_DIR/corpus"
# one compile at a time on a shared machine (the lock is a no-op where nobody else takes it)
build=("$CXX" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -Iinclude -Isrc -Itest/unit
  test/fuzz/fsm_fuzz.cpp src/sansio/node_name.cpp src/sansio/grant_rule.cpp src/sansio/acquire_*.cpp src/sansio/node_delete_backoff.cpp src/sansio/hold_fsm.cpp src/path.cpp src/error.cpp src/types.cpp
  -o "$FUZZ_DIR/zklock_fsm_fuzz")
if command -v flock >/dev/null; then
  flock /tmp/zklock-build.lock "${build[@]}"
else
  "${build[@]}"
fi

[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
cd "$FUZZ_DIR"
# -jobs=1: one fuzzing process (a machine shared with builds), its output in fuzz-0.log
status=0
./zklock_fsm_fuzz -max_total_time="$seconds" -jobs=1 -workers=1 -print_final_stats=1 "$@" corpus || status=$?
grep -E "^(Done|stat::)|^#[0-9]+.*(DONE|pulse)|Test unit written|zklock fsm property broken" fuzz-0.log | tail -n 12
exit $status
