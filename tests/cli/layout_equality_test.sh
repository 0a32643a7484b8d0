#!/usr/bin/env bash
# One iteration pipeline (issue 29): a run without --layout is the layout its resolved settings name
# (tp=1,pp=1,ep=<the strategy's EP size>,dist_opt=off,overlap_grad_reduce=on,bucket_size=<DDP's
# 25 MiB>), so the same run with that layout written out gives the same result, byte for byte, for
# every registered strategy. Checked over bundled presets x bundled traces (2 iterations each, the
# analytic tier; the flow tier on one pair); a pair a strategy cannot run (exit 2: too few experts
# for the GPUs, say) is skipped, and at least 40 (preset, trace, strategy) cases must compare.
# Usage: layout_equality_test.sh HECATE_SIM SOURCE_ROOT
set -u
sim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; root="$2"
cd "$root"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
presets=(dgx-h100-1node dgx-h100-4node aws-p3dn-v100-2node aws-p4d-a100-4node aws-p5-h100-4node hgx-h200-4node)
traces=(gpt-moe-s-aux_loss bert-moe-aux_loss mixtral-8x7b-aux_loss)
strategies=$("$sim" run --help | sed -nE 's/^ {34}([a-z]+) +[A-Za-z].*/\1/p')
compared=0; fails=0
check() {  # PRESET TRACE NETWORK
  local p=$1 t=$2 net=$3
  for s in $strategies; do
    "$sim" run "$p" "traces/$t.json.gz" --iterations 2 --network "$net" --strategy "$s" --format json > "$tmp/a.json" 2>/dev/null
    rc=$?
    [ $rc -eq 2 ] && continue
    [ $rc -ne 0 ] && { echo "FAIL: $p $t $s ($net) exited $rc"; fails=$((fails+1)); continue; }
    layout=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['strategies'][0]['resolved']['layout'])" "$tmp/a.json")
    "$sim" run "$p" "traces/$t.json.gz" --iterations 2 --network "$net" --strategy "$s" --layout "$layout" --format json > "$tmp/b.json" 2>/dev/null \
      || { echo "FAIL: $p $t $s ($net) with --layout $layout"; fails=$((fails+1)); continue; }
    if python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sys.exit(0 if json.dumps(a['strategies']) == json.dumps(b['strategies']) else 1)
" "$tmp/a.json" "$tmp/b.json"; then
      compared=$((compared+1))
    else
      echo "FAIL: $p $t $s ($net): without --layout != --layout $layout"; fails=$((fails+1))
    fi
  done
}
for p in "${presets[@]}"; do
  for t in "${traces[@]}"; do check "$p" "$t" analytic; done
done
check dgx-h100-4node gpt-moe-s-aux_loss flow
echo "compared $compared (preset, trace, strategy) cases"
[ "$compared" -ge 40 ] || { echo "FAIL: only $compared cases compared"; fails=$((fails+1)); }
echo "$compared passed, $fails failed"
[ "$fails" -eq 0 ]
