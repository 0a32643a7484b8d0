#include "calib/nccl_tests_ranks.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>

#include "util/diagnostics.hpp"

namespace hs::calib {

double nccl_type_bytes(const std::string& type) {
  // nccl-tests' type names (src/common.cu test_typenames), with the short forms of older versions.
  static const std::map<std::string, double> kBytes = {
      {"int8", 1},    {"char", 1},    {"uint8", 1},   {"f8e4m3", 1}, {"f8e5m2", 1},  {"fp8_e4m3", 1}, {"fp8_e5m2", 1},
      {"half", 2},    {"float16", 2}, {"bfloat16", 2}, {"bf16", 2},  {"fp16", 2},    {"int32", 4},    {"int", 4},
      {"uint32", 4},  {"float", 4},   {"float32", 4}, {"int64", 8},  {"uint64", 8},  {"double", 8},   {"float64", 8}};
  auto it = kBytes.find(type);
  return it == kBytes.end() ? 0 : it->second;
}

int ranks_from_counts(const NcclTestsLog& log, collective::NcclOp op) {
  using collective::NcclOp;
  const bool spans_ranks = op == NcclOp::kAllGather || op == NcclOp::kReduceScatter || op == NcclOp::kAllToAll;
  int implied = 0, implied_line = 0;
  for (const auto& r : log.rows) {
    const double elt = nccl_type_bytes(r.type);
    if (elt == 0 || r.count <= 0 || r.bytes <= 0) continue;
    const double k = r.bytes / (r.count * elt);
    if (!spans_ranks) {
      if (std::abs(k - 1) > 1e-9)
        throw InputError({log.file, r.line, 0}, "count",
                         fmt::format("{} prints size = count x {} B ({}); this row's size is {} x that: is the log of another "
                                     "op (all_gather, reduce_scatter, alltoall print size = count x element x ranks)?",
                                     collective::to_string(op), elt, r.type, k));
      continue;
    }
    if (std::abs(k - std::round(k)) > 1e-9 || std::round(k) < 1)
      throw InputError({log.file, r.line, 0}, "count",
                       fmt::format("{} prints size = count x {} B ({}) x ranks (nccl-tests src/{}.cu); {} / ({} x {}) = {} is "
                                   "no rank count", collective::to_string(op), elt, r.type,
                                   op == NcclOp::kAllToAll ? "alltoall" : collective::to_string(op), r.bytes, r.count, elt, k));
    if (implied == 0) implied = static_cast<int>(std::round(k)), implied_line = r.line;
    else if (static_cast<int>(std::round(k)) != implied)
      throw InputError({log.file, r.line, 0}, "count",
                       fmt::format("size / (count x element) gives {} ranks here, {} at line {}", std::round(k), implied,
                                   implied_line));
  }
  return implied;
}

void settle_ranks(NcclTestsLog& log, collective::NcclOp op, int given, const std::string& given_what, const std::string& how) {
  const int implied = ranks_from_counts(log, op);
  if (log.ranks > 0 && given > 0 && log.ranks != given)
    throw InputError({given_what, 0, 0}, fmt::format("{}", given),
                     fmt::format("{} lists {} ranks ('#  Rank' lines); the two must agree", log.file, log.ranks));
  const int ranks = given > 0 ? given : log.ranks;
  if (ranks == 0)
    throw InputError({log.file, 0, 0}, "Rank",
                     fmt::format("the log names no ranks (no '#  Rank R ... on HOST device D' lines){}: give the number of "
                                 "GPUs it ran on with {}",
                                 implied > 0 ? fmt::format("; its rows' size / count say {}", implied) : std::string(), how));
  if (implied > 0 && implied != ranks) {
    int line = 0;
    for (const auto& r : log.rows)
      if (r.count > 0 && r.bytes > 0 && nccl_type_bytes(r.type) > 0) {
        line = r.line;
        break;
      }
    throw InputError({log.file, line, 0}, "count",
                     fmt::format("{} prints size = count x element x ranks: the rows say {} ranks, {} {}", collective::to_string(op),
                                 implied, given > 0 ? given_what : std::string("the '#  Rank' lines"), ranks));
  }
  const int per = log.threads * log.gpus_per_thread;
  if (per > 1 && ranks % per != 0)
    throw InputError({log.file, 0, 0}, "nGpus",
                     fmt::format("{} ranks is no multiple of the log's nThread x nGpus = {} (ranks = processes x nThread x "
                                 "nGpus)", ranks, per));
  log.ranks = ranks;
  if (!log.ranks_listed) log.nodes = 0;
}

}  // namespace hs::calib
