#!/usr/bin/env bash
# Configures and builds zklock (release with assertions kept: RelWithDebInfo) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >&2
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" >&2
