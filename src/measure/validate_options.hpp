// hecate-validate's command line, parsed and checked once here (plain logic, tested on the CPU).
//
//   --suite NAME[,NAME...]   gemm (default: expert-FFN GEMMs, batched GEMMs, HBM copy),
//                            collectives, alltoallv, sparse, materialize, overlap
//   -b/--minbytes S -e/--maxbytes S -f/--stepfactor F    collectives' size sweep (nccl-tests' flags)
//   --ops a,b,...            collectives to run (default: all seven, nccl-tests' names or ours)
//   -n/--iters N -w/--warmup_iters W    timed and warm-up iterations (default 20 and 5)
//   --matrix FILE            alltoallv: the byte matrix (hecate-sim collective --matrix formats)
//   --plan FILE [--scale X]  sparse: a plan from `hecate-sim plan`; chunk sizes times X in (0, 1]
//   --d-model D --d-ffn F --mats 2|3 --experts E --tokens T1,T2,...   GEMM shapes
//   --hbm-bytes B            HBM copy size (gemm), buffer size of the materialize kernels
//   --overlap-bytes S        overlap: the communication's message size (default 256M)
//   --seed N                 data pattern seed (default 1)
//   --out FILE               measured.json to write (rank 0; default measured.json)
//   --self-test              correctness checks only; exit 0 / 1, 77 without a GPU
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collective/nccl_op.hpp"

namespace hs::measure {

enum class Suite { kGemm, kCollectives, kAllToAllV, kSparse, kMaterialize, kOverlap };
const char* to_string(Suite s);

struct ValidateOptions {
  std::vector<Suite> suites{Suite::kGemm};
  std::uint64_t min_bytes = 8, max_bytes = 128ULL << 20, step_factor = 2;
  std::vector<collective::NcclOp> ops{collective::NcclOp::kAllReduce,     collective::NcclOp::kAllGather,
                                      collective::NcclOp::kReduceScatter, collective::NcclOp::kAllToAll,
                                      collective::NcclOp::kBroadcast,     collective::NcclOp::kReduce,
                                      collective::NcclOp::kSendRecv};
  int iters = 20, warmup = 5;
  std::string matrix, plan;
  double scale = 1.0;
  long d_model = 2048, d_ffn = 8192;
  int mats = 2, experts = 8;
  std::vector<long> tokens{16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192};
  std::uint64_t hbm_bytes = 2ULL << 30;
  std::uint64_t overlap_bytes = 256ULL << 20;
  std::uint64_t seed = 1;
  std::string out = "measured.json";
  bool self_test = false;
  bool has(Suite s) const;
};

// Throws std::invalid_argument with a message naming the flag and what it expects.
ValidateOptions parse_validate_options(const std::vector<std::string>& args);

std::string validate_usage();

}  // namespace hs::measure
