#!/usr/bin/env bash
# scripts/gpu-day.sh without a GPU: no GPU found is a clear message and exit 2; with a stand-in
# nvidia-smi listing GPUs, --dry-run prints the plan for one GPU and for 8 (every suite, the
# launcher, the calibration and the before/after comparison) and runs nothing.
# Usage: gpu_day_test.sh SOURCE_ROOT
set -u
root="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # check NAME COMMAND...: runs, compares exit status and required output lines
  local name="$1" want_rc="$2"; shift 2
  local pattern
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want_rc" ]; then echo "FAIL: $name: exit $rc, expected $want_rc"; echo "$out" | head -5; fails=$((fails+1)); return; fi
  for pattern in "${patterns[@]}"; do
    if ! grep -qE -- "$pattern" <<< "$out"; then echo "FAIL: $name: output lacks /$pattern/"; echo "$out" | head -20; fails=$((fails+1)); return; fi
  done
  echo "ok: $name"
}
printf '#!/bin/sh\nexit 0\n' > "$tmp/none"; chmod +x "$tmp/none"
patterns=("no NVIDIA GPU found")
check "no GPU" 2 env NVIDIA_SMI="$tmp/none" "$root/scripts/gpu-day.sh" --dry-run
patterns=("no NVIDIA GPU found")
check "no nvidia-smi at all" 2 env NVIDIA_SMI="$tmp/absent" "$root/scripts/gpu-day.sh" --dry-run
printf '#!/bin/sh\necho "NVIDIA H100 80GB HBM3"\n' > "$tmp/one"; chmod +x "$tmp/one"
patterns=("1 GPU\(s\) \(NVIDIA H100 80GB HBM3; 1 node" "results in validation/results/h100-80gb-hbm3-1gpu-"
          "hecate-validate --self-test" "--suite gemm,materialize,overlap .*--d-model 768 --d-ffn 1536 --mats 2"
          "calibrate .* --topology dgx-h100-1node -o" "validate .* --calibration")
check "dry run, one GPU" 0 env NVIDIA_SMI="$tmp/one" "$root/scripts/gpu-day.sh" --dry-run
if grep -q -- "--suite collectives" <<< "$out"; then echo "FAIL: one GPU plans the collectives"; fails=$((fails+1)); fi
printf '#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do echo "NVIDIA H100 80GB HBM3"; done\n' > "$tmp/eight"; chmod +x "$tmp/eight"
if command -v mpirun >/dev/null 2>&1; then
  patterns=("8 GPU\(s\)" "mpirun -np 8 .*--suite collectives -b 8 -e 1G -f 4" "plan dgx-h100-1node .*--strategy fssdp"
            "--suite alltoallv,sparse" "--d-model 4096 --d-ffn 14336 --mats 3")
  check "dry run, 8 GPUs, mixtral shapes" 0 env -u SLURM_JOB_ID NVIDIA_SMI="$tmp/eight" "$root/scripts/gpu-day.sh" --dry-run --model mixtral-8x7b
fi
patterns=("--model: no preset or file 'nope'")
check "bad model" 2 env NVIDIA_SMI="$tmp/one" "$root/scripts/gpu-day.sh" --dry-run --model nope
patterns=("unknown argument '--frob'")
check "bad argument" 2 "$root/scripts/gpu-day.sh" --frob
if [ "$fails" -gt 0 ]; then echo "$fails gpu-day case(s) failed"; exit 1; fi
echo "all gpu-day cases passed"
