#!/bin/sh
# peer.sh CLASS ARGS...: compiles CLASS.java with PeerSupport.java (if either is newer than the
# class) into $ZKLOCK_PEER_BUILD/curator (default: a directory under /tmp/zklock-peers of this
# checkout's own) and runs CLASS with ARGS. run.sh (CuratorBench) and election.sh
# (CuratorElection) call it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
main=$1
shift
# The default build dir is per checkout: two checkouts' sources differ, and the classes compiled
# from one must not serve the other.
build=${ZKLOCK_PEER_BUILD:-/tmp/zklock-peers/$(printf %s "$here" | cksum | cut -d' ' -f1)}/curator
J=/usr/share/java
# Minimal classpath (Debian libcurator-recipes-java 5.4 / libzookeeper-java 3.8): these are the
# only jars classes are loaded from (checked with -verbose:class); slf4j-nop silences SLF4J.
cp="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar"
# ZKLOCK_PEER_SLF4J=jdk14: the clients' log through java.util.logging instead (the depth kind hears
# the ZooKeeper client's warnings there: a reply it refused for its length).
cp="$cp:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-${ZKLOCK_PEER_SLF4J:-nop}.jar"
src=$here/$main.java
support=$here/PeerSupport.java
cls=$build/$main.class
if [ ! -f "$cls" ] || [ ! -f "$build/PeerSupport.class" ] || [ "$src" -nt "$cls" ] || [ "$support" -nt "$cls" ]; then
  mkdir -p "$build"
  # two runs may start at once: compile into a private dir, then move the classes in
  tmp=$(mktemp -d "$build/.javac-XXXXXX")
  echo "curator peer: compiling $src -> $build" >&2
  javac -nowarn -d "$tmp" -cp "$cp" "$src" "$support" >&2
  for f in "$tmp"/*.class; do mv -f "$f" "$build/"; done
  rmdir "$tmp"
fi
exec java ${ZKLOCK_PEER_JAVA_OPTS:-} -cp "$build:$cp" "$main" "$@"
