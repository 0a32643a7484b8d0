// The overlap slowdowns (engine/interference.hpp: compute of a kernel class beside communication of
// a traffic kind takes (1 + compute) x as long, communication beside compute (1 + communication) x)
// read from the overlap suite of hecate-validate: a GEMM stream timed alone and beside a
// communication stream. It measures one cell of each: the GEMM class beside the suite's traffic, and
// that traffic beside compute; the other cells keep the topology's values.
//
// Which row stands for a training step's overlap: an NCCL all-reduce (measured with two or more
// ranks) is what runs beside the GEMMs in training; on one GPU the copy kernel is the nearest
// stand-in (it occupies SMs as NCCL's kernels do), and a copy-engine transfer, which takes no SMs, is
// used only when nothing else was measured. Slowdowns below 1 (timer noise) count as none.
// The traffic: the all-reduce's crosses the network when the suite ran on more than one node (the
// file's provenance; unknown there, when its ranks outnumber a node's GPUs); a copy on one GPU stays
// inside it, so its row measures the intra-node (nvlink) cells.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "calib/measured.hpp"
#include "engine/interference.hpp"

namespace hs::calib {

struct OverlapFit {
  std::string from;  // the row used (its `comm`)
  engine::Traffic traffic = engine::Traffic::kIntraNode;
  double compute_slowdown = 0, communication_slowdown = 0;
  // The cells measured: (gemm, traffic) and communication (traffic).
  engine::InterferenceOverride cells() const;
};

// `ranks` and `nodes`: what the suite ran on (nodes 0: unknown); `gpus_per_node`: the topology's.
std::optional<OverlapFit> fit_overlap(std::span<const OverlapRow> rows, int ranks, int nodes, int gpus_per_node);

}  // namespace hs::calib
