#!/usr/bin/env bash
# The simulated figures docs/manual.md quotes in its prose, each produced here through the CLI from
# the bundled inputs and printed under the heading of the paragraph that quotes it, with the commit
# they were measured at. The manual's tables have their own scripts (scripts/layout-table.sh, and
# scripts/paper-eval.sh for docs/architecture.md); timings of the simulator itself come from
# scripts/bench.sh and scripts/bench-cli.sh. Every figure here is a deterministic simulation result:
# any build type gives the same numbers (the sweep's wall time aside). About 2.5 minutes of CPU on a
# release build. "Calibrating" needs the test tool nccl_log_synth of the binary's build directory
# (built here when missing) to write its synthetic nccl-tests logs.
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
# settings named in KEYS (comma-separated; "-" for none; a breakdown component gives its mean ms per
# iteration, "total:COMPONENT" its ms summed over the iterations, "mem:TERM" a peak-memory term in
# GiB, "throughput" tokens/s/GPU, model TFLOPS/GPU and GPU-hours per 10^12 tokens, "verdict" the
# memory verdict), and the dropped share when a capacity factor applies.
sim_run() {
  local keys="$1"; shift
  echo "\$ hecate-sim run ${*//"$tmp/"/}"
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
        if k.startswith("mem:"):
            line += f"  {k[4:]} {s['peak_memory_composition_bytes'][k[4:]] / 2**30:.2f} GiB"
            continue
        if k.startswith("total:"):
            line += f"  {k[6:]} {s['breakdown_s'][k[6:]] * d['iterations'] * 1e3:.2f} ms in {d['iterations']} iterations"
            continue
        if k == "throughput":
            t = s["throughput"]
            line += (f"\n    {t['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, {t['model_tflops_per_gpu']:.1f} TFLOPS/GPU, "
                     f"{t['gpu_hours_per_trillion_tokens']:,.0f} GPU-hours per 10^12 tokens, "
                     f"{d['work_per_iteration']['model_flops_per_token'] / 1e9:.1f} GFLOP per token")
            continue
        v = s.get("resolved", {}).get(k)
        if v is not None:
            if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
                v = f"{min(v)}-{max(v)}" if min(v) != max(v) else f"{v[0]}"
            elif isinstance(v, float):
                v = f"{v:.2f}"
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

# iter_time N ARGS...: the N-th iteration's time per strategy (N x the mean over N iterations less
# (N - 1) x the mean over N - 1: the first N - 1 iterations are the same simulation either way).
iter_time() {
  local n="$1"; shift
  echo "\$ hecate-sim run $* --iterations $((n - 1)) / $n   (iteration $((n - 1)), counting from 0)"
  "$sim" run "$@" --iterations $((n - 1)) --format json -q > "$tmp/a.json" 2> /dev/null
  "$sim" run "$@" --iterations "$n" --format json -q > "$tmp/b.json" 2> /dev/null
  python3 - "$tmp/a.json" "$tmp/b.json" "$n" <<'EOF'
import json, sys
a, b, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
for sa, sb in zip(a["strategies"], b["strategies"]):
    t = n * sb["iteration_time_s"]["mean"] - (n - 1) * sa["iteration_time_s"]["mean"]
    print(f"  {sb['name']:<28} iteration {n - 1}: {t * 1e3:10.2f} ms")
EOF
}

echo
echo "== \"Using it\", overlap_degree (hidden / best): 30 iterations, aux-loss traces"
sim_run copies_per_layer,overlap_degree,overlap_degree_formula dgx-h100-4node traces/gpt-moe-s-aux_loss.json.gz --strategy ep,fssdp --iterations 30
echo "\$ hecate-sim run dgx-h100-4node traces/gpt-moe-s-aux_loss.json.gz --strategy fssdp,fssdp:overlap_degree=1 --iterations 3 --timeline tl.json   (block 0's tasks)"
"$sim" run dgx-h100-4node traces/gpt-moe-s-aux_loss.json.gz --strategy fssdp,fssdp:overlap_degree=1 --iterations 3 --timeline "$tmp/tl.json" -q > /dev/null 2>&1
python3 - "$tmp/tl.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
proc = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
seen = set()
for e in ev:
    if e.get("ph") == "X" and e["name"] in ("fwd mb0 block 0 attention", "spAG block 0") and (e["pid"], e["name"]) not in seen:
        seen.add((e["pid"], e["name"]))
        print(f"  {proc.get(e['pid'], e['pid']):<28} {e['name']:<28} {e['dur']:.1f} us")
EOF
for topo in aws-p3dn-v100-2node aws-p3dn-v100-4node aws-p4d-a100-4node; do
  for model in gpt-moe-s gpt-moe-l bert-moe; do
    sim_run overlap_degree,copies_per_layer,overlap_degree_formula "$topo" "traces/$model-aux_loss.json.gz" --strategy ep,fssdp,fssdp:overlap_degree=best --iterations 30
  done
done
sim_run overlap_degree,copies_per_layer dgx-h100-4node traces/gpt-moe-s-collapsed.json.gz --strategy ep,fssdp,fssdp:overlap_degree=best --iterations 30

echo
echo "== \"Using it\", token dropping at capacity_factor=1.0 (the collapsed trace)"
sim_run - dgx-h100-4node traces/gpt-moe-s-collapsed.json.gz --model gpt-moe-s --set capacity_factor=1.0

echo
echo "== \"Using it\", NCCL's transfer patterns: a lone inter-node send on dgx-h100-4node (2 channels x 14 GB/s)"
echo "\$ hecate-sim collective dgx-h100-4node --op send_recv --ranks 0,8 -b 1G -e 1G"
"$sim" collective dgx-h100-4node --op send_recv --ranks 0,8 -b 1G -e 1G --format json -q > "$tmp/c.json" 2> /dev/null
python3 - "$tmp/c.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
print(f"  GPU 0 -> GPU 8 (another node): {r['algbw_GBps']:.1f} GB/s")
EOF

echo
echo "== \"Using it\", --timeline under --layout: the file's size (tp=2,pp=2,ep=8 on 32 GPUs, grad_accum 4)"
echo "\$ hecate-sim run dgx-h100-4node traces/gpt-moe-s-aux_loss.json.gz --layout tp=2,pp=2,ep=8 --set grad_accum=4 --strategy ep --iterations 2 --timeline tl.json"
"$sim" run dgx-h100-4node traces/gpt-moe-s-aux_loss.json.gz --layout tp=2,pp=2,ep=8 --set grad_accum=4 --strategy ep --iterations 2 --timeline "$tmp/tl.json" -q > /dev/null 2>&1
python3 -c 'import os, sys; n = os.path.getsize(sys.argv[1]); print(f"  {n:,} bytes ({n / 1e3:.0f} KB)")' "$tmp/tl.json"

echo
echo "== \"Tuning a strategy\": tune against the grid over five FSSDP knobs (aws-p3dn-v100-2node, collapsed gpt-moe-s trace, 8 iterations)"
echo "\$ hecate-sim sweep sweeps/fssdp-knobs-grid.yaml   (overlap_degree x rematerialize x comm_queue x broadcast x dispatch)"
"$sim" sweep sweeps/fssdp-knobs-grid.yaml --out "$tmp/g" -q > /dev/null 2>&1
echo "\$ hecate-sim tune aws-p3dn-v100-2node traces/gpt-moe-s-collapsed.json.gz --strategy fssdp --knobs overlap_degree,rematerialize,comm_queue,broadcast,dispatch --iterations 8"
"$sim" tune aws-p3dn-v100-2node traces/gpt-moe-s-collapsed.json.gz --strategy fssdp --knobs overlap_degree,rematerialize,comm_queue,broadcast,dispatch --iterations 8 --out "$tmp/t" -q > /dev/null 2>&1
python3 - "$tmp/g.jsonl" "$tmp/t.jsonl" <<'EOF'
import json, sys
rows = lambda f: [r for r in map(json.loads, open(f)) if r.get("role") == "point"]
g, t = rows(sys.argv[1]), rows(sys.argv[2])
bg = min((r for r in g if r["feasible"]), key=lambda r: r["mean_ms"])
bt = min((r for r in t if r["feasible"]), key=lambda r: r["mean_ms"])
print(f"  grid: {len(g)} points, best {bg['mean_ms']:.2f} ms ({bg['spec']})")
print(f"  tune: {len(t)} evaluations, best {bt['mean_ms']:.2f} ms: "
      f"{'the grid optimum' if bt['mean_ms'] == bg['mean_ms'] else 'NOT the grid optimum'}")
EOF

echo
echo "== \"One collective\": against the public figures on dgx-h100-4node (4 GiB)"
for spec in "all_reduce --ranks 8 --algo ring" "all_reduce --ranks 8" "all_to_all --ranks 16"; do
  echo "\$ hecate-sim collective dgx-h100-4node --op $spec -b 4G -e 4G"
  # shellcheck disable=SC2086
  "$sim" collective dgx-h100-4node --op $spec -b 4G -e 4G --format json -q > "$tmp/c.json" 2> /dev/null
  python3 - "$tmp/c.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rows"][0]
line = f"  {d['op']} on {d['ranks']} ranks: {r['algo']} {r['proto']}, busbw {r['busbw_GBps']:.1f} GB/s"
if d["op"] == "all_to_all":  # per GPU, the bytes for the other node's 8 GPUs over the time
    line += f", per GPU across nodes {r['bytes'] * (d['ranks'] - 8) / d['ranks'] / (r['time_us'] * 1e-6) / 1e9:.1f} GB/s"
print(line)
EOF
done

echo
echo "== \"Calibrating\": link classes recovered from synthetic nccl-tests logs (dgx-h100-4node; NIC 0.8x / 5 us, NVLink 0.9x / 2 us, 1% noise)"
# The logs come from the test tool nccl_log_synth (the simulator's own times with the given link
# parameters and seeded noise), built beside the binary when its build directory has it.
bdir=$(dirname "$sim")/../..
synth="$bdir/tests/unit/calib/nccl_log_synth"
[ -x "$synth" ] || { [ -f "$bdir/build.ninja" ] && ninja -C "$bdir" tests/unit/calib/nccl_log_synth > /dev/null 2>&1; } || true
if [ -x "$synth" ]; then
  truth="nic=0.8,5:nvlink=0.9,2"
  "$synth" topologies/dgx-h100-4node.yaml all_reduce 16 2 "$truth" 0.01 1 > "$tmp/all_reduce_perf.log"
  "$synth" topologies/dgx-h100-4node.yaml all_gather 8 1 "$truth" 0.01 2 > "$tmp/ag.log"
  "$synth" topologies/dgx-h100-4node.yaml all_to_all 16 2 "$truth" 0.01 3 > "$tmp/a2a.log"
  echo "\$ hecate-sim calibrate --topology dgx-h100-4node --nccl-tests all_reduce_perf.log --nccl-tests all_gather=ag.log --nccl-tests all_to_all=a2a.log -o cal.yaml"
  "$sim" calibrate --topology dgx-h100-4node --nccl-tests "$tmp/all_reduce_perf.log" --nccl-tests "all_gather=$tmp/ag.log" \
    --nccl-tests "all_to_all=$tmp/a2a.log" -o "$tmp/cal.yaml" -q > "$tmp/cal.out" 2>&1
  grep -E "^held out:|^median \|time error\||^log  |^(all_reduce_perf|ag|a2a)\.log |^all logs |^  (nvlink|nic) +bandwidth" "$tmp/cal.out" | sed 's/^/  /'
  grep -E "^held-out \|error\|" "$tmp/cal.out" | sed 's/^/  /'
else
  echo "  skipped: no nccl_log_synth beside $sim (build the tests: ninja -C $bdir)"
fi

echo
echo "== \"Against published throughput\": GPT-OSS-120B (force-balanced) and Mixtral-8x7B on dgx-h100-8node"
echo "\$ hecate-sim trace gen --model gpt-oss-120b --sources 64 --iterations 3 --preset uniform --seed 1 -o oss-uniform.json.gz"
"$sim" trace gen --model gpt-oss-120b --sources 64 --iterations 3 --preset uniform --seed 1 -o "$tmp/oss-uniform.json.gz" > /dev/null 2>&1
oss=(dgx-h100-8node "$tmp/oss-uniform.json.gz" --model gpt-oss-120b --set grad_accum=80 --strategy ep --iterations 2)
sim_run throughput,verdict "${oss[@]}" --layout gpt-oss-120b --set attention=standard
sim_run throughput "${oss[@]}" --layout gpt-oss-120b
sim_run throughput "${oss[@]}" --layout gpt-oss-120b,recompute=selective --set attention=standard
sim_run throughput "${oss[@]}" --layout gpt-oss-120b --set attention=standard --set attention_dropout=0.1
echo "\$ hecate-sim trace gen --model mixtral-8x7b --sources 64 --iterations 3 --preset uniform --seed 1 -o mixtral-uniform.json.gz"
"$sim" trace gen --model mixtral-8x7b --sources 64 --iterations 3 --preset uniform --seed 1 -o "$tmp/mixtral-uniform.json.gz" > /dev/null 2>&1
mixp=(--model mixtral-8x7b --set grad_accum=16 --strategy ep --iterations 3)
sim_run throughput,straggler_wait dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz "${mixp[@]}" --layout mixtral-8x7b,vpp=8
sim_run throughput,straggler_wait dgx-h100-8node "$tmp/mixtral-uniform.json.gz" "${mixp[@]}" --layout mixtral-8x7b,vpp=8
sim_run throughput,straggler_wait dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz "${mixp[@]}" --layout mixtral-8x7b

echo
echo "== \"Memory per GPU\", nccl: a DGX A100 node in 4 nodes"
sim_run mem:nccl aws-p4d-a100-4node traces/gpt-moe-s-aux_loss.json.gz --strategy ep,fssdp,fsdp --iterations 2

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
echo "== \"Parallel layouts\", below the presets' table: its first row with other settings (8 iterations)"
sim_run - dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fsdp:rematerialize=false,fssdp:rematerialize=true,bound

echo
echo "== \"Parallel layouts\", the deepseek-v3 preset: peak memory's terms and throughput (EP, 1 iteration)"
ds=(hgx-h800-256node traces/deepseek-v3-like-aux_free.json.gz --model deepseek-v3-like --set grad_accum=120 --strategy ep --iterations 1)
sim_run mem:params,mem:grads,mem:optimizer,mem:activations,throughput "${ds[@]}" --layout deepseek-v3
sim_run mem:params,mem:grads,mem:optimizer,mem:activations,throughput "${ds[@]}" --layout deepseek-v3,dispatcher=deepep --set route_groups=8 --set max_nodes=4

echo
echo "== \"Parallel layouts\", data-parallel overlap: the Mixtral preset's DP time per stage, with and without overlap"
sim_run dp_comm_ms,dp_comm_on_path_ms dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fssdp,fsdp
sim_run dp_comm_ms,dp_comm_on_path_ms dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b,overlap_grad_reduce=off,overlap_param_gather=off --set grad_accum=32 --iterations 8 --strategy ep,fssdp,fsdp

echo
echo "== \"Parallel layouts\", FlexMoE: the Mixtral preset, 12 iterations"
sim_run layer_replans,expands,migrations,experts_moved,total:reshard_migration dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 12 --strategy ep,flexmoe,flexmoe:reserve_slots=1
for n in 11 12; do
  iter_time "$n" dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --strategy ep,flexmoe
done
sim_run - dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 12 --strategy ep,flexmoe --network flow

echo
echo "== \"Parallel layouts\", FasterMoE: the Mixtral preset, 8 iterations"
sim_run shadowed_max_per_layer,bandwidth,straggler_wait,exposed_spag,exposed_sprs,materialize_copy,mem:copy_params dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fastermoe,fastermoe:bandwidth=25GB/s,fastermoe:trigger=false
sim_run - dgx-h100-8node traces/mixtral-8x7b-aux_loss.json.gz --model mixtral-8x7b --layout mixtral-8x7b --set grad_accum=32 --iterations 8 --strategy ep,fastermoe --network flow

echo
echo "== \"Memory per GPU\": FSSDP's memory-bound branch and allocator_slack (p3dn-2node, gpt-moe-l, micro_batch 2)"
sim_run memory_capacity_m,copies_cut_by_memory,mem:reserve,verdict aws-p3dn-v100-2node traces/gpt-moe-l-aux_loss.json.gz --set micro_batch=2 --strategy ep,fssdp:overlap_degree=64 --iterations 3
sim_run memory_capacity_m,copies_cut_by_memory,mem:reserve,verdict aws-p3dn-v100-2node traces/gpt-moe-l-aux_loss.json.gz --set micro_batch=2 --set allocator_slack=0.15 --strategy ep,fssdp:overlap_degree=64 --iterations 3
