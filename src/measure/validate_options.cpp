#include "measure/validate_options.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <fmt/format.h>

#include "measure/size_sweep.hpp"

namespace hs::measure {

namespace {

constexpr std::pair<Suite, const char*> kSuites[] = {
    {Suite::kGemm, "gemm"},       {Suite::kCollectives, "collectives"}, {Suite::kAllToAllV, "alltoallv"},
    {Suite::kSparse, "sparse"},   {Suite::kMaterialize, "materialize"}, {Suite::kOverlap, "overlap"}};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t p = 0;
  while (true) {
    const std::size_t q = list.find(',', p);
    out.push_back(list.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) return out;
    p = q + 1;
  }
}

long positive(const std::string& s, const std::string& flag) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v <= 0)
    throw std::invalid_argument(fmt::format("{} expects a positive integer, got '{}'", flag, s));
  return v;
}

}  // namespace

const char* to_string(Suite s) {
  for (const auto& [k, name] : kSuites)
    if (k == s) return name;
  return "?";
}

bool ValidateOptions::has(Suite s) const { return std::find(suites.begin(), suites.end(), s) != suites.end(); }

std::string validate_usage() {
  return "usage: hecate-validate [--suite gemm,collectives,alltoallv,sparse,materialize,overlap]\n"
         "         [-b MIN] [-e MAX] [-f FACTOR] [--ops all_reduce,...] [-n ITERS] [-w WARMUP]\n"
         "         [--matrix FILE] [--plan FILE [--scale X]] [--d-model D] [--d-ffn F] [--mats 2|3]\n"
         "         [--experts E] [--tokens T1,T2,...] [--hbm-bytes B] [--overlap-bytes S] [--seed N]\n"
         "         [--out FILE] | --self-test\n"
         "(launch one rank per GPU with mpirun -np N or srun; without a launcher it runs as one rank)\n";
}

ValidateOptions parse_validate_options(const std::vector<std::string>& args) {
  ValidateOptions o;
  bool min_set = false, max_set = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--suite") {
      o.suites.clear();
      for (const auto& name : split(next())) {
        auto it = std::find_if(std::begin(kSuites), std::end(kSuites), [&](const auto& s) { return name == s.second; });
        if (it == std::end(kSuites))
          throw std::invalid_argument(fmt::format(
              "--suite: unknown suite '{}' (expected gemm, collectives, alltoallv, sparse, materialize or overlap)", name));
        if (!o.has(it->first)) o.suites.push_back(it->first);
      }
    } else if (a == "-b" || a == "--minbytes") {
      o.min_bytes = parse_size(next(), a), min_set = true;
    } else if (a == "-e" || a == "--maxbytes") {
      o.max_bytes = parse_size(next(), a), max_set = true;
    } else if (a == "-f" || a == "--stepfactor") {
      o.step_factor = static_cast<std::uint64_t>(positive(next(), a));
    } else if (a == "--ops") {
      o.ops.clear();
      for (const auto& name : split(next())) {
        const auto op = collective::parse_nccl_op(name);
        if (!op)
          throw std::invalid_argument(fmt::format("--ops: unknown collective '{}' (expected all_reduce, all_gather, "
                                                  "reduce_scatter, alltoall, broadcast, reduce or sendrecv)", name));
        if (std::find(o.ops.begin(), o.ops.end(), *op) == o.ops.end()) o.ops.push_back(*op);
      }
    } else if (a == "-n" || a == "--iters") {
      o.iters = static_cast<int>(positive(next(), a));
    } else if (a == "-w" || a == "--warmup_iters") {
      const std::string& v = next();
      o.warmup = v == "0" ? 0 : static_cast<int>(positive(v, a));
    } else if (a == "--matrix") {
      o.matrix = next();
    } else if (a == "--plan") {
      o.plan = next();
    } else if (a == "--scale") {
      const std::string& v = next();
      char* end = nullptr;
      o.scale = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.scale > 0 && o.scale <= 1))
        throw std::invalid_argument(fmt::format("--scale expects a number in (0, 1], got '{}'", v));
    } else if (a == "--d-model") {
      o.d_model = positive(next(), a);
    } else if (a == "--d-ffn") {
      o.d_ffn = positive(next(), a);
    } else if (a == "--mats") {
      o.mats = static_cast<int>(positive(next(), a));
      if (o.mats != 2 && o.mats != 3) throw std::invalid_argument("--mats expects 2 (GELU) or 3 (SwiGLU)");
    } else if (a == "--experts") {
      o.experts = static_cast<int>(positive(next(), a));
    } else if (a == "--tokens") {
      o.tokens.clear();
      for (const auto& t : split(next())) o.tokens.push_back(positive(t, a));
    } else if (a == "--reps") {  // the single-GPU suite's older spelling of -n
      o.iters = static_cast<int>(positive(next(), a));
    } else if (a == "--hbm-bytes") {
      o.hbm_bytes = parse_size(next(), a);
    } else if (a == "--overlap-bytes") {
      o.overlap_bytes = parse_size(next(), a);
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(positive(next(), a));
    } else if (a == "--out") {
      o.out = next();
    } else if (a == "--self-test") {
      o.self_test = true;
    } else {
      throw std::invalid_argument(fmt::format("unknown argument '{}'", a));
    }
  }
  if ((min_set || max_set) && o.min_bytes > o.max_bytes)
    throw std::invalid_argument(fmt::format("-b {} is larger than -e {}", o.min_bytes, o.max_bytes));
  if (o.step_factor < 2) throw std::invalid_argument("-f expects a factor of at least 2");
  if (o.has(Suite::kAllToAllV) && o.matrix.empty()) throw std::invalid_argument("--suite alltoallv needs --matrix FILE");
  if (o.has(Suite::kSparse) && o.plan.empty()) throw std::invalid_argument("--suite sparse needs --plan FILE");
  return o;
}

}  // namespace hs::measure
