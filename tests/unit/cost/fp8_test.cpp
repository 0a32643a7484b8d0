// FP8 mixed precision in the compute cost (cost/compute_cost.hpp): the GEMMs at the FP8 peak, the
// quantization kernels' HBM bytes, what stays bf16, and the GPUs that have no FP8.
#include <doctest/doctest.h>

#include "cost/compute_cost.hpp"
#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"

using namespace hs;

namespace {

// d_model 4096, d_ffn 8192, SwiGLU: compute-bound from a few hundred tokens per expert.
workload::ModelSpec model(const std::string& compute) {
  return workload::load_model(R"(schema: hecate-sim/model@1
name: fp8
layers: 2
d_model: 4096
d_ffn: 8192
expert_mlp: swiglu
experts: 8
top_k: 2
heads: 32
seq_len: 1024
micro_batch: 2
vocab: 32000
)",
                              "fp8.yaml", {"precision.compute=" + compute});
}

topology::GpuModel hopper() {
  topology::GpuModel g;
  g.model = "H100";
  g.peak_flops = FlopRate(989e12);
  g.peak_fp8 = FlopRate(1979e12);
  g.hbm_bandwidth = Bandwidth(3.35e12);
  g.memory = Bytes(80e9);
  g.compute_capability = 9.0;
  return g;
}

}  // namespace

TEST_CASE("FP8: a compute-bound GEMM takes the bf16 time / 2 at equal efficiency (plus its quantization)") {
  // Equal efficiency and an FP8 peak of exactly 2 x bf16; the fixed launch times
  // (ComputeCost::expert_fixed) are not halved and are taken out of both.
  // * Efficiency curve: eta_max_fp8 = eta_max = 0.8. For t tokens per expert, compute = FLOPs(t +
  //   t_half) / (eta x peak) halves exactly: bf16 2 (t + 48) k n mats / (0.8 x 989e12), fp8 the same
  //   over 1978e12. t = 4096: FLOPs(4144) = 2 x 4144 x 4096 x 8192 x 3 = 834 GFLOP -> 1.054 ms bf16,
  //   0.527 ms fp8; the HBM side (weights 4096 x 8192 x 3 x 1 B = 101 MB in FP8, activations 4096 x
  //   (4096 + 3 x 8192) x 2 B x 2 = 503 MB) / (0.85 x 3.35 TB/s) = 0.212 ms stays below.
  // * Tile/wave model: eta_max_fp8 = eta_tile, the FP8 per-tile rate: the same tiles and waves, each
  //   half as long. t = 1024: up 8 x 64 = 512 tiles, 4 waves of (4096 + 272) x 2 x 128^2 x 132 /
  //   (0.79 x 989e12) = 24.2 us; HBM (at most 4096 x 8192 x 4 B + 1024 x 12288 x 2 B = 159 MB,
  //   56 us) stays below.
  // The FP8 call adds the quantization kernels (expert_quantize), which the bf16 one lacks; both run
  // the same bf16 activation kernel after the GEMM (ComputeCost::activation), taken out of both.
  for (const auto kind : {cost::GemmModel::kCurve, cost::GemmModel::kTiles}) {
    CAPTURE(static_cast<int>(kind));
    cost::ComputeParams p;
    p.gemm_model = kind;
    p.eta_max_fp8 = kind == cost::GemmModel::kCurve ? p.eta_max : p.tiles.eta_tile;
    auto g = hopper();
    g.peak_fp8 = FlopRate(2 * g.peak_flops.value());
    const cost::ComputeCost bf16(g, model("bf16"), p), fp8(g, model("fp8"), p);
    const double fixed_f = bf16.expert_fixed(false).value(), fixed_b = bf16.expert_fixed(true).value();
    CHECK(fp8.expert_fixed(false).value() == fixed_f);
    for (double t : {1024.0, 4096.0, 16384.0}) {
      CAPTURE(t);
      const double act_f = bf16.activation(t, 8192, true, false).value(), act_b = bf16.activation(t, 8192, true, true).value();
      CHECK(fp8.activation(t, 8192, true, false).value() == act_f);
      const double b = bf16.expert_forward_uniform(t, 1).value() - fixed_f - act_f;
      const double f = fp8.expert_forward_uniform(t, 1).value() - fixed_f - fp8.expert_quantize(t, false).value() - act_f;
      CHECK(f == doctest::Approx(b / 2).epsilon(1e-12));
      const double bb = bf16.expert_backward_uniform(t, 1).value() - fixed_b - act_b;
      const double fb = fp8.expert_backward_uniform(t, 1).value() - fixed_b - fp8.expert_quantize(t, true).value() - act_b;
      CHECK(fb == doctest::Approx(bb / 2).epsilon(1e-12));
      CHECK(bf16.expert_quantize(t, false).value() == 0);
    }
  }
}

TEST_CASE("FP8: DeepGEMM's published efficiency, the quantization bytes by hand, the output head in bf16") {
  const cost::ComputeParams p;
  // Mean of DeepGEMM's four contiguous grouped GEMMs on H800 (1297, 1099, 1288, 1093 TFLOPS) over 1979.
  CHECK(p.eta_max_fp8 * 1979 == doctest::Approx((1297.0 + 1099 + 1288 + 1093) / 4));
  CHECK(p.eta_max_fp8 < p.eta_max);  // block scaling's promotion costs: 1194 of 1979 against bf16's 0.8
  // Quantization of one expert group (k 4096, n 8192, SwiGLU: 3 matrices), t = 1000 tokens:
  //   forward  = weights 4096 x 8192 x 3 x (3 + 4/16384) + inputs 1000 x (4096 + 8192) x (3 + 4/128)
  //   backward = weights again + output gradients 1000 x (2 x 8192 + 4096) x 2 x (3 + 4/128)
  //              + cached inputs re-tiled 1000 x (4096 + 8192) x (2 + 8/128)
  const double w = 4096.0 * 8192 * 3;
  const double fwd = w * (3 + 4.0 / 16384) + 1000.0 * 12288 * 3.03125;
  const double bwd = w * (3 + 4.0 / 16384) + 1000.0 * 20480 * 2 * 3.03125 + 1000.0 * 12288 * 2.0625;
  CHECK(cost::fp8_quantize_bytes(1000, 4096 + 8192, 2 * 8192 + 4096, w, false) == doctest::Approx(fwd));
  CHECK(cost::fp8_quantize_bytes(1000, 4096 + 8192, 2 * 8192 + 4096, w, true) == doctest::Approx(bwd));
  const cost::ComputeCost fp8(hopper(), model("fp8"), p);
  CHECK(fp8.expert_quantize(1000, false).value() == doctest::Approx(fwd / (p.eta_mem * 3.35e12)));
  // The output head keeps its bf16 GEMM (DeepSeek-V3 §3.3.1): same time in both precisions.
  const cost::ComputeCost bf16(hopper(), model("bf16"), p);
  CHECK(fp8.head_forward().value() == bf16.head_forward().value());
  CHECK(fp8.head_backward().value() == bf16.head_backward().value());
  // The linear layers get faster: the dense FFN, the attention block (projections only).
  CHECK(fp8.dense_ffn_forward().value() < bf16.dense_ffn_forward().value());
  CHECK(fp8.attention_forward(0).value() < bf16.attention_forward(0).value());
  CHECK(fp8.attention_backward(0).value() < bf16.attention_backward(0).value());
}

TEST_CASE("FP8: a GPU without FP8 tensor cores is refused where model meets topology") {
  auto a100 = hopper();
  a100.model = "A100-SXM4-80GB";
  a100.peak_fp8 = FlopRate(0);
  a100.compute_capability = 8.0;
  const auto fp8 = model("fp8");
  try {
    cost::check_precision(fp8, a100, "fp8.yaml", "dgx-a100.yaml");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("dgx-a100.yaml") != std::string::npos);
    CHECK(what.find("gpu.peak_fp8") != std::string::npos);
    CHECK(what.find("A100-SXM4-80GB") != std::string::npos);
  }
  CHECK_NOTHROW(cost::check_precision(model("bf16"), a100, "fp8.yaml", "dgx-a100.yaml"));
  CHECK_NOTHROW(cost::check_precision(fp8, hopper(), "fp8.yaml", "h100.yaml"));
}
