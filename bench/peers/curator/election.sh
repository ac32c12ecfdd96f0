#!/bin/sh
# Compiles CuratorElection.java (if needed) into the same per-checkout directory as run.sh and
# runs it with the given arguments (the election modes of zklock-election-bench):
#   --connect HOSTS --path PATH --mode resign --candidates N --resigns R [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F]
#   --connect HOSTS --path PATH --mode candidate --id NAME [--session-timeout-ms T]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${ZKLOCK_PEER_BUILD:-/tmp/zklock-peers/$(printf %s "$here" | cksum | cut -d' ' -f1)}/curator
J=/usr/share/java
# run.sh's classpath (Debian libcurator-recipes-java 5.4 / libzookeeper-java 3.8)
cp="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
cp="$cp:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar"
src=$here/CuratorElection.java
cls=$build/CuratorElection.class
if [ ! -f "$cls" ] || [ "$src" -nt "$cls" ]; then
  mkdir -p "$build"
  # two election runs may start at once: compile into a private dir, then move the classes in
  tmp=$(mktemp -d "$build/.javac-XXXXXX")
  echo "curator peer: compiling $src -> $build" >&2
  javac -nowarn -d "$tmp" -cp "$cp" "$src" >&2
  for f in "$tmp"/*.class; do mv -f "$f" "$build/"; done
  rmdir "$tmp"
fi
exec java ${ZKLOCK_PEER_JAVA_OPTS:-} -cp "$build:$cp" CuratorElection "$@"
