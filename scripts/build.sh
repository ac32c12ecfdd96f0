#!/usr/bin/env bash
# Configures and builds zklock (RelWithDebInfo) into build/: every target, or only the targets
# named as arguments (the demo builds just the library and the demo program). Installs what is
# missing first: DEPS=demo only what the demo needs (scripts/deps.sh), everything by default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh "${DEPS:-all}"
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
# UNITY_BUILD=ON (the demo's): each target's sources compiled as one, half the time for the
# library on 2 cores (64 s -> 32 s). Always passed, so a later build in the same dir without it
# (the test command's) compiles file by file again, as every other build does.
# CMAKE_ARGS: more -D options (the demo's: a build without optimization or debug info).
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DCMAKE_UNITY_BUILD="${UNITY_BUILD:-OFF}" ${CMAKE_ARGS:-} >&2
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" "${targets[@]}" >&2
