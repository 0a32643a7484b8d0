#include <doctest/doctest.h>

#include "report/run_report.hpp"

using namespace hs;

TEST_CASE("throughput per GPU from the iteration's work and its mean time") {
  // 1e6 tokens per iteration on 8 GPUs in 2 s, 1e9 FLOPs per token:
  //   tokens/s/GPU = 1e6 / (2 x 8) = 62,500; TFLOPS/GPU = 62,500 x 1e9 / 1e12 = 62.5;
  //   GPU-hours per 1e12 tokens = 8 x 2 / 1e6 x 1e12 / 3600 = 4,444.44.
  const report::IterationWork w{1e6, 1e9, 8};
  const auto t = report::throughput(w, 2.0);
  CHECK(t.tokens_per_s_per_gpu == doctest::Approx(62500));
  CHECK(t.model_tflops_per_gpu == doctest::Approx(62.5));
  CHECK(t.gpu_hours_per_trillion_tokens == doctest::Approx(16e6 / 3600));
  // Unknown work or no time: zeros, never a division by zero.
  CHECK(report::throughput(report::IterationWork{}, 2.0).tokens_per_s_per_gpu == 0);
  CHECK(report::throughput(w, 0.0).gpu_hours_per_trillion_tokens == 0);
}
