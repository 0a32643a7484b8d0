#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages hecate-sim builds with, only those that are missing.
# Idempotent; uses sudo when not root. The CUDA toolkit (optional validation backend) is not
# installed here: it is found under /usr/local/cuda when present.
set -euo pipefail
pkgs=(meson ninja-build g++ pkg-config python3 libeigen3-dev libcli11-dev
      libyaml-cpp-dev libfmt-dev doctest-dev libsimdjson-dev zlib1g-dev libboost-graph-dev
      libopenmpi-dev openmpi-bin)
# --fuzz: also what scripts/fuzz.sh needs (clang and libFuzzer).
if [ "${1:-}" = "--fuzz" ]; then pkgs+=(clang-14 libfuzzer-14-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
