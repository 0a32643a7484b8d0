#!/usr/bin/env bash
# Builds hecate-sim with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) and runs the test
# suite there (not the Slurm suite: its daemons are not our code, and it is slow). Any sanitizer
# report fails the test that triggered it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# -O1 with line tables only (-g1): what the sanitizers' documentation recommends, and about half the
# compile time of -O2 -g on this code base (the build dominates the step's time); stack traces keep
# file:line.
opts=(-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=plain -Doptimization=1
      -Dcpp_args="-g1 -fno-omit-frame-pointer" -Dvalidation=disabled)
if [ ! -f build-asan/build.ninja ]; then
  meson setup build-asan "${opts[@]}" >/dev/null
else
  meson configure build-asan "${opts[@]}" >/dev/null
fi
ninja -C build-asan
# Open MPI allocates once per process and never frees (MPI_Init): those leaks are not ours.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# Sanitized code runs several times slower: the tests' time limits are scaled (the cost unit test
# passed meson's default 30 s limit under ASan at -O1 with the cores shared).
meson test -C build-asan --print-errorlogs --num-processes 2 --no-suite slurm --timeout-multiplier 5 "$@"
