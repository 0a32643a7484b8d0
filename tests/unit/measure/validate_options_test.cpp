#include <doctest/doctest.h>

#include <stdexcept>

#include "measure/validate_options.hpp"

using namespace hs::measure;
using hs::collective::NcclOp;

namespace {
std::string error_of(const std::vector<std::string>& args) {
  try {
    parse_validate_options(args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("defaults: the single-GPU GEMM suite, nccl-tests' iteration counts") {
  const auto o = parse_validate_options({});
  CHECK(o.suites == std::vector<Suite>{Suite::kGemm});
  CHECK(o.ops.size() == 7);
  CHECK(o.iters == 20);
  CHECK(o.warmup == 5);
  CHECK(o.out == "measured.json");
}

TEST_CASE("suites, the sweep and the collectives as nccl-tests spells them") {
  const auto o = parse_validate_options({"--suite", "collectives,overlap,collectives", "-b", "8", "-e", "8G", "-f", "4", "--ops",
                                         "all_reduce,alltoall,sendrecv", "-n", "50", "-w", "0", "--out", "x.json"});
  CHECK(o.suites == std::vector<Suite>{Suite::kCollectives, Suite::kOverlap});  // repeated once
  CHECK(o.min_bytes == 8);
  CHECK(o.max_bytes == 8ULL << 30);
  CHECK(o.step_factor == 4);
  CHECK(o.ops == std::vector<NcclOp>{NcclOp::kAllReduce, NcclOp::kAllToAll, NcclOp::kSendRecv});
  CHECK(o.iters == 50);
  CHECK(o.warmup == 0);
  CHECK(o.out == "x.json");
  CHECK(o.has(Suite::kOverlap));
  CHECK_FALSE(o.has(Suite::kGemm));
}

TEST_CASE("bad command lines say which flag and what it expects") {
  CHECK(error_of({"--suite", "nope"}).find("unknown suite 'nope'") != std::string::npos);
  CHECK(error_of({"--ops", "allreduce2"}).find("unknown collective 'allreduce2'") != std::string::npos);
  CHECK(error_of({"-b", "1G", "-e", "1M"}).find("-b 1073741824 is larger than -e 1048576") != std::string::npos);
  CHECK(error_of({"-f", "1"}).find("at least 2") != std::string::npos);
  CHECK(error_of({"-n"}).find("-n needs a value") != std::string::npos);
  CHECK(error_of({"-n", "0"}).find("-n expects a positive integer") != std::string::npos);
  CHECK(error_of({"--mats", "4"}).find("--mats expects 2") != std::string::npos);
  CHECK(error_of({"--scale", "1.5"}).find("--scale expects a number in (0, 1]") != std::string::npos);
  CHECK(error_of({"--suite", "alltoallv"}).find("needs --matrix") != std::string::npos);
  CHECK(error_of({"--suite", "sparse"}).find("needs --plan") != std::string::npos);
  CHECK(error_of({"--frobnicate"}).find("unknown argument '--frobnicate'") != std::string::npos);
}
