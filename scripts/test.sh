#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test with ctest.
# Tests start (and always stop) their own ZooKeeper servers on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
UNITY_LIBRARY=ON DEBUG_INFO=-g1 bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# This run's temp dir: the test fixture (test/support/zk_server.cpp, through
# std::filesystem::temp_directory_path) and the Python tests (tempfile) put their servers' dirs
# under $TMPDIR, so the servers' command lines name it and the check below finds this run's
# servers only, never those of a concurrent run.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/zklock-run-XXXXXX")
status=0
# In parallel (most tests wait on timers and servers): the CPU-heavy and timing-sensitive tests
# say so in their CMake properties (RUN_SERIAL, PROCESSORS, RESOURCE_LOCK; docs/TESTING.md).
ctest_args=(--output-on-failure --timeout 600)
if (($#)); then
  TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" -j "${CTEST_JOBS:-4}" "$@" || status=$?
else
  # The fault passes (label fault, one at a time in each of their two lanes, about 220 s) wait
  # more than they compute (a quarter of a core each): they run in a ctest of their own, from
  # their directory's test list (its own Testing/), beside the 4 slots of every other test
  # instead of in 2 of them. Their output is shown when both are done.
  TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR/test/fault" "${ctest_args[@]}" -L '^fault$' -j 2 \
    >"$run_tmp/fault.out" 2>&1 &
  fault_pid=$!
  TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" -LE '^fault$' -j "${CTEST_JOBS:-4}" || status=$?
  fault_status=0
  wait $fault_pid || fault_status=$?
  echo "== the fault passes (ctest --test-dir $BUILD_DIR/test/fault -L '^fault\$'):"
  cat "$run_tmp/fault.out"
  ((fault_status == 0)) || status=$fault_status
fi
# nothing of ours may outlive the run
if pgrep -f -- "$run_tmp/" >/dev/null; then
  echo "zklock: ZooKeeper processes left behind by the tests:" >&2
  pgrep -fa -- "$run_tmp/" >&2
  pkill -9 -f -- "$run_tmp/" || true
  status=1
fi
rm -rf "$run_tmp"
exit $status
