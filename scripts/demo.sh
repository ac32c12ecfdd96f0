#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, starts a throwaway ZooKeeper,
# runs the contention demo (several sessions, one thread, one lock) and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
dir=$(mktemp -d /tmp/zklock-demo-XXXXXX)
# apt's downloads run as the user _apt, which must reach $dir/debs
chmod 755 "$dir"
# Only what the demo needs (no tests, peers, clang, doxygen, gnuplot: the test command installs
# them), the compiler's packages first; the server's packages are downloaded while those
# install (into $dir/debs, without dpkg's lock), installed when they are, and the server started
# while the demo compiles (neither needs the other); their lines are printed when they are done,
# not amid the compiler's.
export ZKLOCK_APT_STAMP=$dir/apt-updated ZKLOCK_APT_ARCHIVES=$dir/debs
server_job() {
  # the package lists fresh (the build's install updated them, or found nothing missing)
  while [ ! -e "$ZKLOCK_APT_STAMP" ] && [ ! -e "$dir/build-deps" ]; do sleep 0.1; done
  if [ -e "$dir/build-deps" ] && [ "$(cat "$dir/build-deps")" != 0 ]; then return 1; fi
  ZKLOCK_APT_DOWNLOAD_ONLY=1 bash scripts/deps.sh server
  bash scripts/deps.sh server  # after the build's install: it waits for dpkg's lock
  # the tests' JVM options for their servers (C1 only, the serial collector): less CPU to start
  ZK_SERVER_JAVA_OPTS="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData" \
    bash scripts/zk-server.sh start "$dir" >"$dir/connect"
}
# niced: the library's compile (the longest step) keeps its core; the install takes what the
# compiles leave
(renice -n 10 -p "$BASHPID" >/dev/null && server_job) 2>"$dir/server.txt" &
server=$!
trap 'wait $server 2>/dev/null || true; cat "$dir/server.txt" >&2 2>/dev/null; bash scripts/zk-server.sh stop "$dir"' EXIT
status=0
bash scripts/deps.sh build || status=$?
echo "$status" >"$dir/build-deps.new" && mv "$dir/build-deps.new" "$dir/build-deps"
[ "$status" = 0 ] || exit "$status"
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
