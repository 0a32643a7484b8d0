// The suites of hecate-validate (measure/validate_options.hpp names them). Each runs on every rank,
// checks its results against a CPU reference before timing anything (a wrong result throws Fatal:
// nothing is written), prints a table on rank 0 and adds its measured.json section to the report.
#pragma once

#include "context.hpp"
#include "measure/validate_options.hpp"
#include "report.hpp"

namespace hs::validate {

// Expert-FFN GEMMs (one expert per call, and --experts experts in one strided-batched call per
// weight matrix) over the token grid, and the HBM device-to-device copy rate.
void run_gemm(Context& c, const measure::ValidateOptions& o, Report& r);
// all_reduce, all_gather, reduce_scatter, alltoall (grouped send/recv), broadcast, reduce, sendrecv
// over the -b/-e/-f sweep: time, algbw, busbw (nccl-tests' conventions).
void run_collectives(Context& c, const measure::ValidateOptions& o, Report& r);
// All-to-all-v of a byte matrix (dispatch) and its transpose (combine), grouped send/recv.
void run_alltoallv(Context& c, const measure::ValidateOptions& o, Report& r);
// A plan's SparseAllGather / SparseReduceScatter per layer over NCCL (plan_executor's logic).
void run_sparse(Context& c, const measure::ValidateOptions& o, Report& r);
// Pack / unpack of expert shards, token permute / unpermute by expert, grouped GEMM with unequal
// tokens per expert.
void run_materialize(Context& c, const measure::ValidateOptions& o, Report& r);
// A GEMM stream beside communication: each one's slowdown.
void run_overlap(Context& c, const measure::ValidateOptions& o, Report& r);

// GEMM against a CPU reference, a copy byte for byte, the kernels of the materialize suite and, with
// NCCL, a one-rank all-reduce; true when everything matches.
bool self_test(Context& c);

}  // namespace hs::validate
