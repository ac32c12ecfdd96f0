#!/usr/bin/env bash
# Installs what zklock needs from Debian bookworm packages, in sets:
#   scripts/deps.sh build   what building the library, the examples and the zklock tool needs
#   scripts/deps.sh server  the ZooKeeper server and a JRE (the demo installs them while it builds)
#   scripts/deps.sh demo    both: what the demo needs
#   scripts/deps.sh [all]   everything the tests need too: Catch2, the benchmark's peers (Curator,
#                           kazoo, a JDK), clang++ 14, doxygen
#   scripts/deps.sh test-compiler  clang++ 14 alone: the test command installs it first, to compile
#                           its programs while the rest installs (scripts/test.sh)
#   scripts/deps.sh bench   all, and gnuplot for the benchmark's plots (scripts/bench; no test
#                           draws one: 42 packages of 176 that the test command need not install)
# Idempotent: installs only what is missing (apt-get update once, only when needed). One line per
# step on stderr; apt's whole output goes to a log file, named (and its end shown) on failure.
set -euo pipefail
set_name=${1:-all}
build=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libzookeeper-st-dev libcli11-dev
)
server=(
  python3  # scripts/zk-server.sh waits for the server with it
  libzookeeper-java default-jre-headless  # the server: its jars (the `zookeeper` package would add a desktop JRE)
)
rest=(
  catch2  # the tests (the demo configures without them)
  python3-kazoo libcurator-recipes-java default-jdk-headless  # the benchmark's and interop tests' peers
  procps iproute2  # the tests' process and network checks
  clang-14  # test/headers: the public headers compile warning-free under clang++ 14 too; the
  # test command's test-only programs (CMakeLists.txt: ZKLOCK_TEST_CXX)
  libclang-rt-14-dev llvm-14  # clang's ThreadSanitizer runtime and the symbolizer of its reports
  # (llvm-symbolizer-14): the test command's ThreadSanitizer programs
  doxygen  # the API reference (cmake --build build --target docs) and its test
)
case "$set_name" in
  build) packages=("${build[@]}") ;;
  server) packages=("${server[@]}") ;;
  demo) packages=("${build[@]}" "${server[@]}") ;;
  all) packages=("${build[@]}" "${server[@]}" "${rest[@]}") ;;
  test-compiler) packages=(clang-14) ;;
  bench) packages=("${build[@]}" "${server[@]}" "${rest[@]}" gnuplot-nox) ;;
  *) echo "usage: scripts/deps.sh [build|server|demo|all|test-compiler|bench]" >&2; exit 2 ;;
esac
# One dpkg-query for the set (one a package cost 30-40 ms of CPU: 3.5 s in a test command's run,
# whose every build asks for the build's set); one line a package it knows, none for the others.
installed=$'\n'$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null || true)$'\n'
missing=()
for p in "${packages[@]}"; do
  [[ $installed == *$'\n'"$p install ok installed"$'\n'* ]] || missing+=("$p")
done
((${#missing[@]})) || exit 0
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
log=$(mktemp "${TMPDIR:-/tmp}/zklock-deps-XXXXXX.log")
# step "what" command...: one line, "ok (N s)" or the log's end and its name
step() {
  local what=$1 t0=$SECONDS
  shift
  printf 'zklock: %s ... ' "$what" >&2
  echo "== $what: $*" >>"$log"
  if "$@" >>"$log" 2>&1; then
    echo "ok ($((SECONDS - t0)) s)" >&2
  else
    echo "FAILED" >&2
    tail -n 20 "$log" | sed 's/^/  | /' >&2
    echo "zklock: the full log is $log" >&2
    exit 1
  fi
}
# force-unsafe-io: dpkg does not sync each unpacked file (Boost's headers are 14,000 files); a
# crash mid-install is fixed by running this again, as for any interrupted install.
apt=($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o Dpkg::Options::=--force-unsafe-io)
# ZKLOCK_APT_STAMP (the demo's): a file that says this run's package lists are fresh, written
# after the update, so that the next set's install (in the background) does not update again
if [ -z "${ZKLOCK_APT_STAMP:-}" ] || [ ! -e "$ZKLOCK_APT_STAMP" ]; then
  step "apt-get update" "${apt[@]}" update
  if [ -n "${ZKLOCK_APT_STAMP:-}" ]; then : >"$ZKLOCK_APT_STAMP"; fi
fi
# ZKLOCK_APT_ARCHIVES=DIR (the demo's): the packages' files are downloaded into DIR (apt's
# archive cache for this run) and installed from there. With ZKLOCK_APT_DOWNLOAD_ONLY=1 they are
# only downloaded: without dpkg's lock (nothing is installed; apt's cache of the lists kept in
# memory, so nothing apt shares is written), so the demo downloads the server's packages while
# the build's install; the install that follows finds them there.
if [ -n "${ZKLOCK_APT_ARCHIVES:-}" ]; then
  mkdir -p "$ZKLOCK_APT_ARCHIVES/partial"
  apt+=(-o "Dir::Cache::Archives=$ZKLOCK_APT_ARCHIVES")
fi
if [ -n "${ZKLOCK_APT_DOWNLOAD_ONLY:-}" ]; then
  step "downloading ${#missing[@]} packages (${missing[*]})" \
    "${apt[@]}" -o Debug::NoLocking=1 -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
    install -y --download-only --no-install-recommends "${missing[@]}"
  rm -f "$log"
  exit 0
fi
# DPkg::Lock::Timeout: another install (the demo's two sets) waits for dpkg's lock, not fails
step "installing ${#missing[@]} packages (${missing[*]})" \
  "${apt[@]}" -o DPkg::Lock::Timeout=600 install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"
rm -f "$log"
