#!/usr/bin/env bash
# Installs what zklock needs to build, test, demo and benchmark, from Debian bookworm packages.
# Idempotent: installs only what is missing (apt-get update once, only when needed).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libzookeeper-st-dev catch2 libcli11-dev
  zookeeper default-jre-headless
  python3 python3-kazoo libcurator-recipes-java default-jdk-headless
  gnuplot-nox procps iproute2
  clang-14  # test/headers: the public headers compile warning-free under clang++ 14 too
  doxygen  # the API reference (cmake --build build --target docs) and its test
)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "zklock: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
