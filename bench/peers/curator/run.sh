#!/bin/sh
# Compiles CuratorBench.java (if needed) into $ZKLOCK_PEER_BUILD/curator (default: a directory
# under /tmp/zklock-peers of this checkout's own) and runs it with the
# given arguments: --connect HOSTS --path PATH --contenders N --cycles M [--hold-us U] [--json FILE]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# The default build dir is per checkout: two checkouts' CuratorBench.java differ, and the class
# compiled from one must not serve the other.
build=${ZKLOCK_PEER_BUILD:-/tmp/zklock-peers/$(printf %s "$here" | cksum | cut -d' ' -f1)}/curator
J=/usr/share/java
# Minimal classpath (Debian libcurator-recipes-java 5.4 / libzookeeper-java 3.8): these are the
# only jars classes are loaded from (checked with -verbose:class); slf4j-nop silences SLF4J.
cp="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
cp="$cp:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar"
src=$here/CuratorBench.java
cls=$build/CuratorBench.class
if [ ! -f "$cls" ] || [ "$src" -nt "$cls" ]; then
  mkdir -p "$build"
  echo "curator peer: compiling $src -> $build" >&2
  javac -nowarn -d "$build" -cp "$cp" "$src" >&2
fi
exec java ${ZKLOCK_PEER_JAVA_OPTS:-} -cp "$build:$cp" CuratorBench "$@"
