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
out=""
prev=""
for a in "$@"; do
  case "$a" in
    --param=* | -Wno-tsan) ;;
    *) args+=("$a") ;;
  esac
  [ "$prev" != -o ] || out=$a
  prev=$a
done
# A precompiled header is made as g++'s (CMake: -include cmake_pch.hxx, output cmake_pch.hxx.gch):
# clang takes a .gch already there for that -include and would chain the new one on the stale
# one ("out of date" at its next use): gone first.
case "$out" in
  *.gch) rm -f "$out" ;;
esac
exec "${launcher[@]}" "$cxx" "${args[@]}"
