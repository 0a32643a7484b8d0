#include <doctest/doctest.h>

#include <string>

#include "support/make_named.hpp"
#include "report/run_report.hpp"
#include "strategy/policy/fssdp/fssdp.hpp"
#include "support/test_platforms.hpp"
#include "workload/model_spec.hpp"

using namespace hs;

namespace {
constexpr double MiB = 1024.0 * 1024, GiB = 1024 * MiB;
}  // namespace

TEST_CASE("the verdict names the largest term and whether re-materialization fits") {
  strategy::RunSummary s;
  s.name = "fssdp";
  s.peak_memory.params = 20 * GiB;
  s.peak_memory.copy_params = 60 * GiB;
  s.peak_memory.activations = 13.12 * GiB;
  s.fits_memory = false;
  cost::MemoryBreakdown rm = s.peak_memory;
  rm.copy_params = 28.08 * GiB;
  s.peak_memory_rematerialized = rm;
  CHECK(report::memory_verdict(s, 80 * GiB) ==
        "fssdp: does not fit in 80 GiB (peak 93.12 GiB, largest term: copy params); fits with rematerialize=on "
        "(peak 61.20 GiB)");
  s.peak_memory_rematerialized->copy_params = 70 * GiB;
  CHECK(report::memory_verdict(s, 80 * GiB) ==
        "fssdp: does not fit in 80 GiB (peak 93.12 GiB, largest term: copy params); does not fit with "
        "rematerialize=on either (peak 103.12 GiB, largest term: copy params)");
  s.peak_memory_rematerialized.reset();  // any other strategy: no second evaluation
  CHECK(report::memory_verdict(s, 80 * GiB) == "fssdp: does not fit in 80 GiB (peak 93.12 GiB, largest term: copy params)");
  s.fits_memory = true;
  CHECK(report::memory_verdict(s, 80 * GiB).empty());
}

TEST_CASE("a configuration that fits only with re-materialization") {
  // 4 MoE layers of the tiny model's experts (2 MiB of bf16 parameters, 2 MiB of gradient buffer),
  // 8 GPUs, overlap degree 8 with memory for every copy (memory_budget): 7 copies per GPU and
  // layer. Without re-materialization (one queue) the peak is layer 3's backward: 28 copies + 7
  // gradient buffers = 35 x 2 MiB = 70 MiB. With it: layer 3 in use + layer 2 being gathered + 7
  // gradient buffers = 21 x 2 MiB = 42 MiB. Every other term is the same plan's: 28 MiB apart.
  auto m = test::small_moe_model("tiny4", 8, 2, 1024, 2, 4);
  auto t = test::node8();
  cost::ComputeCost cc(t.gpu_model(), m);
  strategy::Context ctx{t, m, cc, 1};
  auto fs = hs::test::make_named("fssdp", ctx, {{"overlap_degree", "8"}, {"heterogeneous", "false"}, {"memory_budget", "1TiB"}});
  const auto r = fs->simulate(test::uniform_loads(4, 8, 8, 4096));
  REQUIRE(r.memory_rematerialized);
  CHECK(r.memory.copy_params + r.memory.copy_grads == 70 * MiB);
  CHECK(r.memory_rematerialized->copy_params + r.memory_rematerialized->copy_grads == 42 * MiB);
  CHECK(r.memory.total() - r.memory_rematerialized->total() == 28 * MiB);
  // A GPU between the two peaks: the run does not fit, re-materialization would.
  strategy::RunSummary s;
  s.name = "fssdp:overlap_degree=8";
  s.peak_memory = r.memory;
  s.peak_memory_rematerialized = r.memory_rematerialized;
  const double capacity = r.memory_rematerialized->total() + 14 * MiB;
  s.fits_memory = s.peak_memory.total() <= capacity;
  CHECK_FALSE(s.fits_memory);
  const std::string v = report::memory_verdict(s, capacity);
  CHECK(v.find("fssdp:overlap_degree=8: does not fit in ") == 0);
  CHECK(v.find("; fits with rematerialize=on (peak ") != std::string::npos);
}
