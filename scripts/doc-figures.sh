#!/usr/bin/env bash
# The simulated figures docs/manual.md quotes in its prose, each produced here through the CLI from
# the bundled inputs and printed under the heading of the paragraph that quotes it, with the commit
# they were measured at. The manual's tables have their own scripts (scripts/layout-table.sh, and
# scripts/paper-eval.sh for docs/architecture.md); timings of the simulator itself come from
# scripts/bench.sh and scripts/bench-cli.sh. Every figure here is a deterministic simulation result:
# any build type gives the same numbers. About 100 s of CPU on a debugoptimized build.
# Usage: scripts/doc-figures.sh [BINARY]   (default build-release/src/cli/hecate-sim, built if missing)
set -euo pipefail
sim="${1:-}"
[ -n "$sim" ] && sim=$(realpath -m "$sim")
cd "$(dirname "$0")/.."
if [ -z "$sim" ]; then
  sim=build-release/src/cli/hecate-sim
  if [ ! -x "$sim" ]; then
    scripts/install-deps.sh
    [ -f build-release/build.ninja ] || meson setup build-release --buildtype=release >/dev/null
    ninja -C build-release src/cli/hecate-sim >/dev/null
  fi
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)
echo "# docs/manual.md's prose figures, measured at $commit$dirty by scripts/doc-figures.sh"

# sim_run KEYS ARGS...: run ARGS (hecate-sim run ...) as JSON; print the command, then per strategy
# the mean iteration time, the speed-up over EP, peak memory, whether it fits, and the resolved
# settings named in KEYS (comma-separated; "-" for none; a breakdown component gives its ms, "verdict"
# the memory verdict), and the dropped share when a capacity factor applies.
sim_run() {
  local keys="$1"; shift
  echo "\$ hecate-sim run $*"
  "$sim" run "$@" --format json -q > "$tmp/r.json" 2> /dev/null
  python3 - "$tmp/r.json" "$keys" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
keys = [] if sys.argv[2] == "-" else sys.argv[2].split(",")
for s in d["strategies"]:
    it = s["iteration_time_s"]
    vs_ep = f"{s['speedup_vs_ep']:.2f}x EP" if s.get("speedup_vs_ep") is not None else "(no EP)"
    line = (f"  {s['name']:<28} mean {it['mean'] * 1e3:10.2f} ms  {vs_ep}  "
            f"peak {s['peak_memory_bytes'] / 2**30:6.2f} GiB  {'fits' if s['fits_memory'] else 'does not fit'}")
    for k in keys:
        v = s.get("resolved", {}).get(k)
        if v is not None:
            if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
                v = f"{min(v)}-{max(v)}" if min(v) != max(v) else f"{v[0]}"
            line += f"  {k} {v}"
        if k in s.get("breakdown_s", {}):
            line += f"  {k} {s['breakdown_s'][k] * 1e3:.2f} ms"
    if "verdict" in keys and s.get("memory_verdict"):
        line += f"\n    verdict: {s['memory_verdict']}"
    dt = s.get("dropped_tokens")
    if dt:
        line += f"  dropped {dt['fraction'] * 100:.2f}% of routed assignments"
    print(line)
EOF
}

echo
echo "== \"Using it\", overlap_degree (hidden / best): 30 iterations, aux-loss traces"
sim_run copies_per_layer,overlap_degree dgx-h100-4node traces/gpt-moe-s-aux_loss.json.gz --strategy ep,fssdp --iterations 30
for topo in aws-p3dn-v100-2node aws-p3dn-v100-4node aws-p4d-a100-4node; do
  for model in gpt-moe-s gpt-moe-l bert-moe; do
    sim_run overlap_degree,copies_per_layer "$topo" "traces/$model-aux_loss.json.gz" --strategy ep,fssdp,fssdp:overlap_degree=best --iterations 30
  done
done
sim_run overlap_degree,copies_per_layer dgx-h100-4node traces/gpt-moe-s-collapsed.json.gz --strategy ep,fssdp,fssdp:overlap_degree=best --iterations 30

echo
echo "== \"Using it\", token dropping at capacity_factor=1.0 (the collapsed trace)"
sim_run - dgx-h100-4node traces/gpt-moe-s-collapsed.json.gz --model gpt-moe-s --set capacity_factor=1.0

echo
echo "== \"Parallel layouts\": sweeps/mixtral-layouts.yaml, best feasible point per strategy by tokens/s"
echo "\$ hecate-sim sweep sweeps/mixtral-layouts.yaml --out $tmp/ml"
start=$(date +%s.%N)
"$sim" sweep sweeps/mixtral-layouts.yaml --out "$tmp/ml" -q > /dev/null 2>&1
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "  %.0f s of wall time (machine-dependent)\n", b - a }'
python3 - "$tmp/ml.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("role") == "point" and r["status"] == "ok"]
print(f"  {len(rows)} points")
best = {}
for r in rows:
    if not r["feasible"]:
        continue
    k = r["strategy"]
    if k not in best or r["tokens_per_s"] > best[k]["tokens_per_s"]:
        best[k] = r
for r in sorted(rows, key=lambda r: -r["tokens_per_s"]):
    print(f"    {r['spec']:<24} layout {r['layout']:<40} {r['tokens_per_s'] / 1e3:.0f}K tokens/s  "
          f"peak {r['peak_memory_gib']:.1f} GiB  {'feasible' if r['feasible'] else 'not feasible'}")
print("  best feasible per strategy:")
for k, r in sorted(best.items(), key=lambda kv: -kv[1]["tokens_per_s"]):
    print(f"  {r['spec']:<24} layout {r['layout']:<40} {r['tokens_per_s'] / 1e3:.0f}K tokens/s  "
          f"peak {r['peak_memory_gib']:.1f} GiB")
EOF

echo
echo "== \"Parallel layouts\", data-parallel overlap: the Mixtral preset's DP time per stage, with and without overlap"
sim_run dp_comm_ms,dp_comm_on_path_ms dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fssdp,fsdp
sim_run dp_comm_ms,dp_comm_on_path_ms dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b,overlap_grad_reduce=off,overlap_param_gather=off --set grad_accum=32 --iterations 8 --strategy ep,fssdp,fsdp

echo
echo "== \"Parallel layouts\", FlexMoE: the Mixtral preset, 12 iterations"
sim_run layer_replans,expands,migrations,experts_moved dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 12 --strategy ep,flexmoe,flexmoe:reserve_slots=1
sim_run - dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 12 --strategy ep,flexmoe --network flow

echo
echo "== \"Parallel layouts\", FasterMoE: the Mixtral preset, 8 iterations"
sim_run shadowed_max_per_layer,straggler_wait dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fastermoe,fastermoe:bandwidth=25GB/s,fastermoe:trigger=false
sim_run - dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fastermoe --network flow

echo
echo "== \"Memory per GPU\": FSSDP's memory-bound branch and allocator_slack (p3dn-2node, gpt-moe-l, micro_batch 2)"
sim_run memory_capacity_m,copies_cut_by_memory,verdict aws-p3dn-v100-2node traces/gpt-moe-l-aux_loss.json.gz --set micro_batch=2 --strategy fssdp:overlap_degree=64 --iterations 3
sim_run memory_capacity_m,copies_cut_by_memory,verdict aws-p3dn-v100-2node traces/gpt-moe-l-aux_loss.json.gz --set micro_batch=2 --set allocator_slack=0.15 --strategy ep,fssdp:overlap_degree=64 --iterations 3
