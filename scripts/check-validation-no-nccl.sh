#!/usr/bin/env bash
# Builds hecate-validate without NCCL (-Dvalidation_nccl=disabled: the single-GPU suites gemm,
# materialize and overlap, what a machine with the CUDA toolkit alone gets) in build-nonccl and runs
# its command-line test. The default build (scripts/test.sh) has NCCL where it is installed, so this
# keeps the other variant compiling. Skipped (exit 0, with a note) where there is no nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if ! command -v nvcc > /dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "check-validation-no-nccl: no nvcc here; nothing to build"
  exit 0
fi
export PATH="$PATH:/usr/local/cuda/bin"
if [ ! -f build-nonccl/build.ninja ]; then
  meson setup build-nonccl --buildtype=debugoptimized -Dvalidation=enabled -Dvalidation_nccl=disabled > /dev/null
fi
ninja -C build-nonccl validation/hecate-validate
meson test -C build-nonccl --no-rebuild validate-cli
