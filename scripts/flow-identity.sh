#!/usr/bin/env bash
# The flow tier's results, byte for byte, between two binaries: a speed change to the flow network
# (network/flow_network.hpp) or its solver must not move a single simulated number. Runs a matrix of
# presets x traces x (every strategy, fssdp alone) with --network flow for ITER iterations through
# each binary, JSON output, and compares the files (less the line counting re-used records, which
# bench-cli.sh leaves out too). Prints one line per differing case and a summary; exits 1 on any
# difference.
# --reldiff: for a change allowed to move numbers within a stated error, reports instead each
# differing case's largest relative difference of any numeric JSON field (scripts/json_reldiff.py)
# and the largest over the matrix (a differing case runs again, whole, for it); exits 1 only on a
# difference of exit status or a non-numeric one.
#
# Usage: scripts/flow-identity.sh [--iterations N] [--quick] [--reldiff] OLD_BINARY [NEW_BINARY]
#   NEW_BINARY  default build-release/src/cli/hecate-sim (not rebuilt: build it first)
#   --quick     the three presets of the issue only (aws-p4d-a100-4node, aws-p3dn-v100-2node,
#               dgx-h100-4node); otherwise also dgx-a100-1node, aws-p5-h100-4node, h100-fattree-2to1-16node
set -euo pipefail
iters=6 quick=0 reldiff=0 old="" new=""
while [ $# -gt 0 ]; do
  case "$1" in
    --iterations) iters="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --reldiff) reldiff=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "flow-identity.sh: unknown option $1" >&2; exit 2 ;;
    *) if [ -z "$old" ]; then old=$(realpath -m "$1"); else new=$(realpath -m "$1"); fi; shift ;;
  esac
done
[ -n "$old" ] || { echo "flow-identity.sh: OLD_BINARY missing" >&2; exit 2; }
cd "$(dirname "$0")/.."
[ -n "$new" ] || new=$PWD/build-release/src/cli/hecate-sim
for b in "$old" "$new"; do [ -x "$b" ] || { echo "flow-identity.sh: $b is not an executable" >&2; exit 2; }; done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
presets=(aws-p4d-a100-4node aws-p3dn-v100-2node dgx-h100-4node)
[ "$quick" = 1 ] || presets+=(dgx-a100-1node aws-p5-h100-4node h100-fattree-2to1-16node)
traces=(gpt-moe-s-aux_loss gpt-moe-s-collapsed bert-moe-aux_loss)
cases=0 fails=0 worst=0 worst_case=""
for p in "${presets[@]}"; do
  for t in "${traces[@]}"; do
    for s in all fssdp; do
      strat=(); [ "$s" = all ] || strat=(--strategy "$s")
      args=(run "$p" "traces/$t.json.gz" "${strat[@]}" --iterations "$iters" --network flow --format json)
      rc_old=0 rc_new=0
      "$old" "${args[@]}" 2>/dev/null | grep -v simulated_iterations > "$tmp/old.json" || rc_old=$?
      "$new" "${args[@]}" 2>/dev/null | grep -v simulated_iterations > "$tmp/new.json" || rc_new=$?
      cases=$((cases + 1))
      if [ "$reldiff" = 1 ] && [ "$rc_old" = "$rc_new" ] && [ "$rc_old" = 0 ] && ! cmp -s "$tmp/old.json" "$tmp/new.json"; then
        "$old" "${args[@]}" 2>/dev/null > "$tmp/old.json"
        "$new" "${args[@]}" 2>/dev/null > "$tmp/new.json"
        r=$(python3 scripts/json_reldiff.py --ignore simulated_iterations "$tmp/old.json" "$tmp/new.json")
        echo "$p $t $s: $r"
        case "$r" in *non-numeric*) fails=$((fails + 1)) ;; esac
        v=${r#max_rel }; v=${v%% *}
        if python3 -c "import sys; sys.exit(0 if float('$v') > float('$worst') else 1)"; then worst=$v worst_case="$p $t $s"; fi
      elif [ "$rc_old" != "$rc_new" ] || ! cmp -s "$tmp/old.json" "$tmp/new.json"; then
        echo "DIFFERENT: $p $t $s (exit $rc_old vs $rc_new)"; fails=$((fails + 1))
      fi
    done
  done
done
if [ "$reldiff" = 1 ]; then
  echo "largest relative difference over $cases cases: $worst${worst_case:+ ($worst_case)}"
  [ "$fails" = 0 ] || { echo "$fails of $cases cases differ in exit status or non-numerically"; exit 1; }
elif [ "$fails" = 0 ]; then echo "byte-identical: $cases cases"; else echo "$fails of $cases cases differ"; exit 1; fi
