#!/usr/bin/env bash
# Prints simulation-speed figures (release build): medians over several runs.
# BENCH_HUGE=1 adds the 4,096-GPU all-to-all-v and a flow-tier DeepSeek-like iteration on 1,024 GPUs
# (minutes and several GB each).
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
echo "== flow tier: one skewed all-to-all-v (one flow per GPU pair, log-normal sizes)"
echo "-- exact (precision 0) against merged completions: the error of --flow-precision"
$b/network_bench -p 0 64 128
$b/network_bench -p 1e-3 64 128 256
$b/network_bench -p 1e-2 128 256
echo "-- 1,024 GPUs (about a million flows), one run each"
$b/network_bench -r 1 -p 1e-2 1024
echo "-- uniform all-to-all, 1,024 GPUs: one solve, so per-flow set-up"
$b/network_bench -u 1024
echo "-- the same coflows alone, solved link by link (what 'collective --network flow' runs)"
$b/network_bench -s -u 1024
$b/network_bench -s -r 1 -p 1e-2 1024
$b/network_bench -s -r 1 -p 1e-3 1024
echo "-- the same matrix through the command (rate caps on every connection, matrix file read, 1,024-GPU preset loaded): whole process"
tmpm=$(mktemp -d)
$b/network_bench -w "$tmpm/m.txt" 1024
for i in 1 2 3; do
  TIMEFORMAT="collective --op all_to_all_v --matrix (1,024 GPUs, flow): %R s wall, %U s user"
  time build-release/src/cli/hecate-sim collective dgx-h100-128node --op all_to_all_v --matrix "$tmpm/m.txt" --network flow >/dev/null
done
rm -rf "$tmpm"
echo "-- an nccl-tests-style sweep through the command: all_to_all, 8 B to 8 GB by 2 (31 sizes of a million flows)"
for i in 1 2 3; do
  TIMEFORMAT="collective --op all_to_all -b 8 -e 8G -f 2 (1,024 GPUs, flow): %R s wall, %U s user, %S s sys"
  time build-release/src/cli/hecate-sim collective dgx-h100-128node --op all_to_all --network flow -b 8 -e 8G -f 2 >/dev/null
done
if [ "${BENCH_HUGE:-0}" = 1 ]; then
  $b/network_bench -r 1 -p 1e-3 1024
  $b/network_bench -r 1 -p 1e-2 4096   # ~17M flows: several GB and minutes (routes factored)
  $b/network_bench -s -r 1 -p 1e-2 4096
fi
echo "== 2:1 oversubscribed fat tree: cross-leaf routes over four links that may bind (the spines' twins left out)"
$b/iteration_bench topologies/h100-fattree-2to1-16node.yaml models/gpt-moe-s.yaml 3 ep 3 flow
echo "-- analytic, 4,096 GPUs (not endpoint-separable: transfer by transfer, the combine's matrix read in bands)"
$b/iteration_bench topologies/h100-fattree-2to1-512node.yaml models/gpt-moe-s.yaml 1 ep 3
for r in 1024 4096; do
  if [ "$r" = 4096 ] && [ "${BENCH_HUGE:-0}" != 1 ]; then continue; fi  # (4,096: ~7 s and 3 GB)
  TIMEFORMAT="collective h100-fattree-2to1-512node --op all_to_all -b 64M -e 64M --ranks $r (flow): %R s wall, %U s user"
  time build-release/src/cli/hecate-sim collective h100-fattree-2to1-512node --op all_to_all -b 64M -e 64M --ranks $r --network flow >/dev/null
done
echo "== 4,096-GPU preset (512 nodes, two-tier fat tree 2:1): loading it, routes included (factored)"
$b/network_bench -t topologies/h100-fattree-2to1-512node.yaml
echo "== 1,024-GPU preset (128 DGX H100 nodes): loading it, routes of every pair and their binding analysis"
$b/network_bench -t topologies/dgx-h100-128node.yaml
echo "== flow-tier iterations"
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-s.yaml 3 ep 3 flow
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-l.yaml 3 ep 3 flow
$b/iteration_bench topologies/dgx-h100-4node.yaml models/gpt-moe-l.yaml 3 ep 3
echo "== DeepSeek-V3-like on 1,024 GPUs (EP 64), one iteration"
$b/iteration_bench topologies/dgx-h100-128node.yaml models/deepseek-v3-like.yaml 1 ep:ep_size=64 1
if [ "${BENCH_HUGE:-0}" = 1 ]; then
  $b/iteration_bench topologies/dgx-h100-128node.yaml models/deepseek-v3-like.yaml 1 ep:ep_size=64 1 flow
  $b/iteration_bench topologies/dgx-h100-128node.yaml models/deepseek-v3-like.yaml 1 ep:ep_size=64 1 flow 1e-2
fi
echo "== analytic tier at scale: gpt-moe-s with 1,024 experts, EP on 1,024 GPUs, loads split from a --global trace"
tmpg=$(mktemp -d)
build-release/src/cli/hecate-sim trace gen --model gpt-moe-s --set experts=1024 --sources 1024 --iterations 3 --preset aux_loss --global -o "$tmpg/g.json" 2>/dev/null
$b/iteration_bench --trace "$tmpg/g.json" --set experts=1024 topologies/dgx-h100-128node.yaml models/gpt-moe-s.yaml 3 ep 3
rm -rf "$tmpg"
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
echo "== sweep throughput: sweeps/fssdp-policy.yaml (24 points + defaults, 20 iterations each), median of 3"
for jobs in 1 2; do
  times=()
  for i in 1 2 3; do
    rm -f "$tmp"/sw.*
    s=$(date +%s.%N); build-release/src/cli/hecate-sim sweep sweeps/fssdp-policy.yaml --out "$tmp/sw" --jobs $jobs >/dev/null 2>&1; e=$(date +%s.%N)
    times+=("$(awk -v a="$s" -v b="$e" 'BEGIN { print b - a }')")
  done
  med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
  n=$(grep -c . "$tmp/sw.jsonl")
  awk -v n="$n" -v t="$med" -v j="$jobs" 'BEGIN { printf "sweep --jobs %d: %d rows in %.3f s = %.1f points/s\n", j, n, t, n / t }'
done
