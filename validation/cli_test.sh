#!/usr/bin/env bash
# hecate-validate's command line, checked without a GPU: bad arguments exit 2 naming the flag, before
# any GPU or MPI is touched; a valid command line exits 77 (skipped) on a machine without a GPU.
# Usage: cli_test.sh HECATE_VALIDATE nccl|no-nccl (how it was built)
set -u
exe="$1"; nccl="${2:-nccl}"
fails=0
expect() {  # expect CODE TEXT ARGS...: exit code CODE and TEXT in stderr
  local code="$1" text="$2"; shift 2
  local err; err=$("$exe" "$@" 2>&1 >/dev/null); local rc=$?
  if [ "$rc" != "$code" ] || ! grep -qF -- "$text" <<< "$err"; then
    echo "FAIL: hecate-validate $* -> exit $rc (expected $code), stderr: $err"; fails=$((fails+1))
  else
    echo "ok: hecate-validate $* -> $rc"
  fi
}
expect 2 "unknown suite 'nope'" --suite nope
expect 2 "-e expects a size in bytes" --suite collectives -e 8Q
expect 2 "-b 1073741824 is larger than -e 1048576" --suite collectives -b 1G -e 1M
expect 2 "unknown collective 'allreduce'" --ops allreduce
expect 2 "--suite sparse needs --plan FILE" --suite sparse
expect 2 "usage: hecate-validate" --frobnicate
# --help prints the usage on stdout and exits 0.
help=$("$exe" --help 2>/dev/null); rc=$?
if [ "$rc" = 0 ] && grep -qF "usage: hecate-validate" <<< "$help"; then echo "ok: hecate-validate --help -> 0"
else echo "FAIL: hecate-validate --help -> exit $rc, stdout: $help"; fails=$((fails+1)); fi
if [ "$nccl" = no-nccl ]; then
  expect 2 "built without NCCL: the collectives, alltoallv and sparse suites need it" --suite gemm,collectives
fi
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  if [ "$nccl" = nccl ]; then expect 77 "no CUDA device; skipped" --suite collectives -b 8 -e 1M; fi
  expect 77 "no CUDA device; skipped" --suite gemm,materialize
fi
[ "$fails" = 0 ]
