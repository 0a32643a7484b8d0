#!/usr/bin/env bash
# hecate-sim plan: a strategy without plans exits 2 naming the problem; bad options exit 2; the same
# inputs give the same bytes; every FSSDP variant's plan is written (hecate-sim plan reads each plan
# back and checks it, as hecate-plan-check does, before writing it).
# Usage: plan_cli_test.sh HECATE_SIM SOURCE_ROOT
set -u
sim="$1"; root="$2"
fx="$root/tests/fixtures"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
. "$root/tests/support/expect.sh"

plan=("$sim" plan dgx-h100-1node "$fx/tiny-trace.json" --model "$fx/tiny-model.yaml")

expect 2 "strategy 'ep' plans no sparse collectives" "fssdp" -- "${plan[@]}" --strategy ep --iteration 3 -o "$tmp/ep.json"
[ -e "$tmp/ep.json" ] && { echo "FAIL: a refused plan left a file"; fails=$((fails+1)); }
expect 2 "oracle" "plans no sparse collectives" -- "${plan[@]}" --strategy oracle --iteration 0 -o "$tmp/o.json"
expect 2 "one strategy" -- "${plan[@]}" --strategy fssdp,ep --iteration 0 -o "$tmp/x.json"
expect 2 "has no knob .windw." -- "${plan[@]}" --strategy fssdp:windw=3 --iteration 0 -o "$tmp/x.json"
expect 2 "iteration" -- "${plan[@]}" --strategy fssdp --iteration -1 -o "$tmp/x.json"
expect 2 "iteration" -- "${plan[@]}" --strategy fssdp -o "$tmp/x.json"

# Determinism: two runs, the same bytes.
expect 0 -- "${plan[@]}" --strategy fssdp:overlap_degree=2 --iteration 3 -o "$tmp/a.json"
expect 0 -- "${plan[@]}" --strategy fssdp:overlap_degree=2 --iteration 3 -o "$tmp/b.json"
if cmp -s "$tmp/a.json" "$tmp/b.json"; then echo "ok: two runs write the same bytes"
else echo "FAIL: plans differ between runs"; fails=$((fails+1)); fi
for key in '"schema": "hecate-sim/plan@1"' '"strategy": "fssdp:overlap_degree=2"' '"iteration": 3' '"gpus": 8' \
           '"topology": "preset:dgx-h100-1node"' '"spag": \[' '"sprs": \[' '"dispatch_bytes": \['; do
  grep -qE -- "$key" "$tmp/a.json" || { echo "FAIL: plan lacks $key"; fails=$((fails+1)); }
done
# overlap_degree=2 materializes two experts per layer: the plan must have copies and transfers.
grep -qE '\{"chunk": [0-9]+, "src": [0-9]+, "dst": [0-9]+\}' "$tmp/a.json" || { echo "FAIL: no transfers in the plan"; fails=$((fails+1)); }
# Another iteration is another plan (the trace's loads differ).
expect 0 -- "${plan[@]}" --strategy fssdp:overlap_degree=2 --iteration 1 -o "$tmp/c.json"
cmp -s "$tmp/a.json" "$tmp/c.json" && { echo "FAIL: iterations 1 and 3 wrote the same plan"; fails=$((fails+1)); }

# Every variant writes a plan that passes the reader's checks (direct broadcast, calibration copies
# in chains of their own, a re-shard before the iteration, automatic overlap degree, 4 nodes).
expect 0 -- "${plan[@]}" --strategy fssdp:overlap_degree=3:broadcast=direct --iteration 3 -o "$tmp/d.json"
grep -q '"broadcast": "direct"' "$tmp/d.json" || { echo "FAIL: direct plan"; fails=$((fails+1)); }
expect 0 -- "${plan[@]}" --strategy fssdp:overlap_degree=1:calibrate=true --iteration 4 -o "$tmp/cal.json"
expect 0 -- "${plan[@]}" --strategy fssdp:window=1:overlap_degree=2 --iteration 3 -o "$tmp/reshard.json"
expect 0 -- "${plan[@]}" --strategy fssdp --iteration 2 -o "$tmp/auto.json"
expect 0 -- "$sim" plan dgx-h100-4node "$root/traces/gpt-moe-s-collapsed.json.gz" --strategy fssdp:overlap_degree=4 --iteration 1 -o "$tmp/4node.json"
grep -q '"nodes": 4' "$tmp/4node.json" || { echo "FAIL: 4-node plan"; fails=$((fails+1)); }

[ "$fails" = 0 ] && echo "all plan CLI cases passed" || { echo "$fails plan CLI case(s) failed"; exit 1; }
