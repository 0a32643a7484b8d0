#!/usr/bin/env bash
# Analytic (default) tier vs flow tier on the Hecate paper's configurations: four models, 16 GPUs
# (aws-p3dn-v100-2node, 32 experts) and 32 GPUs (aws-p3dn-v100-4node, aws-p4d-a100-4node, 64
# experts), a skewed synthetic trace, every strategy. Prints one row per (model, topology, strategy)
# with the mean iteration time on each tier and their ratio, one wall-time line per run, and the
# largest disagreement.
# Usage: scripts/tier-agreement.sh [PRESET=concentrated] [ITERATIONS=20]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-concentrated}"; iters="${2:-20}"
if [ ! -f build-release/build.ninja ]; then meson setup build-release --buildtype=release >/dev/null; fi
ninja -C build-release src/cli/hecate-sim >/dev/null
sim=build-release/src/cli/hecate-sim
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
strategies="ep,oracle,fssdp,fssdp:rematerialize=true,fssdp:comm_queue=separate,fssdp:broadcast=direct,smartmoe,fsdp"
echo "| model | topology | strategy | analytic ms | flow ms | analytic / flow |"
echo "|---|---|---|---|---|---|"
for model in gpt-moe-s gpt-moe-l bert-moe bert-moe-deep; do
  for topo in aws-p3dn-v100-2node aws-p3dn-v100-4node aws-p4d-a100-4node; do
    if [ "$topo" = aws-p3dn-v100-2node ]; then gpus=16; experts=32; else gpus=32; experts=64; fi
    trace="$tmp/$model-$experts-$gpus.json.gz"
    $sim trace gen --model "$model" --set "experts=$experts" --sources "$gpus" \
        --iterations "$iters" --preset "$preset" --seed 1 -o "$trace" 2>/dev/null
    for net in analytic flow; do
      s=$(date +%s%N)
      $sim run "$topo" "$trace" --model "$model" --set "experts=$experts" --format csv --network "$net" \
          --strategy "$strategies" > "$tmp/$net.csv" 2>/dev/null
      echo "$model $topo $net: $(( ($(date +%s%N) - s) / 1000000 )) ms wall" >> "$tmp/walls"
    done
    paste -d, "$tmp/analytic.csv" "$tmp/flow.csv" | awk -F, -v model="$model" -v topo="$topo" '
      NR == 1 { n = NF / 2; for (i = 1; i <= n; i++) col[$i] = i; next }
      { a = $(col["mean_s"]); f = $(n + col["mean_s"]);
        printf "| %s | %s | %s | %.2f | %.2f | %.4f |\n", model, topo, $1, a * 1e3, f * 1e3, a / f }'
  done
done | tee "$tmp/table.md"
cat "$tmp/walls"
awk -F'|' 'NR > 2 { r = $7 + 0; d = r > 1 ? r - 1 : 1 - r; if (d > w) { w = d; row = $0 } }
           END { printf "largest disagreement: %.2f%%\n%s\n", w * 100, row }' "$tmp/table.md"
