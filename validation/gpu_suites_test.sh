#!/usr/bin/env bash
# Every single-rank suite of hecate-validate at small sizes, then its measured.json through
# `hecate-sim validate` and `calibrate`: on a machine with a GPU this exercises every code path a
# cluster run takes except several ranks and the sparse suite (a plan needs two GPUs or more).
# Shapes of gpt-moe-s (d_model 768, d_ffn 1536, 2 matrices). Exit 77 (skipped) without a GPU, as
# hecate-validate reports.
# Usage: gpu_suites_test.sh HECATE_VALIDATE HECATE_SIM
set -u
exe="$1"; sim="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '0 0 65536\n' > "$tmp/matrix.txt"
"$exe" --suite gemm,collectives,alltoallv,materialize,overlap -b 8 -e 1M -f 4 -n 3 -w 1 --tokens 256,512,768,1024 \
  --d-model 768 --d-ffn 1536 --mats 2 --experts 4 --hbm-bytes 64M --overlap-bytes 16M --matrix "$tmp/matrix.txt" \
  --out "$tmp/m.json"
rc=$?
[ "$rc" = 0 ] || exit "$rc"
"$sim" validate "$tmp/m.json" --topology dgx-h100-1node --model gpt-moe-s || exit 1
"$sim" calibrate "$tmp/m.json" --topology dgx-h100-1node -o "$tmp/cal.yaml" || exit 1
