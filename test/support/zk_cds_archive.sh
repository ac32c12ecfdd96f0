#!/usr/bin/env bash
# zk_cds_archive.sh ARCHIVE JVM_FLAGS...: writes a class-data-sharing archive of a ZooKeeper server's classes
# (Java 17's -XX:ArchiveClassesAtExit, at the exit of one throwaway server started and stopped
# with scripts/zk-server.sh). The tests' servers map it (-XX:SharedArchiveFile: zk_server.cpp, and
# the apps and interop tests' ENVIRONMENT for scripts/zk-server.sh): each of them starts with
# about 0.15 s less CPU (0.40 s instead of 0.56 until it serves, docs/TESTING.md), and a run of
# the tests starts hundreds. The classpath of the dump, zookeeper.jar alone, is a prefix of both
# servers' (a logger after it): a JVM maps the archive only when it is. An archive a JVM cannot map
# (another JDK, another classpath) is ignored (-Xshare:auto) and the classes load from the jars.
# JVM_FLAGS: the tests' servers' (test/support/CMakeLists.txt). When no archive can be made (no
# java), this says so and the servers start without one.
set -uo pipefail
archive=$1
shift
scripts=$(cd "$(dirname "$0")/../../scripts" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/zklock-cds-XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -f "$archive"
# The servers' JVM options but the archive's own.
if ZK_SERVER_CLASSPATH=/usr/share/java/zookeeper.jar \
  ZK_SERVER_JAVA_OPTS="$* -XX:ArchiveClassesAtExit=$work/zk.jsa" \
  bash "$scripts/zk-server.sh" start "$work/server" >/dev/null; then
  # The JVM writes the archive as it exits, in about 3 s (zk-server.sh's stop waits 5 s at most)
  pid=$(cat "$work/server/pid")
  kill "$pid"
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  # only an archive the JVM finished writing (it exited on its own)
  kill -0 "$pid" 2>/dev/null || [ ! -e "$work/zk.jsa" ] || mv "$work/zk.jsa" "$work/done.jsa"
  bash "$scripts/zk-server.sh" stop "$work/server"
fi
if [ -s "$work/done.jsa" ]; then
  mv "$work/done.jsa" "$archive"
else
  echo "zk_cds_archive.sh: no class archive made; the tests' servers start without one" >&2
fi
exit 0
