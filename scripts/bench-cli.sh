#!/usr/bin/env bash
# What users run, timed through the command line on bundled traces (issue rows of the speed work):
# CPU seconds (user + sys) and peak RSS of each case, the median of RUNS runs.
#
# Usage: scripts/bench-cli.sh [--compare OLD_BINARY] [--runs N] [--smoke] [BINARY]
#   BINARY              the hecate-sim to time (default build-release/src/cli/hecate-sim, brought up to date)
#   --compare OLD       also time OLD, alternating old and new run by run (the machine is shared:
#                       the ratio new / old of the medians decides, not the absolute seconds); each
#                       case's simulated results (JSON, less the line counting re-used records) are
#                       compared and a difference is reported
#   --runs N            runs per case (default 3)
#   --smoke             every case once with 1 iteration (tests/bench: the cases run, nothing timed)
#   --deepseek          also DeepSeek-V3 as trained (2,048 GPUs, DualPipe, DeepEP, grad_accum 120), one
#                       step on each tier (issue 32's step: seconds analytic, minutes and ~3 GB on the flow tier)
set -euo pipefail
old="" runs=3 smoke=0 sim="" deepseek=0
while [ $# -gt 0 ]; do
  case "$1" in
    --compare) old="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --smoke) smoke=1; runs=1; shift ;;
    --deepseek) deepseek=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "bench-cli.sh: unknown option $1" >&2; exit 2 ;;
    *) sim="$1"; shift ;;
  esac
done
# Binaries named relative to where the script was called from; the cases' files are the repository's.
[ -n "$sim" ] && sim=$(realpath -m "$sim")
[ -n "$old" ] && old=$(realpath -m "$old")
cd "$(dirname "$0")/.."
[ -n "$sim" ] || sim=$(scripts/release-binary.sh)
for b in "$sim" $old; do
  if [ ! -x "$b" ]; then echo "bench-cli.sh: $b is not an executable" >&2; exit 2; fi
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# One case per line: a label | the arguments after the binary (ITER is the iteration count).
cases() {
  local p4d="run aws-p4d-a100-4node traces/gpt-moe-s-aux_loss.json.gz -q"
  for s in ep fssdp fsdp smartmoe flexmoe fastermoe; do
    echo "$s, 32 GPUs, 1,000 iterations|$p4d --iterations ITER1000 --strategy $s"
  done
  echo "all strategies, 32 GPUs, 1,000 iterations|$p4d --iterations ITER1000"
  echo "fssdp --network flow, 32 GPUs, 50 iterations|$p4d --iterations ITER50 --strategy fssdp --network flow"
  echo "flexmoe --network flow, 32 GPUs, 50 iterations|$p4d --iterations ITER50 --strategy flexmoe --network flow"
  echo "all strategies, 1,024 GPUs (dgx-h100-128node), 1 iteration|run dgx-h100-128node traces/gpt-moe-s-aux_loss.json.gz -q --iterations 1"
  echo "DeepSeek-V3-like EP 64, 1,024 GPUs, 1 iteration|run dgx-h100-128node traces/deepseek-v3-like-aux_free.json.gz --model deepseek-v3-like --strategy ep:ep_size=64 -q --iterations 1"
  if [ "$deepseek" = 1 ]; then
    local ds="run hgx-h800-256node traces/deepseek-v3-like-aux_free.json.gz --model deepseek-v3-like --set grad_accum=120 --layout deepseek-v3,dispatcher=deepep --set route_groups=8 --set max_nodes=4 --strategy ep -q --iterations 1"
    echo "DeepSeek-V3 as trained, 2,048 GPUs, 1 step|$ds"
    echo "DeepSeek-V3 as trained, --network flow, 1 step|$ds --network flow"
  fi
}

# time_one BINARY ARGS...: prints "cpu_seconds rss_kb" and leaves the JSON in $tmp/out.json
time_one() {
  local b="$1"; shift
  /usr/bin/time -f "%U %S %M" -o "$tmp/t" "$b" "$@" --format json > "$tmp/out.json" 2>/dev/null
  awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$tmp/t"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-58s %9s %9s' "case" "CPU s" "peak MB"
[ -n "$old" ] && printf ' %9s %9s %7s %s' "old CPU s" "old MB" "new/old" "results"
printf '\n'
while IFS='|' read -r label args; do
  if [ "$smoke" = 1 ]; then args=$(echo "$args" | sed -E 's/ITER[0-9]+/1/'); else args=$(echo "$args" | sed -E 's/ITER([0-9]+)/\1/'); fi
  read -r -a argv <<< "$args"
  : > "$tmp/new"; : > "$tmp/old"
  same="-"
  for ((i = 0; i < runs; ++i)); do
    time_one "$sim" "${argv[@]}" >> "$tmp/new"
    if [ -n "$old" ]; then
      grep -v simulated_iterations "$tmp/out.json" > "$tmp/new.json"
      time_one "$old" "${argv[@]}" >> "$tmp/old"
      grep -v simulated_iterations "$tmp/out.json" > "$tmp/old.json"
      if cmp -s "$tmp/new.json" "$tmp/old.json"; then same="same"; else same="DIFFER"; fi
    fi
  done
  cpu=$(cut -d' ' -f1 "$tmp/new" | median); mb=$(cut -d' ' -f2 "$tmp/new" | median | awk '{ printf "%.0f", $1 / 1024 }')
  printf '%-58s %9s %9s' "$label" "$cpu" "$mb"
  if [ -n "$old" ]; then
    ocpu=$(cut -d' ' -f1 "$tmp/old" | median); omb=$(cut -d' ' -f2 "$tmp/old" | median | awk '{ printf "%.0f", $1 / 1024 }')
    printf ' %9s %9s %7s %s' "$ocpu" "$omb" "$(awk -v a="$cpu" -v b="$ocpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" "$same"
  fi
  printf '\n'
done < <(cases)
