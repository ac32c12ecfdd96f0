#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test with ctest.
# Tests start (and always stop) their own ZooKeeper servers on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 "$@" || status=$?
# nothing of ours may outlive the run
if pgrep -f "zklock-test-" >/dev/null; then
  echo "zklock: ZooKeeper processes left behind by the tests:" >&2
  pgrep -fa "zklock-test-" >&2
  pkill -9 -f "zklock-test-" || true
  status=1
fi
exit $status
