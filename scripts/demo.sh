#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, starts a throwaway ZooKeeper,
# runs the contention demo (several sessions, one thread, one lock) and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo needs, installed (scripts/deps.sh demo: no peers, clang, doxygen, gnuplot)
# and built (the library and the demo, as a unity build, without optimization or debug info:
# half the compiler's time of -O2 -g; a handoff waits on the server, not on the CPU): the demo
# within a minute. The test command builds the same dir again as it always does.
DEPS=demo UNITY_BUILD=ON BUILD_TYPE=Debug CMAKE_ARGS="-DCMAKE_CXX_FLAGS_DEBUG=-O0" bash scripts/build.sh contention_demo
BUILD_DIR=${BUILD_DIR:-build}
dir=$(mktemp -d /tmp/zklock-demo-XXXXXX)
trap 'bash scripts/zk-server.sh stop "$dir"' EXIT
connect=$(bash scripts/zk-server.sh start "$dir")
echo "ZooKeeper at $connect" >&2
"$BUILD_DIR/examples/contention_demo" --connect "$connect" "$@"
