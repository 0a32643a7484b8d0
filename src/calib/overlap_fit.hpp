// The overlap slowdowns (engine/simulation.hpp, Interference: compute beside communication takes
// (1 + compute) x as long, communication beside compute (1 + communication) x) read from the overlap
// suite of hecate-validate: a GEMM stream timed alone and beside a communication stream.
//
// Which row stands for a training step's overlap: an NCCL all-reduce (measured with two or more
// ranks) is what runs beside the GEMMs in training; on one GPU the copy kernel is the nearest
// stand-in (it occupies SMs as NCCL's kernels do), and a copy-engine transfer, which takes no SMs, is
// used only when nothing else was measured. Slowdowns below 1 (timer noise) count as none.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "calib/measured.hpp"

namespace hs::calib {

struct OverlapFit {
  std::string from;  // the row used (its `comm`)
  double compute_slowdown = 0, communication_slowdown = 0;
};

std::optional<OverlapFit> fit_overlap(std::span<const OverlapRow> rows);

}  // namespace hs::calib
