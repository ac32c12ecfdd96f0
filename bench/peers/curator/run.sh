#!/bin/sh
# Compiles CuratorBench.java (if needed) into $ZKLOCK_PEER_BUILD/curator and runs it with the
# given arguments: --connect HOSTS --path PATH --contenders N --cycles M [--hold-us U] [--json FILE]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${ZKLOCK_PEER_BUILD:-/tmp/zklock-peers}/curator
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
