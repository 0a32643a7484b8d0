#!/usr/bin/env bash
# Every real nccl-tests log in validation/public-logs/ parses as posted and compares: `hecate-sim
# collective TOPOLOGY --op OP --compare LOG` with the topology and options its SOURCES.md names exits
# 0 and prints a table with a measured column, and a log without an entry here is a failure.
# Usage: public_logs_test.sh HECATE_SIM SOURCE_ROOT
set -u
sim="$1"; root="$2"
logs="$root/validation/public-logs"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
. "$root/tests/support/expect.sh"

# file | op | preset (or a topology file, ending .yaml, relative to the source root) | nodes (- keeps
# the preset's) | more options. Keep in step with SOURCES.md.
cases="
a100-1node-allreduce.log|all_reduce|dgx-a100-1node|-|
h100-1node-nvls-allreduce.log|all_reduce|dgx-h100-1node|-|
h100-2node-ib400-allreduce-ring.log|all_reduce|dgx-h100-4node|2|--algo ring
h100-4node-ib400-allreduce-default.log|all_reduce|dgx-h100-4node|-|
h200-2node-roce400-allgather-gcp.log|all_gather|hgx-h200-4node|2|
v100-1node-cubemesh-allreduce.log|all_reduce|aws-p3dn-v100-2node|-|
v100-8node-ib100-alltoall-2021.log|all_to_all|aws-p3dn-v100-4node|8|--ranks 64
v100-8node-ib100-allreduce-2021.log|all_reduce|aws-p3dn-v100-4node|8|--ranks 64
h100-2node-p5-efa-allreduce.log|all_reduce|aws-p5-h100-4node|2|--ranks 16
a100-2node-p4de-efa-allreduce.log|all_reduce|aws-p4d-a100-4node|2|--ranks 16
gb300-1node-nvl-alltoall-oci.log|all_to_all|validation/public-logs/gb300-nvl-oci.yaml|-|
gb300-2host-mnnvl-alltoall-oci.log|all_to_all|validation/public-logs/gb300-nvl-oci.yaml|-|
gb300-16host-mnnvl-alltoall-oci.log|all_to_all|validation/public-logs/gb300-nvl-oci.yaml|-|
gb300-32host-2rack-alltoall-oci.log|all_to_all|validation/public-logs/gb300-nvl-oci.yaml|-|
"
for f in "$logs"/*.log; do
  b=$(basename "$f")
  grep -q "^$b|" <<< "$cases" || { echo "FAIL: $b has no entry in public_logs_test.sh (topology to compare with)"; fails=$((fails+1)); }
done
while IFS='|' read -r file op preset nodes more; do
  [ -n "$file" ] || continue
  [ -f "$logs/$file" ] || { echo "FAIL: $file listed but not in validation/public-logs"; fails=$((fails+1)); continue; }
  topo="$preset"
  case "$preset" in *.yaml) topo="$root/$preset" ;; esac
  if [ "$nodes" != "-" ]; then
    src="$root/topologies/$preset.yaml"; case "$preset" in *.yaml) src="$root/$preset" ;; esac
    topo="$tmp/$(basename "$preset" .yaml)-$nodes.yaml"
    sed "s/^nodes: [0-9]*/nodes: $nodes/" "$src" > "$topo"
  fi
  # shellcheck disable=SC2086
  expect 0 -- timeout 60 "$sim" collective "$topo" --op "$op" --compare "$logs/$file" $more
  rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +-?[0-9.]+%' "$tmp/out")
  # Data rows of positive size, past a launcher prefix (srun -l's ` 0: `, mpirun's `[1,0]<stdout>:`).
  data=$(sed -E 's/^ *[0-9]+: //; s/^\[[0-9]+,[0-9]+\]<std(out|err)>://' "$logs/$file" | grep -cE '^ *[1-9][0-9]* ')
  if grep -q "measured(us)" "$tmp/out" && grep -q "|error| against the measurement" "$tmp/out" && [ "$rows" -gt 0 ] && [ "$rows" = "$data" ]; then
    echo "ok: $file: $rows sizes compared"
  else
    echo "FAIL: $file: $rows compared rows for $data positive-size rows in the log"; head -5 "$tmp/out"; fails=$((fails+1))
  fi
done <<< "$cases"

# What the posted quirks say: the NCCL version line is noted once on stderr; the 2021 excerpt needs
# its ranks (the rows' size / count say 64) and refuses a count that disagrees.
"$sim" collective "$tmp/hgx-h200-4node-2.yaml" --op all_gather --compare "$logs/h200-2node-roce400-allgather-gcp.log" 2> "$tmp/err" > /dev/null
if [ "$(grep -c "an 'NCCL version' line (first at line 20: 'NCCL version 2.26.6+cuda12.8')" "$tmp/err")" = 1 ]; then
  echo "ok: the NCCL version line is noted once"; else echo "FAIL: NCCL version note"; cat "$tmp/err"; fails=$((fails+1)); fi
a2a="$logs/v100-8node-ib100-alltoall-2021.log"
expect 2 "v100-8node-ib100-alltoall-2021.log: error: Rank: the log names no ranks" "size / count say 64" "--ranks N" -- \
  "$sim" collective "$tmp/aws-p3dn-v100-4node-8.yaml" --op all_to_all --compare "$a2a"
expect 2 "v100-8node-ib100-alltoall-2021.log:5: error: count" "the rows say 64 ranks, --ranks 32" -- \
  "$sim" collective "$tmp/aws-p3dn-v100-4node-8.yaml" --op all_to_all --compare "$a2a" --ranks 32
expect 2 "--ranks: error: 8: .*h100-4node-ib400-allreduce-default.log lists 32 ranks" -- \
  "$sim" collective dgx-h100-4node --op all_reduce --compare "$logs/h100-4node-ib400-allreduce-default.log" --ranks 8
# The 4-node log: 1 MiB out-of-place 317.0 us, in-place 93.26 us (and 2 and 4 MiB, 45% and 33%
# apart): marked, the lower compared.
"$sim" collective dgx-h100-4node --op all_reduce --compare "$logs/h100-4node-ib400-allreduce-default.log" > "$tmp/out"
if grep -qE '^ +1048576 .* 93\.26 .*! out-of-place 317\.00 us, in-place 93\.26 us' "$tmp/out" && grep -q "^# ! 3 size(s) where" "$tmp/out"; then
  echo "ok: out-of-place / in-place outliers are marked"; else echo "FAIL: outlier mark"; cat "$tmp/out"; fails=$((fails+1)); fi

# The parser fixtures' quirks through the commands (tests/fixtures/nccl-tests/): a prefixed log
# compares with its notes on stderr; calibrate takes an excerpt's ranks as OP@N=FILE (then fails on
# its 6 sizes for want of bandwidth-bound rows, past the ranks) and asks for them without.
fx="$root/tests/fixtures/nccl-tests"
expect 0 "note: .*ray-prefix.log: launcher prefix stripped from 19 line\\(s\\)" "note: .*ray-prefix.log: 1 non-table line" -- \
  "$sim" collective dgx-h100-4node --op all_reduce --compare "$fx/ray-prefix.log"
expect 2 "no-rank-lines.log: error: Rank: the log names no ranks" "--nccl-tests all_gather@N=" -- \
  "$sim" calibrate --topology hgx-h200-4node --nccl-tests "all_gather=$fx/no-rank-lines.log" -o "$tmp/cal.yaml"
expect 2 "no-rank-lines.log: error: fewer than 2 bandwidth-bound rows" -- \
  "$sim" calibrate --topology hgx-h200-4node --nccl-tests "all_gather@16=$fx/no-rank-lines.log" -o "$tmp/cal.yaml"
expect 2 "--nccl-tests: error: all_gather@x=.*expected OP@N=FILE" -- \
  "$sim" calibrate --topology hgx-h200-4node --nccl-tests "all_gather@x=$fx/no-rank-lines.log" -o "$tmp/cal.yaml"

if [ "$fails" -gt 0 ]; then echo "$fails public-log case(s) failed"; exit 1; fi
echo "all public-log cases passed"
