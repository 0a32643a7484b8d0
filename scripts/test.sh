#!/usr/bin/env bash
# Installs what is missing, builds hecate-sim (debug-optimized, warnings are errors) and runs the
# whole test suite with meson test. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build-test/build.ninja ]; then
  meson setup build-test --buildtype=debugoptimized -Dwerror=true >/dev/null
fi
ninja -C build-test
meson test -C build-test --print-errorlogs --num-processes 2 "$@"
