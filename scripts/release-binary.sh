#!/usr/bin/env bash
# Builds hecate-sim in release mode if it is not up to date (installing what is missing first) and
# prints its path, relative to the repository root: build-release/src/cli/hecate-sim. For the scripts
# that time or tabulate the simulator (bench-cli.sh, layout-table.sh, paper-eval.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >&2
[ -f build-release/build.ninja ] || meson setup build-release --buildtype=release >/dev/null
ninja -C build-release src/cli/hecate-sim >/dev/null
echo build-release/src/cli/hecate-sim
