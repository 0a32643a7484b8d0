#!/usr/bin/env bash
# One command for the day GPUs are at hand: build the validation backend, run every suite on the
# GPUs found (one GPU, one node, or a Slurm allocation), keep the results with their provenance,
# calibrate the model on them and print the model's error before and after calibration.
#
# Usage: scripts/gpu-day.sh [--topology T] [--model M] [--out DIR] [--quick] [--dry-run]
#   --topology T  the topology preset or file the GPUs are (default: dgx-h100-1node for one node of
#                 8, dgx-h100-4node for 4 nodes, ...: name yours; calibration is made for it)
#   --model M     the model whose shapes the GEMM, materialize and overlap suites measure
#                 (default gpt-moe-s; mixtral-8x7b for large experts)
#   --out DIR     results folder (default validation/results/<gpu>-<N>gpu-<date>/)
#   --quick       smaller sweeps (a first check: about 2 minutes on one 8-GPU node)
#   --dry-run     print the plan (GPUs found, launcher, every command) and run nothing
#
# Budget: under 10 minutes on one 8-GPU node or one GPU (build excluded: the first build of the
# CUDA backend takes a few minutes more): collectives 8 B .. 1 GiB by 4 (14 sizes x 7 operations),
# one skewed all-to-all-v and one FSSDP sparse-collective plan of the model, GEMMs at 8 token counts,
# 5 warm-up and 20 timed iterations (--quick: up to 64 MiB, 3 + 8 iterations).
#
# Exit: 0 done; 2 no GPU found or bad arguments; otherwise the failing step's exit status.
# What the results hold: validation/README.md (provenance: GPU, driver, CUDA / NCCL versions,
# NCCL_* variables, host as a hash, command line); this script adds the commit and the date.
set -euo pipefail
cd "$(dirname "$0")/.."
topology="" model="gpt-moe-s" out="" quick=0 dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --topology) topology="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu-day.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
modelfile="models/$model.yaml"
[ -f "$model" ] && modelfile="$model"
if [ ! -f "$modelfile" ]; then echo "gpu-day.sh: --model: no preset or file '$model' (models/*.yaml)" >&2; exit 2; fi

# GPUs: nvidia-smi (NVIDIA_SMI overrides the command, for tests); in a Slurm allocation, the
# allocation's nodes and GPUs per node.
smi="${NVIDIA_SMI:-nvidia-smi}"
gpus_here=0 gpu_name=""
if command -v "$smi" >/dev/null 2>&1; then
  list=$("$smi" --query-gpu=name --format=csv,noheader 2>/dev/null || true)
  gpus_here=$(printf '%s\n' "$list" | grep -c . || true)
  gpu_name=$(printf '%s\n' "$list" | head -1)
fi
if [ "$gpus_here" -lt 1 ]; then
  echo "gpu-day.sh: no NVIDIA GPU found ($smi lists none or is not installed): run it on a GPU node" \
       "(or inside a Slurm allocation: salloc -N 1 --gpus-per-node=8, then scripts/gpu-day.sh)" >&2
  exit 2
fi
nodes="${SLURM_JOB_NUM_NODES:-1}"
gpus=$((gpus_here * nodes))
if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then
  launch=(srun -N "$nodes" --ntasks-per-node="$gpus_here" --gpus-per-task=1 --mpi=pmix)
elif [ "$gpus" -gt 1 ] && command -v mpirun >/dev/null 2>&1; then
  launch=(mpirun -np "$gpus" --bind-to numa --oversubscribe)
elif [ "$gpus" -gt 1 ]; then
  echo "gpu-day.sh: $gpus GPUs but neither srun (in an allocation) nor mpirun: the multi-GPU suites need one" \
       "(apt-get install openmpi-bin)" >&2
  exit 2
else
  launch=()
fi
if [ -z "$topology" ]; then
  case "$nodes" in 1) topology=dgx-h100-1node ;; 4) topology=dgx-h100-4node ;; 8) topology=dgx-h100-8node ;;
    32) topology=dgx-h100-32node ;; *) echo "gpu-day.sh: name the topology of these $nodes nodes (--topology)" >&2; exit 2 ;;
  esac
  echo "gpu-day.sh: --topology not given: $topology (name yours: calibration is made for it)" >&2
fi
slug=$(printf '%s' "$gpu_name" | tr 'A-Z' 'a-z' | sed -E 's/nvidia //; s/[^a-z0-9]+/-/g; s/^-|-$//g')
[ -n "$out" ] || out="validation/results/${slug}-${gpus}gpu-$(date -u +%Y%m%d)"
d_model=$(awk '/^d_model:/ { print $2 }' "$modelfile")
d_ffn=$(awk '/^d_ffn:/ { print $2 }' "$modelfile")
mats=2; grep -qE '^expert_mlp: *swiglu' "$modelfile" && mats=3
if [ "$quick" = 1 ]; then sizes=(-b 8 -e 64M -f 4); iters=(-n 8 -w 3); else sizes=(-b 8 -e 1G -f 4); iters=(-n 20 -w 5); fi
build=build-gpu
exe="$build/validation/hecate-validate"
sim="$build/src/cli/hecate-sim"

steps=()
steps+=("scripts/install-deps.sh")
steps+=("[ -f $build/build.ninja ] || meson setup $build --buildtype=release -Dvalidation=enabled -Dmpi=auto")
steps+=("ninja -C $build")
steps+=("mkdir -p $out/inputs")
steps+=("$exe --self-test")
steps+=("${launch[*]} $exe --suite gemm,materialize,overlap ${iters[*]} --d-model $d_model --d-ffn $d_ffn --mats $mats --experts 8 --tokens 128,256,512,1024,2048,4096,8192,16384 --out $out/gpu.json")
if [ "$gpus" -gt 1 ]; then
  steps+=("${launch[*]} $exe --suite collectives ${sizes[*]} ${iters[*]} --out $out/collectives.json")
  # A skewed dispatch all-to-all-v (every GPU sends 8x more to GPU 0) and an FSSDP plan of a bundled
  # collapsed trace over the topology's GPUs (the sparse suite needs as many ranks as the plan has GPUs).
  steps+=("$sim plan $topology traces/gpt-moe-s-collapsed.json.gz --strategy fssdp --iteration 3 -o $out/inputs/plan.json")
  steps+=("awk -v n=$gpus 'BEGIN { for (s = 0; s < n; ++s) for (d = 0; d < n; ++d) if (s != d) print s, d, (d == 0 ? 8 : 1) * 4194304 }' > $out/inputs/dispatch.txt")
  steps+=("${launch[*]} $exe --suite alltoallv,sparse ${iters[*]} --matrix $out/inputs/dispatch.txt --plan $out/inputs/plan.json --out $out/sparse.json")
fi
steps+=("printf 'commit %s\\ndate %s\\ntopology %s\\nmodel %s\\ngpus %s x %s\\n' \"\$(git rev-parse HEAD 2>/dev/null || echo unknown)\" \"\$(date -u +%Y-%m-%dT%H:%M:%SZ)\" $topology $model $gpus '$gpu_name' > $out/PROVENANCE.txt")
steps+=("$sim calibrate $out/*.json --topology $topology -o $out/calibration.yaml")
steps+=("echo '== the model before calibration'; $sim validate $out/*.json --topology $topology --model $model")
steps+=("echo '== after'; $sim validate $out/*.json --topology $topology --model $model --calibration $out/calibration.yaml")

echo "gpu-day.sh: $gpus GPU(s) ($gpu_name; $nodes node(s)), topology $topology, model $model ($d_model x $d_ffn, $mats matrices), results in $out"
for s in "${steps[@]}"; do
  if [ "$dry" = 1 ]; then echo "  $s"; continue; fi
  echo "+ $s" >&2
  bash -c "$s"
done
