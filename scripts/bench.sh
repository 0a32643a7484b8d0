#!/usr/bin/env bash
# Prints simulation-speed figures (release build): medians over several runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build-release/build.ninja ]; then meson setup build-release --buildtype=release >/dev/null; fi
ninja -C build-release >/dev/null
b=build-release/tests/bench
echo "== 1,000-iteration runs, 32 GPUs (distinct loads every iteration)"
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-s.yaml 1000 ep 5
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-s.yaml 1000 oracle 5
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-s.yaml 1000 fssdp 3
$b/iteration_bench topologies/aws-p3dn-v100-2node.yaml models/gpt-moe-s.yaml 1000 ep 5
echo "== flow tier: one skewed all-to-all-v (one flow per GPU pair)"
$b/network_bench 32 64 128
echo "== 1 flow-tier iteration of gpt-moe-s, 32 GPUs (dgx-h100-4node), EP"
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-s.yaml 3 ep 1 2>/dev/null || true
