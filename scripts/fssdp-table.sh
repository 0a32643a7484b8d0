#!/usr/bin/env bash
# FSSDP vs EP on the Hecate paper's four models: 16 GPUs (aws-p3dn-v100-2node, 32 experts) and 32
# GPUs (aws-p3dn-v100-4node, aws-p4d-a100-4node, 64 experts), with a skewed synthetic trace.
# Usage: scripts/fssdp-table.sh [PRESET=concentrated] [ITERATIONS=200]
# Prints one Markdown row per (model, topology): mean iteration time of EP, FSSDP and FSSDP with
# re-materialization, speedups vs EP, peak memory per GPU, and the share of the iteration spent in
# exposed communication (all-to-all + exposed dense all-reduce + exposed spAG/spRS).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-concentrated}"; iters="${2:-200}"
if [ ! -f build-release/build.ninja ]; then meson setup build-release --buildtype=release >/dev/null; fi
ninja -C build-release src/cli/hecate-sim >/dev/null
sim=build-release/src/cli/hecate-sim
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "| model | topology | EP ms | FSSDP ms | FSSDP+RM ms | FSSDP speedup | +RM speedup | peak GiB EP / FSSDP / +RM | exposed comm EP / FSSDP / +RM |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in gpt-moe-s gpt-moe-l bert-moe bert-moe-deep; do
  for topo in aws-p3dn-v100-2node aws-p3dn-v100-4node aws-p4d-a100-4node; do
    if [ "$topo" = aws-p3dn-v100-2node ]; then gpus=16; experts=32; else gpus=32; experts=64; fi
    trace="$tmp/$model-$experts-$gpus.json.gz"
    [ -f "$trace" ] || $sim trace gen --model "$model" --set "experts=$experts" --sources "$gpus" \
        --iterations "$iters" --preset "$preset" --seed 1 -o "$trace" 2>/dev/null
    $sim run "$topo" "$trace" --model "$model" --set "experts=$experts" --format csv \
        --strategy ep,fssdp,fssdp:rematerialize=true > "$tmp/out.csv" 2>/dev/null
    awk -F, -v model="$model" -v topo="$topo" '
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      { name[NR] = $1; mean[NR] = $(col["mean_s"]); mem[NR] = $(col["peak_memory_bytes"]) / 2^30;
        ex[NR] = ($(col["all_to_all_s"]) + $(col["dense_allreduce_s"]) + $(col["exposed_spag_s"]) + $(col["exposed_sprs_s"]) + $(col["calibration_spag_s"]) + $(col["reshard_migration_s"])) / $(col["mean_s"]) }
      END { printf "| %s | %s | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.1f / %.1f / %.1f | %.0f%% / %.0f%% / %.0f%% |\n",
              model, topo, mean[2]*1e3, mean[3]*1e3, mean[4]*1e3, mean[2]/mean[3], mean[2]/mean[4],
              mem[2], mem[3], mem[4], ex[2]*100, ex[3]*100, ex[4]*100 }' "$tmp/out.csv"
  done
done
