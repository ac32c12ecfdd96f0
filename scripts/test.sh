#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test with ctest.
# Tests start (and always stop) ZooKeeper servers on free loopback ports: one a ctest run shares
# for most tests, and servers of their own for those that stop or pause theirs.
#   scripts/test.sh            everything, in three overlapping phases (below)
#   scripts/test.sh ARGS...    build everything, then one ctest with ARGS (e.g. -R pattern, -j1)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# the test command's build (scripts/build.sh says what each setting does)
build_env=(UNITY_LIBRARY=ON LIBRARY_PIC=ON DEBUG_INFO=-g1 BENCH_O0=ON APPS_O0=ON TEST_CXX=clang++-14)
build() { env "${build_env[@]}" bash scripts/build.sh "$@"; }
# This run's temp dir: the test fixture (test/support/zk_server.cpp, through
# std::filesystem::temp_directory_path) and the Python tests (tempfile) put their servers' dirs
# under $TMPDIR, so the servers' command lines name it and the check below finds this run's
# servers only, never those of a concurrent run.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/zklock-run-XXXXXX")
ctest_args=(--output-on-failure --timeout 600)
status=0
# idle priority (SCHED_IDLE): the command runs on a core only when nothing else wants it; where
# the scheduler refuses it (a sandbox's filter), the lowest nice instead
idle() {
  if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 "$@"; else nice -n 19 "$@"; fi
}
phase() { echo "== zklock test command, $(date -u +%T) (${SECONDS} s): $*" >&2; }
check() {  # the exit status of a phase that ran in the background, and its output
  local pid=$1 title=$2 out=$3 rc=0
  wait "$pid" || rc=$?
  echo "== $title:"
  cat "$out"
  ((rc == 0)) || status=$rc
}
if (($#)); then
  build
  TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" -j "${CTEST_JOBS:-4}" "$@" || status=$?
else
  # Most tests wait on timers and servers (the ctest of every test but the compilers uses less
  # than a core of 2), and the build uses both cores: the tests that need only the library's
  # own test programs run while the rest builds (docs/TESTING.md, "The test command's phases").
  # 1. The library and the programs the tests run, the unit and integration tests, the
  # fault-injection tools. The build's packages first; the library (g++), then the zklock tool
  # and the examples (clang++ 14 with the programs' precompiled header, CMakeLists.txt:
  # zklock_program) compile (niced: dpkg keeps its core) while the rest installs (clang first,
  # then the JRE and JDK, the peers, Catch2, doxygen: dpkg, on one core), configured without the
  # tests, which need those, but with the test build's flags for the programs
  # (ZKLOCK_FAST_TEST_BUILD, cached: the next build configures with the tests and compiles none
  # of them again). The programs' configure comes once clang is installed (or its install
  # failed: then g++ compiles them).
  phase "1. the build's packages; the library, then the zklock tool and the examples, while the rest installs"
  export ZKLOCK_APT_STAMP=$run_tmp/apt-updated
  bash scripts/deps.sh build
  (
    bash scripts/deps.sh test-compiler || true
    : >"$run_tmp/test-compiler.done"
    bash scripts/deps.sh all
  ) >"$run_tmp/deps.out" 2>&1 &
  deps_pid=$!
  programs=(zklock-cli contention_demo acquire_release recipes_tour threaded_workers stock_server stock_client
    scheduler_failover)
  phase1_build() {
    nice -n 10 env "${build_env[@]}" DEPS=build BUILD_TESTS=OFF CMAKE_ARGS=-DZKLOCK_FAST_TEST_BUILD=ON \
      bash scripts/build.sh "$@"
  }
  phase1_build zklock || status=$?
  while [ ! -e "$run_tmp/test-compiler.done" ] && kill -0 $deps_pid 2>/dev/null; do sleep 0.2; done
  ((status != 0)) || phase1_build "${programs[@]}" || status=$?
  deps_rc=0
  wait $deps_pid || deps_rc=$?
  cat "$run_tmp/deps.out" >&2
  if ((deps_rc != 0 || status != 0)); then
    echo "zklock: installing the tests' packages (status $deps_rc) or building the library and programs (status $status) failed" >&2
    rm -rf "$run_tmp"
    exit $((deps_rc != 0 ? deps_rc : status))
  fi
  phase "1. the unit and integration tests, the fault tools"
  build zklock_unit_tests zklock_integration_tests zklock_fault_checker_test zklock-faultharness zklock_fault_worker
  phase "2. the unit, integration, apps, interop tests and the fault passes beside the rest of the build"
  # 2. In the background: the fault passes (label fault: two lanes, each one harness running its
  #    passes on one ensemble, about 180 s; a third to a half of a core each) in a ctest of their
  #    own (their directory's test list, its own Testing/); and in test/'s, one ctest after the
  #    other: the unit and integration tests but those that must have the machine to themselves
  #    (labels integration-timing, lock-delay-timing, integration-ensemble: phase 3), then, once
  #    the programs they run are built, the zklock tool's and the examples' tests and the peers'
  #    (apps, interop; the timed ones are apps-timing, phase 3). Meanwhile the programs, then
  #    everything else, build niced: a test's wake-up comes before a compiler.
  #    And the compilers' checks that need the sources only (label sources: the public headers
  #    under strict warnings, the layers, each library source's includes; the API reference), at
  #    idle priority (SCHED_IDLE, `chrt --idle 0`): they take only a core that nothing else wants,
  #    now and beside the timed tests of phase 3, and finish after them.
  TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR/test/fault" "${ctest_args[@]}" -L '^fault$' -j 2 \
    >"$run_tmp/fault.out" 2>&1 &
  fault_pid=$!
  TMPDIR=$run_tmp idle ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" -L '^sources$' -j 2 \
    >"$run_tmp/sources.out" 2>&1 &
  sources_pid=$!
  (
    rc=0
    TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR/test" "${ctest_args[@]}" -L '^(unit|integration)$' \
      -j "${CTEST_JOBS:-4}" || rc=$?
    while [ ! -s "$run_tmp/programs.status" ]; do sleep 1; done
    if [ "$(cat "$run_tmp/programs.status")" = 0 ]; then
      TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR/test" "${ctest_args[@]}" -L '^(apps|interop)$' \
        -j "${CTEST_JOBS:-4}" || rc=$?
    fi
    exit $rc
  ) >"$run_tmp/early.out" 2>&1 &
  early_pid=$!
  programs_status=0
  nice -n 10 env "${build_env[@]}" bash scripts/build.sh zklock_contender "${programs[@]}" || programs_status=$?
  echo $programs_status >"$run_tmp/programs.status"
  build_status=$programs_status
  ((build_status != 0)) || nice -n 10 env "${build_env[@]}" bash scripts/build.sh || build_status=$?
  phase "2. the build is done (status $build_status); waiting for the tests beside it"
  check $early_pid "the unit, integration, apps and interop tests (ctest --test-dir $BUILD_DIR/test -L '^(unit|integration)\$', then -L '^(apps|interop)\$')" \
    "$run_tmp/early.out"
  # 3. Every other test, the build done, in four lanes: four ctests side by side, each running its
  #    tests one at a time (the timed ones RUN_SERIAL), each waiting on timers and servers most of
  #    its run (docs/TESTING.md): the library's timed tests in test/'s (integration-timing), its
  #    lock-delay ones in another (lock-delay-timing), the programs' in the top directory's
  #    (apps-timing, bench, tsan), and there the rest: the snippets' programs, the ensemble's,
  #    the fixture's and the fault window's tests. Beside them, at idle priority (as the checks
  #    of label sources, still running), the package's consumers: they compile and link.
  if ((build_status == 0)); then
    timed='integration-timing|lock-delay-timing|apps-timing|bench|tsan'
    rest="^(unit|integration|apps|interop|fault|package|sources|$timed)\$"  # the fourth lane: no other's label
    phase "3. the timed tests, the ensemble's and the fixture's, in four lanes; the package's consumers at idle priority"
    TMPDIR=$run_tmp idle ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" -L '^package$' -LE '^sources$' \
      -j 2 >"$run_tmp/package.out" 2>&1 &
    package_pid=$!
    TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR/test" "${ctest_args[@]}" -L '^integration-timing$' \
      >"$run_tmp/timed.out" 2>&1 &
    timed_pid=$!
    TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR/test" "${ctest_args[@]}" -L '^lock-delay-timing$' \
      >"$run_tmp/lock-delay.out" 2>&1 &
    lock_delay_pid=$!
    TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" \
      -LE "$rest" >"$run_tmp/rest.out" 2>&1 &
    rest_pid=$!
    TMPDIR=$run_tmp ctest --test-dir "$BUILD_DIR" "${ctest_args[@]}" -L '^(apps-timing|bench|tsan)$' || status=$?
    check $timed_pid "the library's timed tests (ctest --test-dir $BUILD_DIR/test -L '^integration-timing\$')" \
      "$run_tmp/timed.out"
    check $lock_delay_pid "the library's lock-delay timed tests (ctest --test-dir $BUILD_DIR/test -L '^lock-delay-timing\$')" \
      "$run_tmp/lock-delay.out"
    check $rest_pid "the snippets', the ensemble's, the fixture's and the fault window's tests (ctest --test-dir $BUILD_DIR -LE '$rest')" \
      "$run_tmp/rest.out"
    check $package_pid "the package's consumers (ctest --test-dir $BUILD_DIR -L '^package\$' -LE '^sources\$', at idle priority)" \
      "$run_tmp/package.out"
  else
    echo "zklock: the build failed (status $build_status): the other tests were not run" >&2
    status=$build_status
  fi
  check $sources_pid "the compilers' checks of the sources (ctest --test-dir $BUILD_DIR -L '^sources\$', at idle priority)" \
    "$run_tmp/sources.out"
  check $fault_pid "the fault passes (ctest --test-dir $BUILD_DIR/test/fault -L '^fault\$')" "$run_tmp/fault.out"
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
