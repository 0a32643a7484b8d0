// The measured.json hecate-validate writes (schema hecate-sim/measured@1, read by
// src/calib/measured.hpp): the document around the suites' sections, the timing fields every row
// carries, and the collectives section, whose bandwidths follow nccl-tests (collective/nccl_op.hpp):
// algbw = size / median time, busbw = algbw x bus_factor(op, ranks).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "collective/nccl_op.hpp"
#include "measure/op_buffers.hpp"
#include "measure/provenance.hpp"
#include "measure/stats.hpp"

namespace hs::measure {

// "\"median_s\": M, \"min_s\": ..., \"p25_s\", \"p75_s\", \"max_s\", \"iters\"" (no braces).
std::string summary_fields(const Summary& s);

struct CollectiveResult {
  collective::NcclOp op{};
  OpBuffers buffers;
  Summary time;
  double algbw() const;  // bytes per second; 0 when the median is 0 (below the timer's resolution)
  double busbw(int ranks) const;
};

// The `collectives` section (a JSON object).
std::string collectives_section(int ranks, int nodes, const std::vector<CollectiveResult>& rows);

// The whole file: schema, provenance, then the sections (name, JSON value) in order.
std::string measured_document(const Provenance& p, const std::vector<std::pair<std::string, std::string>>& sections);

}  // namespace hs::measure
