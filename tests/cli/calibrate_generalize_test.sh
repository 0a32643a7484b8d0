#!/usr/bin/env bash
# calibrate generalizes (issue 30 item 3): on synthetic nccl-tests logs made with known link and NCCL
# protocol factors (tests/unit/calib/nccl_log_synth), the fit reports the held-out sizes and logs by
# size band, and the error on them falls; a log named by --holdout-logs is checked, never fitted; a
# calibration applied to another topology than the one it was fitted on warns (stderr, run's JSON
# warnings) and still runs.
# Usage: calibrate_generalize_test.sh HECATE_SIM SOURCE_ROOT NCCL_LOG_SYNTH
set -u
sim="$1"; root="$2"; synth="$3"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
. "$root/tests/support/expect.sh"

topo="$root/topologies/dgx-h100-4node.yaml"
truth="nic=0.8,5:nvlink=0.9,2:intra.LL=1.5,0.8:net.LL=1.3,1"
"$synth" "$topo" all_reduce 16 2 "$truth" 0.005 1 > "$tmp/all_reduce_perf.log"
"$synth" "$topo" all_gather 8 1 "$truth" 0.005 2 > "$tmp/ag8.log"
"$synth" "$topo" all_to_all 16 2 "$truth" 0.005 3 > "$tmp/a2a16.log"
"$synth" "$topo" all_reduce 8 1 "$truth" 0.005 4 > "$tmp/ar8.log"
expect 0 -- "$sim" calibrate --topology dgx-h100-4node --nccl-tests "$tmp/all_reduce_perf.log" --nccl-tests "all_gather=$tmp/ag8.log" \
  --nccl-tests "all_to_all=$tmp/a2a16.log" --nccl-tests "all_reduce=$tmp/ar8.log" --holdout-logs ar8.log -o "$tmp/cal.yaml"
cp "$tmp/out" "$tmp/cal.out"
# The held-out log is marked, every one of its sizes "held out"; the output says what was held out.
if grep -q "ar8.log (all_reduce, 8 ranks, 1 node(s)), HELD OUT (not fitted)" "$tmp/cal.out" \
   && grep -q "^held out: every other size of the fitted logs (the 2nd, 4th, ...), and every size of ar8.log" "$tmp/cal.out" \
   && [ "$(sed -n '/ar8.log (all_reduce/,/^held-out/p' "$tmp/cal.out" | grep -c ' fitted$')" = 0 ]; then
  echo "ok: --holdout-logs: the log is checked, not fitted"; else echo "FAIL: --holdout-logs marking"; cat "$tmp/cal.out"; fails=$((fails+1)); fi
# The summary table: every band has held-out sizes, and the median error falls below 2% in each
# (it was above 5% before: the truth is far from the preset), on the held-out log too.
python3 - "$tmp/cal.out" <<'PY' && echo "ok: held-out error falls in every size band" || { echo "FAIL: held-out bands"; sed -n '/^median |time error|/,/^$/p' "$tmp/cal.out"; fails=$((fails+1)); }
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'^(all logs|ar8\.log \(held out\))\s+(.*)$', line)
    if m:
        rows[m.group(1)] = re.findall(r'([0-9.]+)% -> ([0-9.]+)% \((\d+)\)', m.group(2))
assert set(rows) == {'all logs', 'ar8.log (held out)'}, rows
assert len(rows['all logs']) == 4, rows  # all, <=64KB, 1-64MB, >=256MB
for before, after, n in rows['all logs']:
    assert float(after) < 2 and float(after) < float(before) and int(n) > 0, rows
assert float(rows['all logs'][0][0]) > 5, rows
before, after, n = rows['ar8.log (held out)'][0]
assert float(after) < 2 < float(before), rows
PY
# The file records the topology (name and content hash) and the protocol factors.
if grep -q '^topology: "preset:dgx-h100-4node"' "$tmp/cal.yaml" && grep -qE '^topology_fnv1a64: "[0-9a-f]{16}"' "$tmp/cal.yaml" \
   && grep -qE '^  intra: \{LL: \{latency_scale: 1\.(4[89]|5[01])' "$tmp/cal.yaml"; then
  echo "ok: the calibration records its topology and the protocol factors"; else echo "FAIL: calibration file"; cat "$tmp/cal.yaml"; fails=$((fails+1)); fi

# Applied to the topology it was fitted on: no warning. To another: one line on stderr, in the JSON
# warnings, and the run completes.
run=("$sim" run dgx-h100-4node "$root/tests/fixtures/tiny-trace.json" --model "$root/tests/fixtures/tiny-model.yaml" --strategy ep
     --iterations 1 --format json --calibration "$tmp/cal.yaml")
expect 0 -- "${run[@]}"
if ! grep -q "fitted on" "$tmp/err" && python3 -c "import json,sys; assert not [w for w in json.load(open(sys.argv[1]))['warnings'] if 'fitted on' in w]" "$tmp/out"; then
  echo "ok: same topology, no warning"; else echo "FAIL: a warning on the same topology"; cat "$tmp/err"; fails=$((fails+1)); fi
sed 's/^nodes: [0-9]*/nodes: 2/' "$topo" > "$tmp/h100-2node.yaml"
run[2]="$tmp/h100-2node.yaml"
expect 0 "cal.yaml: warning: topology_fnv1a64: fitted on preset:dgx-h100-4node \(fnv1a64 [0-9a-f]{16}\), applied to .*h100-2node.yaml \(fnv1a64 [0-9a-f]{16}\)" -- "${run[@]}"
if [ "$(grep -c "fitted on" "$tmp/err")" = 1 ] && python3 -c "
import json, sys
w = json.load(open(sys.argv[1]))['warnings']
assert any('fitted on preset:dgx-h100-4node' in x and 'h100-2node.yaml' in x for x in w), w" "$tmp/out"; then
  echo "ok: another topology: one warning line, in the JSON warnings"; else echo "FAIL: topology mismatch warning"; cat "$tmp/err"; fails=$((fails+1)); fi
expect 0 "cal.yaml: warning: topology_fnv1a64: fitted on preset:dgx-h100-4node" -- \
  "$sim" collective "$tmp/h100-2node.yaml" --op all_reduce -b 1M -e 4M --calibration "$tmp/cal.yaml"
# A --holdout-logs name that is none of the logs, or holding every log out: input errors.
expect 2 "--holdout-logs: error: nope.log: names none of the --nccl-tests logs" -- \
  "$sim" calibrate --topology dgx-h100-4node --nccl-tests "all_reduce=$tmp/ar8.log" --holdout-logs nope.log -o "$tmp/x.yaml"
expect 2 "--holdout-logs: error: every log is held out" -- \
  "$sim" calibrate --topology dgx-h100-4node --nccl-tests "all_reduce=$tmp/ar8.log" --holdout-logs ar8.log -o "$tmp/x.yaml"
[ -e "$tmp/x.yaml" ] && { echo "FAIL: a failed calibrate wrote its output"; fails=$((fails+1)); }

if [ "$fails" -gt 0 ]; then echo "$fails calibrate-generalize case(s) failed"; exit 1; fi
echo "all calibrate-generalize cases passed"
