#!/usr/bin/env bash
# Re-writes the golden end-to-end outputs after an intended change, printing the diff of each.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-test/build.ninja ] || meson setup build-test --buildtype=debugoptimized -Dwerror=true >/dev/null
ninja -C build-test src/cli/hecate-sim >/dev/null
tests/golden/golden_test.sh build-test/src/cli/hecate-sim "$PWD" --bless
