#!/usr/bin/env bash
# The ZooKeeper server the tests of one ctest run share (labels integration, apps, interop;
# ctest's fixture: the setup and cleanup tests of test/CMakeLists.txt; zk_server.hpp says how a
# C++ test uses it, shared_server.py how a Python test does).
#   shared_server.sh start FILE   starts a standalone server with the fixture's zoo.cfg settings
#                                 (zoo-fixture.cfg, zk_server.cpp's defaults too) in a dir under
#                                 $TMPDIR, writes "127.0.0.1:PORT"
#                                 to FILE (and the dir to FILE.dir)
#   shared_server.sh stop FILE    prints the CPU time the server used, stops it, removes its dir
#                                 and FILE
# JVM options and classpath as for scripts/zk-server.sh (ZK_SERVER_JAVA_OPTS, ZK_SERVER_CLASSPATH).
# If ctest ends without the cleanup (interrupted), a watchdog stops the server.
set -euo pipefail
cmd=$1 file=$2
here=$(cd "$(dirname "$0")" && pwd)
scripts=$(cd "$here/../../scripts" && pwd)

stop() {
  [ -f "$file.dir" ] || return 0
  local dir pid ticks
  dir=$(cat "$file.dir")
  for w in watchdog watchdog.tail; do  # the shell first: it stops nothing once its wait ends
    if [ -f "$dir/$w" ]; then kill -9 "$(cat "$dir/$w")" 2>/dev/null || true; fi
  done
  if [ -f "$dir/server/pid" ]; then
    pid=$(cat "$dir/server/pid")
    # utime + stime (fields 14 and 15) of a process that init, not ctest, reaps
    if ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null); then
      echo "shared server (pid $pid): $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }') s of CPU"
    fi
  fi
  bash "$scripts/zk-server.sh" stop "$dir/server"
  rm -rf "$dir" "$file" "$file.dir"
}

case "$cmd" in
  start)
    stop  # a run's that never stopped it
    mkdir -p "$(dirname "$file")"
    dir=$(mktemp -d "${TMPDIR:-/tmp}/zklock-shared-XXXXXX")
    echo "$dir" >"$file.dir"
    settings=$(grep -E '^[A-Za-z.]+=' "$here/zoo-fixture.cfg")  # key=value lines, no spaces
    # shellcheck disable=SC2086
    connect=$(bash "$scripts/zk-server.sh" start "$dir/server" $settings)
    ctest_pid=$PPID
    (
      tail --pid="$ctest_pid" -f /dev/null &
      echo $! >"$dir/watchdog.tail"
      wait $!
      bash "$scripts/zk-server.sh" stop "$dir/server"
      rm -rf "$dir"
    ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watchdog"
    echo "$connect" >"$file.tmp"
    mv "$file.tmp" "$file"
    echo "shared server: $connect, $dir"
    ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop FILE" >&2; exit 2 ;;
esac
