#!/usr/bin/env bash
# The layout presets' table of docs/manual.md ("Parallel layouts"): each row run through the CLI on
# the bundled traces (analytic tier), printed as Markdown with the commit it was measured at.
# Mean iteration time and peak memory per GPU for EP, FSSDP and FSDP. About 3 minutes of CPU, most
# of it the DeepSeek-V3 rows (2,048 GPUs, 120 micro-batches; FSDP's gathers). A second table: EP on the deepseek-v3
# preset with NCCL's and DeepEP's dispatch (docs/manual.md, "Node-limited routing and DeepEP"). A
# third: the deepseek-v3 preset as trained with one effect taken away at a time (~2 more minutes).
# Usage: scripts/layout-table.sh [BINARY]   (default build-release/src/cli/hecate-sim, brought up to date)
set -euo pipefail
sim="${1:-}"
[ -n "$sim" ] && sim=$(realpath -m "$sim")
cd "$(dirname "$0")/.."
[ -n "$sim" ] || sim=$(scripts/release-binary.sh)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# cell ARGS...: "mean s, peak GiB[ (does not fit)]" of the one strategy the arguments name.
cell() {
  if ! "$sim" run "$@" --format json -q > "$tmp/r.json" 2> "$tmp/err"; then
    echo "run failed: $*" >&2; cat "$tmp/err" >&2; exit 1
  fi
  python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["strategies"][0]
fit = "" if s["fits_memory"] else " (does not fit)"
mean, peak = s["iteration_time_s"]["mean"], s["peak_memory_bytes"] / 2**30
print(f"{mean:.2f} s, {peak:.1f} GiB{fit}")' "$tmp/r.json"
}

row() {  # row LABEL ITERATIONS ARGS...
  local label="$1" it="$2"; shift 2
  local cells=()
  for s in ep fssdp fsdp; do cells+=("$(cell "$@" --strategy "$s" --iterations "$it")"); done
  printf '| %s | %s | %s | %s |\n' "$label" "${cells[0]}" "${cells[1]}" "${cells[2]}"
}

mix=(dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --set grad_accum=32)
ds=(hgx-h800-256node traces/deepseek-v3-like-aux_free.json.gz --model deepseek-v3-like --set grad_accum=120)
echo "Measured at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) by scripts/layout-table.sh (analytic tier; Mixtral rows 8 iterations, DeepSeek rows 1):"
echo
echo "| run | EP | FSSDP | FSDP |"
echo "|---|---|---|---|"
row "\`mixtral-8x7b\` on \`dgx-h100-8node\` (dp 16), grad_accum 32, \`mixtral-8x7b-aux_loss\`" 8 "${mix[@]}" --layout mixtral-8x7b
row "same, \`overlap_grad_reduce=off,overlap_param_gather=off\`" 8 "${mix[@]}" --layout mixtral-8x7b,overlap_grad_reduce=off,overlap_param_gather=off
row "same (overlap on), \`vpp=2\`" 8 "${mix[@]}" --layout mixtral-8x7b,vpp=2
row "same (overlap on), \`recompute=full\`" 8 "${mix[@]}" --layout mixtral-8x7b,recompute=full
row "\`deepseek-v3\` (DualPipe, FP8) on \`hgx-h800-256node\` (dp 128), grad_accum 120, \`deepseek-v3-like-aux_free\`" 1 "${ds[@]}" --layout deepseek-v3
row "same, \`dispatcher=deepep\`, node-limited routing (\`route_groups=8\`, \`max_nodes=4\`)" 1 "${ds[@]}" --layout deepseek-v3,dispatcher=deepep --set route_groups=8 --set max_nodes=4

# The dispatch table of docs/manual.md ("Node-limited routing and DeepEP"): EP on the deepseek-v3
# preset, one iteration, with NCCL's and DeepEP's dispatch; critical-path components from the JSON.
drow() {  # drow LABEL ARGS...
  local label="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$sim" run "${ds[@]}" "$@" --strategy ep --iterations 1 --format json -q > "$tmp/d.json" 2>/dev/null
  t1=$(date +%s.%N)
  python3 - "$tmp/d.json" "$label" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["strategies"][0]
b = s["breakdown_s"]
print(f"| {sys.argv[2]} | {s['iteration_time_s']['mean']:.2f} s | {b['all_to_all']:.2f} s | "
      f"{b['straggler_wait']:.2f} s | {b['dense_allreduce']:.2f} s | {sys.argv[3]} s |")
PY
}
echo
echo "| dispatch (EP, \`deepseek-v3\` preset, grad_accum 120) | step | all-to-all on the critical path | straggler wait | exposed DP | wall |"
echo "|---|---|---|---|---|---|"
drow "\`nccl\` (default; node limit or not: NCCL sends per expert either way)" --layout deepseek-v3
drow "\`dispatcher=deepep\`" --layout deepseek-v3,dispatcher=deepep
drow "\`dispatcher=deepep\`, \`route_groups=8\`, \`max_nodes=4\`" --layout deepseek-v3,dispatcher=deepep --set route_groups=8 --set max_nodes=4

# The ablation table of docs/manual.md ("Parallel layouts", DeepSeek-V3): the preset as trained
# (FP8, DualPipe, DeepEP dispatch, node-limited routing, MLA, MTP) with one effect taken away at a
# time, and two hand-balanced piece splits (the report does not publish DeepSeek's): step, peak
# memory, GPU-hours per 10^12 tokens, and the step's change against the full row.
arow() {  # arow LABEL ARGS...
  local label="$1"; shift
  "$sim" run "${ds[@]}" "$@" --strategy ep --iterations 1 --format json -q > "$tmp/a.json" 2>/dev/null
  python3 - "$tmp/a.json" "$label" "${full:-}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["strategies"][0]
t = s["iteration_time_s"]["mean"]
full = float(sys.argv[3]) if sys.argv[3] else t
fit = "" if s["fits_memory"] else ", does not fit"
print(f"| {sys.argv[2]} | {t:.2f} s ({(t / full - 1) * 100:+.1f}%) | {s['peak_memory_bytes'] / 2**30:.1f} GiB{fit} | "
      f"{s['throughput']['gpu_hours_per_trillion_tokens']:,.0f} |")
PY
}
full_args=(--layout deepseek-v3,dispatcher=deepep --set route_groups=8 --set max_nodes=4)
"$sim" run "${ds[@]}" "${full_args[@]}" --strategy ep --iterations 1 --format json -q > "$tmp/full.json" 2>/dev/null
full=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["strategies"][0]["iteration_time_s"]["mean"])' "$tmp/full.json")
echo
echo "| DeepSeek-V3 as trained, one effect taken away (EP, grad_accum 120; published step 19.926 s) | step (vs as trained) | peak | GPU-hours per 10^12 tokens |"
echo "|---|---|---|---|"
arow "as trained: FP8, DualPipe, DeepEP, node-limited routing (M = 4), MLA, MTP" "${full_args[@]}"
arow "no MTP module (\`mtp_layers=0\`)" "${full_args[@]}" --set mtp_layers=0
arow "pieces balanced by hand (\`pipeline_layout=Etttt\\|(tttt\\|)*14tmL\`: 1 block + MTP on the last piece)" --layout "deepseek-v3,dispatcher=deepep,pipeline_layout=Etttt|(tttt|)*14tmL" --set route_groups=8 --set max_nodes=4
arow "same, 2 blocks + MTP on the last piece (\`pipeline_layout=Etttt\\|(tttt\\|)*13ttt\\|ttmL\`)" --layout "deepseek-v3,dispatcher=deepep,pipeline_layout=Etttt|(tttt|)*13ttt|ttmL" --set route_groups=8 --set max_nodes=4
arow "bf16 instead of FP8 (\`precision.compute=bf16\`)" "${full_args[@]}" --set precision.compute=bf16
arow "ZB-H1 instead of DualPipe (\`schedule=zb-h1\`)" --layout deepseek-v3,dispatcher=deepep,schedule=zb-h1 --set route_groups=8 --set max_nodes=4
arow "1F1B instead of DualPipe (\`schedule=1f1b\`)" --layout deepseek-v3,dispatcher=deepep,schedule=1f1b --set route_groups=8 --set max_nodes=4
arow "no node limit (any token to any node)" --layout deepseek-v3,dispatcher=deepep
arow "NCCL's all-to-all instead of DeepEP" --layout deepseek-v3 --set route_groups=8 --set max_nodes=4
