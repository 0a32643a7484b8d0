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
echo "== 3 flow-tier iterations of gpt-moe-s, 32 GPUs (dgx-h100-4node), EP"
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-s.yaml 3 ep 1 flow
echo "== reading a large trace (gpt-moe-s, 32 sources, 1,000 records)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
build-release/src/cli/hecate-sim trace gen --model gpt-moe-s --sources 32 --iterations 1000 --preset aux_loss -o "$tmp/big.json" 2>/dev/null
size=$(stat -c %s "$tmp/big.json")
times=()
for i in 1 2 3; do
  s=$(date +%s.%N); build-release/src/cli/hecate-sim trace validate "$tmp/big.json" >/dev/null; e=$(date +%s.%N)
  times+=("$(awk -v a="$s" -v b="$e" 'BEGIN { print b - a }')")
done
med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
awk -v b="$size" -v t="$med" 'BEGIN { printf "trace validate: %.1f MB in %.3f s (median of 3) = %.0f MB/s\n", b / 1e6, t, b / 1e6 / t }' 
