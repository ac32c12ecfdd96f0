#!/usr/bin/env bash
# Throwaway ZooKeeper for the demo and the benchmark.
#   scripts/zk-server.sh start DIR [key=value ...]   -> prints "127.0.0.1:PORT", server runs in background
#   scripts/zk-server.sh stop DIR                     -> kills it and removes DIR
# Extra key=value pairs go into zoo.cfg (e.g. forceSync=no).
# ZK_SERVER_JAVA_OPTS: more JVM options, split at spaces (the tests pass the fixture's: C1 only and
#   the class archive of test/support/zk_cds_archive.sh; the demo and the benchmark pass none).
# ZK_SERVER_CLASSPATH: the server's classpath (default: ZooKeeper with slf4j's no-op logger).
set -euo pipefail
cmd=$1 dir=$2
shift 2
# A four-letter word's answer from the server on $port ("" if it does not answer within 1 s):
# bash's /dev/tcp in a subshell, polled every 0.1 s during a start (a Python per poll cost 0.03 s
# of CPU each).
ask() {
  { exec 3<>"/dev/tcp/127.0.0.1/$port" && printf '%s' "$1" >&3 && timeout 1 cat <&3; } 2>/dev/null || true
}
case "$cmd" in
  start)
    mkdir -p "$dir/data"
    # Tests run in parallel (ctest -j): another server may take the chosen port before ours binds
    # it. Ours is up only when the server on the port names our dataDir (`conf`); if ours exits
    # with "Address already in use", start again on a new port (at most 5 times).
    for attempt in 1 2 3 4 5; do
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      {
        echo "tickTime=2000"
        echo "dataDir=$dir/data"
        echo "clientPort=$port"
        echo "clientPortAddress=127.0.0.1"
        echo "admin.enableServer=false"
        echo "4lw.commands.whitelist=*"
        echo "maxClientCnxns=0"
        for kv in "$@"; do echo "$kv"; done
      } > "$dir/zoo.cfg"
      # shellcheck disable=SC2086
      java ${ZK_SERVER_JAVA_OPTS:-} -Dzookeeper.admin.enableServer=false \
        -cp "${ZK_SERVER_CLASSPATH:-/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar}" \
        org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" > "$dir/server.log" 2>&1 &
      pid=$!
      echo $pid > "$dir/pid"
      # Ready when a session can be established: `srvr` reports a Mode (a server that answers
      # ruok may not serve requests yet; until it does, srvr says it is not serving), and the
      # server is ours.
      for _ in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if [[ $(ask srvr) == *$'\nMode: '* && $(ask conf) == *"dataDir=$dir/data"* ]]; then
          echo "127.0.0.1:$port"
          exit 0
        fi
        sleep 0.1
      done
      if ! kill -0 "$pid" 2>/dev/null; then
        # It exited before serving: most likely the port was taken before it bound it (with
        # slf4j's no-op logger the server says nothing, "Address already in use" included).
        # Try another; a server that cannot start at all fails every attempt.
        status=0
        wait "$pid" 2>/dev/null || status=$?
        echo "zk-server.sh: the server on port $port exited ($status) before serving (attempt $attempt of 5)" >&2
        continue
      fi
      break
    done
    echo "zookeeper did not start; log:" >&2
    tail -20 "$dir/server.log" >&2
    kill -9 "$(cat "$dir/pid")" 2>/dev/null || true
    exit 1
    ;;
  stop)
    if [ -f "$dir/pid" ]; then
      pid=$(cat "$dir/pid")
      kill "$pid" 2>/dev/null || true
      # gone, or a zombie (a container whose init reaps no orphans): state Z in /proc/PID/stat
      for _ in $(seq 1 50); do
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
        [[ -n $state && $state != Z ]] || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop DIR [key=value...]" >&2; exit 2 ;;
esac
