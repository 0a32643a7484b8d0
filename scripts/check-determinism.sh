#!/usr/bin/env bash
# Determinism under stress: the same inputs must give the same bytes
#   * twice in a row (analytic and flow tier, every strategy; a timeline under a layout),
#   * for sweep --jobs 1 and --jobs 2,
#   * from differently optimized builds of the same source (default: build-test, debugoptimized -O2,
#     against build-debug, -O0; give other binaries as arguments, e.g. build-release/src/cli/hecate-sim).
# Builds build-debug when it is missing. Prints one line per check; exits 1 if any output differs.
# Usage: scripts/check-determinism.sh [HECATE_SIM...]
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  scripts/install-deps.sh
  [ -f build-test/build.ninja ] || meson setup build-test --buildtype=debugoptimized -Dwerror=true >/dev/null
  [ -f build-debug/build.ninja ] || meson setup build-debug --buildtype=debug -Dvalidation=disabled >/dev/null
  ninja -C build-test src/cli/hecate-sim >/dev/null
  ninja -C build-debug src/cli/hecate-sim >/dev/null
  bins=(build-test/src/cli/hecate-sim build-debug/src/cli/hecate-sim)
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
trace=traces/gpt-moe-s-aux_loss.json.gz
cat > "$tmp/sweep.yaml" <<EOF
schema: hecate-sim/sweep@1
topologies: [dgx-h100-4node, aws-p3dn-v100-2node]
traces: [$PWD/$trace]
strategies:
  ep: {}
  fssdp: {overlap_degree: [auto, 2], rematerialize: [false, true]}
  smartmoe: {period: [2]}
  flexmoe: {}
  fastermoe: {}
iterations: 4
EOF
# name | command (outputs to $out.*, cwd $tmp)
cases=(
  "run-analytic|run dgx-h100-4node $PWD/$trace --iterations 3 --format json"
  "run-flow|run aws-p3dn-v100-2node $PWD/$trace --iterations 2 --network flow --format json"
  "run-flow-l|run dgx-h100-4node $PWD/traces/gpt-moe-l-aux_loss.json.gz --iterations 3 --network flow --format json"
  "run-256gpu|run dgx-h100-32node $PWD/traces/deepseek-v3-like-aux_free.json.gz --iterations 1 --format json"
  "run-layout|run dgx-h100-4node $PWD/$trace --layout tp=2,pp=2,vpp=2,ep=8 --set grad_accum=4 --strategy ep,oracle,fssdp,fsdp,smartmoe --iterations 3 --format json"
  "timeline-layout|run dgx-h100-4node $PWD/$trace --layout tp=2,pp=2,vpp=2,ep=8 --set grad_accum=4 --strategy ep,fssdp:rematerialize=true,flexmoe,fastermoe --iterations 2 --format json --timeline OUT.json"
  "run-p4d-csv|run aws-p4d-a100-4node $PWD/traces/gpt-moe-s-collapsed.json.gz --iterations 3 --format csv"
  "collective|collective aws-p3dn-v100-2node --op all_to_all -b 1M -e 64M -f 4 --network flow --format csv"
  "sweep-j1|sweep sweep.yaml --jobs 1 --out OUT"
  "sweep-j2|sweep sweep.yaml --jobs 2 --out OUT"
)
fails=0
same() {  # same LABEL FILE FILE
  if cmp -s "$2" "$3"; then echo "same: $1"; else echo "DIFFERENT: $1 ($2 vs $3)"; fails=$((fails+1)); fi
}
for b in "${!bins[@]}"; do
  sim="$(cd "$(dirname "${bins[$b]}")" && pwd)/$(basename "${bins[$b]}")"
  for c in "${cases[@]}"; do
    name="${c%%|*}"; args="${c#*|}"
    for rep in 1 2; do
      out="b$b-$name-$rep"
      # shellcheck disable=SC2086
      ( cd "$tmp" && "$sim" ${args//OUT/$out} > "$out.stdout" 2> /dev/null )
      # sweep's table on stdout carries wall times; its files are the result
      if [[ $name == sweep* ]]; then cat "$tmp/$out.jsonl" "$tmp/$out.csv" > "$tmp/$out.out"; else mv "$tmp/$out.stdout" "$tmp/$out.out"; fi
      if [[ $name == timeline* ]]; then cat "$tmp/$out.json" >> "$tmp/$out.out"; fi
    done
    same "${bins[$b]}: $name twice" "$tmp/b$b-$name-1.out" "$tmp/b$b-$name-2.out"
  done
  same "${bins[$b]}: sweep --jobs 1 and 2" "$tmp/b$b-sweep-j1-1.out" "$tmp/b$b-sweep-j2-1.out"
  if [ "$b" -gt 0 ]; then
    for c in "${cases[@]}"; do
      name="${c%%|*}"
      same "${bins[0]} vs ${bins[$b]}: $name" "$tmp/b0-$name-1.out" "$tmp/b$b-$name-1.out"
    done
  fi
done
[ "$fails" = 0 ] && echo "deterministic: every output identical" || { echo "$fails output(s) differ"; exit 1; }
