#!/usr/bin/env bash
# Installs what is missing, builds hecate-sim in release mode and compares every strategy on a
# bundled topology and trace. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build-release/build.ninja ]; then
  meson setup build-release --buildtype=release >/dev/null
fi
ninja -C build-release src/cli/hecate-sim >/dev/null
echo "== hecate-sim topo show dgx-h100-4node" >&2
build-release/src/cli/hecate-sim topo show topologies/dgx-h100-4node.yaml
echo >&2
echo "== hecate-sim run topologies/dgx-h100-4node.yaml traces/gpt-moe-s-aux_loss.json.gz  (training with a balance loss)" >&2
build-release/src/cli/hecate-sim run topologies/dgx-h100-4node.yaml traces/gpt-moe-s-aux_loss.json.gz
echo >&2
echo "== hecate-sim run topologies/dgx-h100-4node.yaml traces/gpt-moe-s-collapsed.json.gz  (router near collapse)" >&2
build-release/src/cli/hecate-sim run topologies/dgx-h100-4node.yaml traces/gpt-moe-s-collapsed.json.gz
echo >&2
# FSSDP winning with its copies: on V100 (standard attention) the attention forward is long enough to
# hide 6-10 experts' spAG behind it (overlap_degree=hidden), so hot experts get copies and the
# straggler and the 100 Gb/s all-to-all shrink (1.10x EP, ahead of the balanced oracle).
echo "== hecate-sim run topologies/aws-p3dn-v100-2node.yaml traces/gpt-moe-s-aux_loss.json.gz  (V100, 100 Gb/s: copies hide behind a long attention)" >&2
build-release/src/cli/hecate-sim run topologies/aws-p3dn-v100-2node.yaml traces/gpt-moe-s-aux_loss.json.gz
