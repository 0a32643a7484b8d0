#!/usr/bin/env bash
# A Slurm job array that runs one sweep in N shards, then merges them.
#
#   sbatch --array=0-15 scripts/slurm/sweep-array.sh sweeps/fssdp-policy.yaml results/fssdp
#   # when every task is done (or chain it: sbatch --dependency=afterok:JOBID ...):
#   scripts/slurm/sweep-array.sh --merge sweeps/fssdp-policy.yaml results/fssdp 16
#
# Each task runs the points with index % N == K (K, N from SLURM_ARRAY_TASK_ID / _COUNT) into
# PREFIX.shardK-of-N.{jsonl,csv}; a task that was killed resumes where it stopped when re-queued.
# The merge run adds the shards' rows to PREFIX.{jsonl,csv}, runs whatever is still missing, and
# prints the summary; its files equal a single-machine run's.
#SBATCH --job-name=hecate-sweep
#SBATCH --cpus-per-task=4
#SBATCH --time=02:00:00
#SBATCH --output=hecate-sweep-%A_%a.log
set -euo pipefail
SIM="${HECATE_SIM:-hecate-sim}"
if [ "${1:-}" = "--merge" ]; then
  sweep="$2"; prefix="$3"; n="$4"
  parts=()
  for ((k = 0; k < n; k++)); do parts+=("$prefix.shard$k-of-$n.jsonl"); done
  exec "$SIM" sweep "$sweep" --out "$prefix" --merge "${parts[@]}"
fi
sweep="$1"; prefix="$2"
: "${SLURM_ARRAY_TASK_ID:?run under sbatch --array=0-(N-1)}"
exec "$SIM" sweep "$sweep" --out "$prefix" --jobs "${SLURM_CPUS_PER_TASK:-1}"
