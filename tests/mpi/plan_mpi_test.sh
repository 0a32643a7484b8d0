#!/usr/bin/env bash
# A plan out of the simulator executed on MPI ranks: `hecate-sim plan` for FSSDP on dgx-h100-1node
# (8 GPUs) at iteration 3, then `mpirun -np 8 hecate-plan-check`: every rank checks its copies and
# sums against the CPU reference. Also: the wrong rank count exits 2. Exit 77 (skipped) without
# hecate-plan-check (no MPI at configure time) or mpirun.
# Usage: plan_mpi_test.sh HECATE_SIM SOURCE_ROOT HECATE_PLAN_CHECK
set -u
sim="$1"; root="$2"; check="${3:-}"
fx="$root/tests/fixtures"
if [ -z "$check" ] || [ ! -x "$check" ]; then echo "skip: hecate-plan-check not built (no MPI)"; exit 77; fi
if ! command -v mpirun > /dev/null; then echo "skip: no mpirun"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under LeakSanitizer (scripts/test-sanitize.sh) Open MPI's own allocations are suppressed by library
# (tests/lsan.supp), which needs whole stacks: its libraries and plugins keep no frame pointers, so
# the fast unwinder stops one frame below malloc, at an unknown module, and every rank failed on them.
if [ -n "${LSAN_OPTIONS:-}" ]; then export LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0"; fi
fails=0

run_check() {  # run_check NAME SCALE TRACE PLAN_ARGS...: plan on dgx-h100-1node, then the checker on 8 ranks
  local name="$1" scale="$2" trace="$3"; shift 3
  if ! "$sim" plan dgx-h100-1node "$trace" "$@" -o "$tmp/$name.json" 2> "$tmp/plan.err"; then
    echo "FAIL: hecate-sim plan $*"; cat "$tmp/plan.err"; fails=$((fails+1)); return
  fi
  timeout 60 mpirun -np 8 --oversubscribe "$check" "$tmp/$name.json" --scale "$scale" > "$tmp/$name.out" 2> "$tmp/$name.err"
  local rc=$?
  cat "$tmp/$name.out"
  local okl; okl=$(grep -cE '^rank [0-7]: [0-9]+ layers, [0-9]+ copies received, [0-9]+ sums checked: ok$' "$tmp/$name.out")
  if [ "$rc" != 0 ] || [ "$okl" != 8 ]; then
    echo "FAIL ($name: exit $rc, $okl of 8 ranks ok)"; tail -5 "$tmp/$name.err"; fails=$((fails+1)); return
  fi
  # The copies counted over all ranks are the plan's spAG transfers (one received copy each).
  local copies transfers
  copies=$(awk '/^rank [0-7]: / { n += $5 } END { print n + 0 }' "$tmp/$name.out")
  transfers=$(awk '/"spag": \[$/ { s = 1; next } /^ *\]/ { s = 0 } s && /"chunk"/ { n++ } END { print n + 0 }' "$tmp/$name.json")
  if [ "$copies" != "$transfers" ] || [ "$copies" = 0 ]; then
    echo "FAIL ($name: $copies copies received, $transfers spAG transfers in the plan)"; fails=$((fails+1)); return
  fi
  echo "ok: $name ($copies copies over 8 ranks)"
}

tiny=("$fx/tiny-trace.json" --model "$fx/tiny-model.yaml")  # 2 layers, 8 experts of 512 KiB
run_check chain 0.01 "${tiny[@]}" --strategy fssdp:overlap_degree=2 --iteration 3
run_check direct 0.01 "${tiny[@]}" --strategy fssdp:overlap_degree=3:broadcast=direct --iteration 3
# gpt-moe-s (12 layers, 64 experts of 4.5 MiB) with the calibration stage: at iteration 3 it adds
# copies after the gate in 2 layers (their spAG follows the forward one); iteration 6 follows the
# first re-shard (window 5), so experts have moved away from their initial owners.
gms="$root/traces/gpt-moe-s-collapsed.json.gz"
run_check gpt-moe-s-calibrated 0.001 "$gms" --strategy fssdp:calibrate=true --iteration 3
run_check gpt-moe-s-resharded 0.001 "$gms" --strategy fssdp:calibrate=true --iteration 6

# The plan has 8 GPUs: 4 ranks is bad input (exit 2) with a message.
timeout 60 mpirun -np 4 --oversubscribe "$check" "$tmp/chain.json" --scale 0.01 > "$tmp/np4.out" 2> "$tmp/np4.err"
rc=$?
if [ "$rc" = 2 ] && grep -q "plans 8 GPUs but 4 MPI ranks are running" "$tmp/np4.err"; then echo "ok: 4 ranks for 8 GPUs exits 2"
else echo "FAIL: 4 ranks for an 8-GPU plan exited $rc"; cat "$tmp/np4.err" | head -5; fails=$((fails+1)); fi
# A broken plan is bad input on every rank (exit 2), reported once with file:line.
sed 's/"src": 1, "dst": 2}/"src": 1, "dst": 9}/' "$tmp/chain.json" > "$tmp/broken.json"
timeout 60 mpirun -np 8 --oversubscribe "$check" "$tmp/broken.json" > "$tmp/broken.out" 2> "$tmp/broken.err"
rc=$?
if [ "$rc" = 2 ] && grep -qE "broken.json:[0-9]+:[0-9]+: error: layers\[0\]\.spag\[[0-9]+\]\.dst: GPU 9 out of range" "$tmp/broken.err"; then
  echo "ok: a broken plan exits 2 with file:line"
else echo "FAIL: broken plan exited $rc"; head -5 "$tmp/broken.err"; fails=$((fails+1)); fi

[ "$fails" = 0 ] && echo "all plan MPI cases passed" || { echo "$fails plan MPI case(s) failed"; exit 1; }
