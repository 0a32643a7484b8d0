#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS (default 60) from the
# committed seed corpora. A crash, an escaped non-input exception, a sanitizer report or a leak stops
# that target: the reproducer is written to build-fuzz/findings/ and the script exits 1. An input
# taking over 30 s is a finding (a hang): valid topologies of a few hundred GPUs take seconds under
# the sanitizers, and more where other jobs share the cores.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]        (e.g. scripts/fuzz.sh 600 fuzz_trace)
# HECATE_FUZZ_SEED=N fixes libFuzzer's random seed (CI does); unset, every run mutates differently.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"; shift || true
scripts/install-deps.sh --fuzz
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang-14 CXX=clang++-14 meson setup build-fuzz -Dfuzz=true -Dvalidation=disabled -Dmpi=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false --buildtype=debugoptimized \
    -Dcpp_args=-fsanitize=fuzzer-no-link >/dev/null
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_topology fuzz_model fuzz_trace fuzz_trace_gz fuzz_units fuzz_sweep
                                     fuzz_calibration fuzz_nccl_tests fuzz_measured fuzz_import fuzz_plan fuzz_matrix)
ninja -C build-fuzz "${targets[@]/#/tests/fuzz/}" > build-fuzz/ninja.log || { cat build-fuzz/ninja.log; exit 1; }
mkdir -p build-fuzz/findings
status=0
for t in "${targets[@]}"; do
  work="build-fuzz/corpus/$t"
  mkdir -p "$work"
  seeds="tests/fuzz/corpus/$t"
  # Corpus growth goes to the build dir; the committed seeds stay small.
  out=$(UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
        build-fuzz/tests/fuzz/"$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix=build-fuzz/findings/"$t"- -print_final_stats=1 ${HECATE_FUZZ_SEED:+-seed="$HECATE_FUZZ_SEED"} \
        "$work" "$seeds" 2>&1) || status=1
  runs=$(echo "$out" | awk '/stat::number_of_executed_units/ {print $2}')
  crash=$(echo "$out" | grep -cE "ERROR: libFuzzer|SUMMARY: (Address|UndefinedBehavior)Sanitizer|finding:" || true)
  echo "$t: $runs executions in ${secs}s, $crash finding(s)"
  [ "$crash" = 0 ] || echo "$out" | grep -E "finding:|ERROR:|SUMMARY:|artifact" | head -5
done
exit $status
