// What hecate-validate measured (schema hecate-sim/measured@1, validation/README.md): per suite, a
// section of the file, each optional but at least one present:
//   * expert_ffn / expert_ffn_batched / hbm_copy (suite gemm): the expert-FFN GEMM rows (one expert
//     per call, and E experts in one batched call per weight matrix) and the HBM copy rate;
//   * collectives: per operation and size, nccl-tests' size, the median time over iterations of the
//     slowest rank, algbw and busbw, on `ranks` ranks over `nodes` nodes;
//   * alltoallv: the dispatch and combine of one byte matrix (its file named), median times;
//   * sparse: per layer of a plan file (`hecate-sim plan`), the spAG and spRS median times;
//   * materialize: memory-bound kernels (bytes, time) and GEMMs with unequal tokens per expert;
//   * overlap: a GEMM stream beside communication, each side alone and together.
// Read once here for `validate` and `calibrate`; a missing or mistyped field is an input error
// naming it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/nccl_op.hpp"
#include "cost/gemm_fit.hpp"

namespace hs::calib {

struct GemmRow {
  double tokens, seconds;
};

struct CollectiveRow {
  collective::NcclOp op{};
  double bytes = 0;    // nccl-tests' size
  double seconds = 0;  // median over iterations
  double algbw = 0, busbw = 0;  // bytes per second
};

// Suite alltoallv.
struct AllToAllVRow {
  std::string direction;  // dispatch, combine
  double total_bytes = 0, max_rank_send_bytes = 0, seconds = 0;
};
struct AllToAllVSection {
  std::string matrix;  // the byte matrix file, as given to hecate-validate
  int ranks = 0;
  std::vector<AllToAllVRow> rows;
};

// Suite sparse: one plan's layers.
struct SparseRow {
  int layer = 0;
  double chunk_bytes = 0;  // what was sent per chunk (the plan's chunk bytes x scale)
  double spag_s = 0, sprs_s = 0;
};
struct SparseSection {
  std::string plan, strategy;  // the plan file as given to hecate-validate, and its strategy
  double scale = 1;
  int ranks = 0;
  std::vector<SparseRow> rows;
};

// Suite materialize.
struct MemoryKernelRow {
  std::string kernel;  // pack_shards, unpack_shards, permute_tokens, unpermute_tokens
  double bytes = 0;    // bytes moved: each read once and written once
  double seconds = 0;
};
struct GroupedGemmRow {
  std::string kernel;  // grouped_gemm, per_expert_gemm, padded_batched_gemm
  long d_model = 0, d_ffn = 0;  // one [t x d_model] x [d_model x d_ffn] GEMM per expert
  std::vector<double> tokens_per_expert;
  double seconds = 0;
};

// Suite overlap: slowdown = time together / time alone (medians).
struct OverlapRow {
  std::string comm;  // nccl_all_reduce, copy_engine, copy_kernel
  double comm_bytes = 0;
  double gemm_alone_s = 0, gemm_overlapped_s = 0, comm_alone_s = 0, comm_overlapped_s = 0;
  double gemm_slowdown() const { return gemm_overlapped_s / gemm_alone_s; }
  double comm_slowdown() const { return comm_overlapped_s / comm_alone_s; }
};

struct Measured {
  std::string file;
  std::string device;
  long d_model = 0, d_ffn = 0;
  int mats = 0;
  std::vector<GemmRow> rows;      // one expert, one cuBLAS call per weight matrix
  int batched_experts = 0;        // 0: no batched suite in the file
  std::vector<GemmRow> batched;   // one strided-batched call per matrix over batched_experts experts
  double hbm_Bps = 0;             // device-to-device copy, bytes read + written per second
  int ranks = 0, nodes = 0;       // the collectives' ranks and nodes (0: no collectives section)
  int launch_ranks = 0, launch_nodes = 0;  // the provenance's (0: not given)
  std::vector<CollectiveRow> collectives;
  std::optional<AllToAllVSection> alltoallv;
  std::optional<SparseSection> sparse;
  std::vector<MemoryKernelRow> memory_kernels;  // materialize
  std::vector<GroupedGemmRow> grouped_gemms;    // materialize
  int overlap_ranks = 0;
  std::vector<OverlapRow> overlap;
  bool has_gemm() const { return mats > 0; }
};

Measured read_measured(const std::string& path);

// The upper middle value of v (v[n / 2] once sorted; 0 when empty): the median that validate's and
// calibrate's error summaries report.
double upper_median(std::vector<double> v);

// The expert-GEMM efficiency curve fitted on the compute-bound rows (tokens >= 256, multiples of the
// 128-row tile) of the grouped suite when there is one, every other row; checked on the others.
struct GemmCalibration {
  cost::GemmFit fit;
  int fit_rows = 0, held_rows = 0;
  double held_median_error = 0, held_median_error_default = 0;  // relative efficiency error
  int experts = 1;                                              // the suite it was fitted on
};
// nullopt when fewer than two compute-bound rows exist. `peak` = the GPU's dense peak FLOP/s.
std::optional<GemmCalibration> fit_gemm(const Measured& m, double peak);

}  // namespace hs::calib
