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
  Summary time{};
  double algbw() const;  // bytes per second; 0 when the median is 0 (below the timer's resolution)
  double busbw(int ranks) const;
};

// The `collectives` section (a JSON object).
std::string collectives_section(int ranks, int nodes, const std::vector<CollectiveResult>& rows);

// Suite gemm: one expert's forward GEMMs per token count, the batched suite, the HBM copy (bytes
// read plus written per second), the GPU.
struct GemmTime {
  long m = 0, n = 0, k = 0;
  Summary time{};
};
struct ExpertFfnRow {
  long tokens = 0;
  std::vector<GemmTime> gemms;  // up projection(s), then down
  double forward_s() const;     // sum of the medians
};
std::string expert_ffn_section(long d_model, long d_ffn, int mats, const std::vector<ExpertFfnRow>& rows);
std::string expert_ffn_batched_section(int experts, const std::vector<std::pair<long, double>>& tokens_forward_s);
std::string hbm_copy_section(std::uint64_t bytes, const Summary& time);
std::string device_section(const GpuInfo& g);

// Suite alltoallv: the dispatch and the combine.
struct AllToAllVRow {
  std::string direction;
  double total_bytes = 0, max_rank_send_bytes = 0;
  Summary time{};
};
std::string alltoallv_section(const std::string& matrix, int ranks, const std::vector<AllToAllVRow>& rows);

// Suite sparse: per layer, spAG and spRS.
struct SparseRow {
  int layer = 0;
  std::uint64_t chunk_bytes = 0;
  std::size_t spag_transfers = 0, spag_rounds = 0, sprs_transfers = 0, sprs_rounds = 0;
  Summary spag, sprs;
};
std::string sparse_section(const std::string& plan, const std::string& strategy, double scale, int ranks,
                           const std::vector<SparseRow>& rows);

// Suite materialize: memory-bound kernels (bytes moved, read once and written once) and GEMMs
// (flops > 0, with the tokens of each expert).
struct MaterializeRow {
  std::string kernel{};
  Summary time{};
  std::uint64_t bytes = 0;                 // memory-bound kernels
  int experts = 0;                         // pack / unpack
  std::uint64_t tokens = 0, row_bytes = 0;  // permute / unpermute
  long d_model = 0, d_ffn = 0;             // GEMMs
  std::vector<long> tokens_per_expert{};
  double flops = 0;
};
std::string materialize_section(const std::vector<MaterializeRow>& rows);

// Suite overlap: each side alone and together; slowdown = together / alone (medians).
struct OverlapRow {
  std::string comm;
  std::uint64_t comm_bytes = 0;
  int gemm_calls = 0, comm_calls = 0;
  Summary gemm_alone, gemm_overlapped, comm_alone, comm_overlapped;
  double gemm_slowdown() const;
  double comm_slowdown() const;
};
std::string overlap_section(long m, long n, long k, int ranks, const std::vector<OverlapRow>& rows);

// The whole file: schema, provenance, then the sections (name, JSON value) in order.
std::string measured_document(const Provenance& p, const std::vector<std::pair<std::string, std::string>>& sections);

}  // namespace hs::measure
