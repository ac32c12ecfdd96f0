#!/usr/bin/env bash
# A compiler launcher (CMake's CXX_COMPILER_LAUNCHER, or CXX_LINKER_LAUNCHER) that compiles or links
# with another C++ compiler than the project's: ZKLOCK_TEST_CXX's for the test-only programs
# (CMakeLists.txt).
#   compile_with.sh CXX [LAUNCHER...] -- PROJECT_COMPILER ARGS...
# runs LAUNCHER... CXX ARGS... (LAUNCHER: the project's own launcher, e.g. ccache), without the
# project compiler's options that only g++ knows (--param=..., -Wno-tsan).
set -euo pipefail
cxx=$1
shift
launcher=()
while (($#)) && [ "$1" != -- ]; do
  launcher+=("$1")
  shift
done
shift 2  # "--" and the project's compiler
args=()
for a in "$@"; do
  case "$a" in
    --param=* | -Wno-tsan) ;;
    *) args+=("$a") ;;
  esac
done
exec "${launcher[@]}" "$cxx" "${args[@]}"
