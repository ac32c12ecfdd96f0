#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, starts a throwaway ZooKeeper,
# runs the contention demo (several sessions, one thread, one lock) and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
dir=$(mktemp -d /tmp/zklock-demo-XXXXXX)
# Only what the demo needs (no tests, peers, clang, doxygen, gnuplot: the test command installs
# them), the compiler's packages first; the server's packages are installed and the server
# started while the demo compiles (neither needs the other); their lines are printed when they
# are done, not amid the compiler's.
export ZKLOCK_APT_STAMP=$dir/apt-updated
bash scripts/deps.sh build
(bash scripts/deps.sh server 2>"$dir/server.txt" && bash scripts/zk-server.sh start "$dir" >"$dir/connect" 2>>"$dir/server.txt") &
server=$!
trap 'wait $server 2>/dev/null || true; cat "$dir/server.txt" >&2 2>/dev/null; bash scripts/zk-server.sh stop "$dir"' EXIT
# The library as a unity build of one translation unit (its 36 sources; Asio and the shared
# templates compiled once: 40.1 s of compile against 51.7 in 3 batches of 12, docs/TESTING.md),
# on one core while the other compiles the demo program and installs the server; without
# optimization or debug info: half the compiler's time of -O2 -g; a handoff waits on the server,
# not on the CPU; without the recipes the demo program does not link (semaphore, multi-lock,
# election). The test command builds the same dir again as it always does.
DEPS=build BUILD_TESTS=OFF UNITY_BUILD=ON UNITY_BATCH=0 DEMO_BUILD=ON BUILD_TYPE=Debug CMAKE_ARGS="-DCMAKE_CXX_FLAGS_DEBUG=-O0" \
  bash scripts/build.sh contention_demo
wait $server
trap 'bash scripts/zk-server.sh stop "$dir"' EXIT
cat "$dir/server.txt" >&2
connect=$(cat "$dir/connect")
echo "ZooKeeper at $connect" >&2
"$BUILD_DIR/examples/contention_demo" --connect "$connect" "$@"
