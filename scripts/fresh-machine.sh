#!/usr/bin/env bash
# Times the README's two commands on a fresh machine: a Debian bookworm made by debootstrap
# (minbase, plus what a new machine of this kind has: g++, cmake, git, python3,
# ca-certificates, make, procps; none of the project's packages), a clean clone of this
# repository's HEAD in it, each command run in a chroot with an empty environment (no ccache).
# Needs root and debootstrap; the network for the packages.
#   scripts/fresh-machine.sh DIR [demo|test|both]
# DIR/base is made once (and kept: the next runs copy it); DIR/run is the machine of this run.
# Prints one line per command: its exit status, wall time and CPU time (user + system of all its
# processes); the outputs are in DIR/*.out, *.err.
# FRESH_CORES=1.55: the commands get that many cores' time (a cpu cgroup's CFS quota, over 10 ms
# periods): a slower machine of 2 cores, here 2 / 1.55 = 1.29 times slower, the most that the
# same work's CPU has varied on this machine.
set -uo pipefail
dir=${1:?usage: scripts/fresh-machine.sh DIR [demo|test|both]}
what=${2:-both}
repo=$(cd "$(dirname "$0")/.." && pwd)
base=$dir/base
run_root=$dir/run
if [ ! -x "$base/usr/bin/g++" ]; then
  debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian >"$dir/debootstrap.log" 2>&1 || {
    echo "debootstrap failed: $dir/debootstrap.log" >&2
    exit 1
  }
  cp /etc/resolv.conf "$base/etc/resolv.conf"
  chroot "$base" /bin/bash -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends g++ cmake git python3 ca-certificates make procps" >"$dir/base-packages.log" 2>&1 || {
    echo "the base packages failed: $dir/base-packages.log" >&2
    exit 1
  }
fi
unmount() { for m in dev/pts dev sys proc tmp; do umount -l "$run_root/$m" 2>/dev/null; done; }
trap unmount EXIT
unmount
rm -rf "$run_root" && mkdir -p "$run_root" && cp -a "$base/." "$run_root/"
git clone -q "$repo" "$run_root/root/zklock"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$run_root/$m"; done
mount -t tmpfs tmpfs "$run_root/tmp"
timed() {  # name command
  local s e rc cg cpu=""
  # the CPU of every process the command starts (a cpuacct cgroup of its own, when there is one):
  # servers started in the background and reparented are counted too
  cg=/sys/fs/cgroup/cpuacct/zklock-fresh-$1-$$
  mkdir -p "$cg" 2>/dev/null || cg=""
  local quota=""
  if [ -n "${FRESH_CORES:-}" ]; then
    quota=/sys/fs/cgroup/cpu/zklock-fresh-$1-$$
    mkdir -p "$quota" && echo 10000 >"$quota/cpu.cfs_period_us" &&
      echo "$(awk -v c="$FRESH_CORES" 'BEGIN { printf "%d", c * 10000 }')" >"$quota/cpu.cfs_quota_us" || {
      echo "FRESH_CORES: no cpu cgroup to limit the cores with" >&2
      exit 1
    }
  fi
  s=$(date +%s.%N)
  (
    [ -z "$cg" ] || echo "$BASHPID" >"$cg/cgroup.procs"
    [ -z "$quota" ] || echo "$BASHPID" >"$quota/cgroup.procs"
    exec chroot "$run_root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /root/zklock && $2" >"$dir/$1.out" 2>"$dir/$1.err"
  )
  rc=$?
  e=$(date +%s.%N)
  if [ -n "$cg" ]; then
    cpu=", CPU $(python3 -c "print(round($(cat "$cg/cpuacct.usage") / 1e9, 1))") s"
    rmdir "$cg" 2>/dev/null
  fi
  [ -z "$quota" ] || rmdir "$quota" 2>/dev/null
  echo "$1: exit $rc, $(python3 -c "print(round($e - $s, 1))") s$cpu (load average now $(cut -d' ' -f1-3 /proc/loadavg))"
}
echo "commit $(git -C "$run_root/root/zklock" rev-parse --short HEAD), load average $(cut -d' ' -f1-3 /proc/loadavg)${FRESH_CORES:+, limited to $FRESH_CORES cores}"
[ "$what" = test ] || timed demo "bash scripts/demo.sh"
[ "$what" = demo ] || timed test "bash scripts/test.sh"
