#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cost/compute_cost.hpp"
#include "cost/memory_model.hpp"
#include "cost/model_flops.hpp"
#include "util/diagnostics.hpp"
#include "topology/topology_loader.hpp"
#include "workload/model_spec.hpp"
#include "support/approx.hpp"

using namespace hs;
using workload::AttentionImpl;

namespace {

// s = 1024, d = 512, a = 8 heads (head 64), b = 2 sequences, bf16 activations, 4 blocks.
workload::ModelSpec model(const std::string& extra = "", const std::vector<std::string>& overrides = {}) {
  return workload::load_model(std::string(R"(schema: hecate-sim/model@1
name: attn
layers: 4
d_model: 512
d_ffn: 1024
experts: 8
top_k: 2
heads: 8
seq_len: 1024
micro_batch: 2
)") + extra,
                              "attn.yaml", overrides);
}

// V100-like numbers, capability given separately so flash and standard can be compared on the same GPU.
topology::GpuModel gpu(double cc) {
  topology::GpuModel g;
  g.model = "test";
  g.peak_flops = FlopRate(125e12);
  g.hbm_bandwidth = Bandwidth(0.9e12);
  g.memory = Bytes(32e9);
  g.compute_capability = cc;
  return g;
}

constexpr double s = 1024, d = 512, a = 8, b = 2, ab = 2, L = 4;

}  // namespace

TEST_CASE("causal flash attention halves exactly the score/value term") {
  // flash forward = b (8 s d^2 + c 4 s^2 d) / (eta_attn peak) + 12 b s d ab / (eta_mem hbm) + 6 launches,
  // c = 1 bidirectional, 1/2 causal; backward = 2x the FLOPs and bytes + 10 launches. The difference
  // causal vs not is therefore b 2 s^2 d / (eta_attn peak) forward and twice that backward.
  const auto g = gpu(8.0);
  const cost::ComputeParams p;
  const cost::ComputeCost full(g, model("causal: false\n"));
  const cost::ComputeCost causal(g, model("causal: true\n"));
  CHECK(full.attention() == AttentionImpl::kFlash);
  const double rate = p.eta_attn * 125e12, mem = p.eta_mem * 0.9e12;
  const double fwd_full = b * (8 * s * d * d + 4 * s * s * d) / rate + 12 * b * s * d * ab / mem + 6 * p.launch.value();
  CHECK(full.attention_forward(0).value() == doctest::Approx(fwd_full).epsilon(1e-12));
  CHECK(full.attention_backward(0).value() ==
        doctest::Approx(2 * (fwd_full - 6 * p.launch.value()) + 10 * p.launch.value()).epsilon(1e-12));
  const double half_scores = b * 2 * s * s * d / rate;
  CHECK(full.attention_forward(0).value() - causal.attention_forward(0).value() ==
        doctest::Approx(half_scores).epsilon(1e-9));
  CHECK(full.attention_backward(0).value() - causal.attention_backward(0).value() ==
        doctest::Approx(2 * half_scores).epsilon(1e-9));
  // Absent `causal` means causal.
  CHECK(cost::ComputeCost(g, model()).attention_forward(0).value() == causal.attention_forward(0).value());
}

TEST_CASE("standard attention: full-square score GEMMs plus the softmax/dropout bytes") {
  // E = b a s^2 = 16.8M score elements. Score GEMMs (2 forward, 4 backward), each 2 b s^2 d FLOPs and
  // E ab + 2 b s d ab bytes, timed max(FLOPs / (eta_attn peak), bytes / (eta_mem hbm)): with a 64-wide
  // head 2 d/a / ab = 64 FLOP/B < eta_attn peak / (eta_mem hbm) = 89.9 on these numbers: memory-bound.
  // Element-wise: forward softmax 2 ab + dropout 2 ab + 1 = 9 B per element; backward dropout 2 ab + 1
  // + softmax 3 ab = 11 B. Launches 9 forward, 15 backward. Causal or not, the same.
  const cost::ComputeParams p;
  const double rate = p.eta_attn * 125e12, mem = p.eta_mem * 0.9e12, launch = p.launch.value();
  const double E = b * a * s * s;
  const double bmm = std::max(2 * b * s * s * d / rate, (E * ab + 2 * b * s * d * ab) / mem);
  CHECK(bmm == hs::test::approx((E * ab + 2 * b * s * d * ab) / mem));  // memory-bound, as stated
  const double proj = b * 8 * s * d * d / rate, norms = 12 * b * s * d * ab / mem;
  const double fwd = proj + 2 * bmm + 9 * E / mem + norms + 9 * launch;
  const double bwd = 2 * proj + 4 * bmm + 11 * E / mem + 2 * norms + 15 * launch;

  for (const char* causal : {"causal: true\n", "causal: false\n"}) {
    CAPTURE(causal);
    const cost::ComputeCost standard(gpu(7.0), model(causal));  // auto on sm70 -> standard
    REQUIRE(standard.attention() == AttentionImpl::kStandard);
    CHECK(standard.attention_forward(0).value() == doctest::Approx(fwd).epsilon(1e-12));
    CHECK(standard.attention_backward(0).value() == doctest::Approx(bwd).epsilon(1e-12));
    // The same GPU numbers running flash (as if it could): faster both ways.
    const cost::ComputeCost flash(gpu(7.0), model(std::string(causal) + "attention: flash\n"));
    REQUIRE(flash.attention() == AttentionImpl::kFlash);
    CHECK(flash.attention_forward(0) < standard.attention_forward(0));
    CHECK(flash.attention_backward(0) < standard.attention_backward(0));
  }
  // fp32 activations: the element-wise bytes scale with ab except the 1-byte dropout mask,
  // softmax 2 x 4 + dropout 2 x 4 + 1 = 17 B per element forward.
  const cost::ComputeCost fp32(gpu(7.0), model("precision: {activations: fp32}\n"));
  const double E4 = E, ab4 = 4;
  const double bmm4 = std::max(2 * b * s * s * d / rate, (E4 * ab4 + 2 * b * s * d * ab4) / mem);
  CHECK(fp32.attention_forward(0).value() ==
        doctest::Approx(proj + 2 * bmm4 + 17 * E4 / mem + 12 * b * s * d * ab4 / mem + 9 * launch).epsilon(1e-12));
}

TEST_CASE("standard attention keeps 5 a s^2 b (act_bytes / 2) bytes more per block") {
  // Korthikanti et al. 2022: softmax output 2 a s^2 b, dropout mask a s^2 b, dropout output 2 a s^2 b.
  auto m = model();
  const double recv = b * s * m.top_k * m.moe_layers();
  m.attention = AttentionImpl::kFlash;
  const double flash = cost::activation_bytes(m, recv);
  m.attention = AttentionImpl::kStandard;
  const double standard = cost::activation_bytes(m, recv);
  CHECK(standard - flash == doctest::Approx(5 * a * s * s * b * (ab / 2) * L).epsilon(1e-12));
  CHECK(standard - flash == 335544320.0);  // 5 x 8 x 1024^2 x 2 x 4 blocks (x ab / 2 = 1)
  // A model still at `auto` (not resolved for a GPU) counts as flash.
  m.attention = AttentionImpl::kAuto;
  CHECK(cost::activation_bytes(m, recv) == flash);
}

TEST_CASE("auto resolves by compute capability") {
  using workload::resolve_attention;
  CHECK(resolve_attention(AttentionImpl::kAuto, 7.0) == AttentionImpl::kStandard);
  CHECK(resolve_attention(AttentionImpl::kAuto, 7.5) == AttentionImpl::kStandard);
  CHECK(resolve_attention(AttentionImpl::kAuto, 8.0) == AttentionImpl::kFlash);
  CHECK(resolve_attention(AttentionImpl::kAuto, 9.0) == AttentionImpl::kFlash);
  CHECK(resolve_attention(AttentionImpl::kFlash, 7.0) == AttentionImpl::kFlash);       // as given
  CHECK(resolve_attention(AttentionImpl::kStandard, 9.0) == AttentionImpl::kStandard);

  // The boundary call rewrites the model (what the strategies' activation_bytes then sees); it is
  // idempotent and ComputeCost agrees with it.
  auto m = model();
  REQUIRE(m.attention == AttentionImpl::kAuto);
  cost::resolve_attention(m, gpu(7.0));
  CHECK(m.attention == AttentionImpl::kStandard);
  cost::resolve_attention(m, gpu(9.0));
  CHECK(m.attention == AttentionImpl::kStandard);
  auto n = model();
  cost::resolve_attention(n, gpu(8.0));
  CHECK(n.attention == AttentionImpl::kFlash);
  CHECK(cost::ComputeCost(gpu(7.0), model()).attention() == AttentionImpl::kStandard);
  CHECK(cost::ComputeCost(gpu(8.0), model()).attention() == AttentionImpl::kFlash);
  CHECK(cost::ComputeCost(gpu(7.0), model()).attention_forward(0) == cost::ComputeCost(gpu(7.0), m).attention_forward(0));
  // --set overrides apply.
  CHECK(workload::load_model(R"(schema: hecate-sim/model@1
name: attn
layers: 1
d_model: 64
d_ffn: 64
experts: 2
top_k: 1
heads: 1
seq_len: 16
)", "o.yaml", {"attention=standard"}).attention == AttentionImpl::kStandard);
}

TEST_CASE("bundled presets: V100 runs standard attention, the rest flash; decoders are causal") {
  const char* root = std::getenv("HECATE_SOURCE_ROOT");
  if (!root) {
    MESSAGE("HECATE_SOURCE_ROOT not set: bundled presets not checked");
    return;
  }
  namespace fs = std::filesystem;
  int topologies = 0, models = 0;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "topologies")) {
    if (e.path().extension() != ".yaml") continue;
    CAPTURE(e.path().string());
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("compute_capability:") != std::string::npos);  // every preset states it
    const auto t = topology::load_topology(text, e.path().string());
    const auto& g = t.gpu_model();
    CHECK(topology::infer_compute_capability(g.model) == g.compute_capability);  // and it agrees with the name
    const bool v100 = g.model.find("V100") != std::string::npos;
    CHECK(workload::resolve_attention(AttentionImpl::kAuto, g.compute_capability) ==
          (v100 ? AttentionImpl::kStandard : AttentionImpl::kFlash));
    ++topologies;
  }
  for (const auto& e : fs::directory_iterator(fs::path(root) / "models")) {
    if (e.path().extension() != ".yaml") continue;
    CAPTURE(e.path().string());
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("\ncausal:") != std::string::npos);  // every preset states it
    const auto m = workload::load_model(text, e.path().string());
    CHECK(m.attention == AttentionImpl::kAuto);
    CHECK(m.causal == (e.path().filename().string().rfind("bert", 0) != 0));
    ++models;
  }
  CHECK(topologies >= 10);
  CHECK(models >= 7);
}

TEST_CASE("attention's weight gradient (W of a split backward): the projections' weight-gradient GEMMs") {
  // W = b 8 s d^2 / (eta_attn peak) + 2 launches: the QKV and output projections' weight gradients
  // have the forward projections' FLOPs; the core attention and norms have no weights, so the rest of
  // the backward is B. Here 2 x 8 x 1024 x 512^2 = 4.29e9 FLOPs at 0.55 x 125 TFLOP/s = 62.5 us + 10 us.
  const auto g = gpu(8.0);
  const cost::ComputeParams p;
  const cost::ComputeCost c(g, model());
  const double w = b * 8 * s * d * d / (p.eta_attn * 125e12) + 2 * p.launch.value();
  CHECK(c.attention_weight_grad().value() == doctest::Approx(w).epsilon(1e-12));
  CHECK(c.attention_weight_grad().value() < c.attention_backward(0).value() / 2);  // B keeps the larger part
  // FP8 (precision.compute: fp8): the projections' weight gradients run at eta_attn_fp8 x peak_fp8,
  // as the backward's projections do (250 TFLOP/s here: 4.29e9 / (0.533 x 250e12) = 32.2 us + 10 us).
  auto g8 = g;
  g8.peak_fp8 = FlopRate(250e12);
  const cost::ComputeCost c8(g8, model("", {"precision.compute=fp8"}));
  CHECK(c8.attention_weight_grad().value() ==
        doctest::Approx(b * 8 * s * d * d / (p.eta_attn_fp8 * 250e12) + 2 * p.launch.value()).epsilon(1e-12));
}

namespace {

// The error's field for a model with `extra` lines and key=value overrides, "" when it loads.
std::string error_field(const std::string& extra, const std::vector<std::string>& overrides = {}) {
  try {
    model(extra, overrides);
  } catch (const InputError& e) {
    return e.diagnostics().front().field;
  }
  return "";
}

}  // namespace

// Grouped-query attention, a head width other than d_model / heads, sliding windows and attention
// sinks (workload/model_spec.hpp), and Megatron-LM's FLOPs per token (cost/model_flops.hpp).

TEST_CASE("grouped-query attention: projections d (2q + 2kv), scores over q") {
  // kv_heads 2 of 8, head_dim 64: q = 8 x 64 = 512, kv = 2 x 64 = 128. Projection weights
  // P = 512 (2 x 512 + 2 x 128) = 655,360 (multi-head: 4 d^2 = 1,048,576). Causal flash forward:
  // b (2 s P + 4 s (s/2) q) / (eta_attn peak) + 12 b s d ab / (eta_mem hbm) + 6 launches, so the
  // GQA model is faster than multi-head by b 2 s (4 d^2 - P) / (eta_attn peak).
  const auto g = gpu(8.0);
  const cost::ComputeParams p;
  const auto mha = model(), gqa = model("kv_heads: 2\n");
  CHECK(mha.attention_proj_params() == 4 * d * d);
  CHECK(gqa.attention_proj_params() == 655360);
  CHECK(gqa.attention_bias_params() == 512 + 2 * 128 + 512);
  const double rate = p.eta_attn * 125e12;
  const cost::ComputeCost a(g, mha), c(g, gqa);
  CHECK(a.attention_forward(0).value() - c.attention_forward(0).value() ==
        doctest::Approx(b * 2 * s * (4 * d * d - 655360) / rate).epsilon(1e-9));
  // Parameters: a block loses 4 d^2 - P weights and 2 (d - 128) biases.
  const double lost = 4 * d * d - 655360 + 2 * (d - 128);
  CHECK(cost::count_params(mha).dense - cost::count_params(gqa).dense == doctest::Approx(4 * lost));
  // Kept per token: Q, K, V 512 + 2 x 128 instead of 3 x 512 elements of 2 bytes.
  CHECK(cost::attention_kept_per_token(mha).split - cost::attention_kept_per_token(gqa).split ==
        doctest::Approx(2.0 * (3 * d - 768)));
}

TEST_CASE("a head width other than d_model / heads") {
  // heads 8 x head_dim 128 = q 1024 on d 512 (d_model need not divide then): P = 512 (2048 + 2048).
  const auto m = model("head_dim: 128\n");
  CHECK(m.q_width() == 1024);
  CHECK(m.attention_proj_params() == 512.0 * 4096);
  CHECK(error_field("", {"heads=7"}) == "heads");  // 512 % 7 without head_dim
  CHECK(error_field("head_dim: 64\n", {"heads=7"}).empty());
}

TEST_CASE("sliding window: keys per query and the score term per block") {
  // Causal window w = 128 on s = 1024: sum over queries of min(i + 1, w) = w (w + 1) / 2 + (s - w) w
  // = 8256 + 114688 = 122944, i.e. s w - w (w - 1) / 2, per query 120.0625 (full causal: s / 2 = 512).
  const auto g = gpu(8.0);
  const cost::ComputeParams p;
  const auto m = model("sliding_window: 128\nsliding_window_layers: [0, 2]\n");
  const cost::ComputeCost c(g, m);
  CHECK(c.keys_per_query(0) == doctest::Approx(122944.0 / 1024));
  CHECK(c.keys_per_query(1) == 512);
  CHECK(c.keys_per_query(2) == c.keys_per_query(0));
  // Forward difference between a full and a banded block: b 4 s (512 - 120.0625) q / (eta_attn peak).
  const double rate = p.eta_attn * 125e12;
  CHECK(c.attention_forward(1).value() - c.attention_forward(0).value() ==
        doctest::Approx(b * 4 * s * (512 - 122944.0 / 1024) * d / rate).epsilon(1e-9));
  // Non-causal: w keys per query; a window of at least s is the full sequence.
  CHECK(cost::ComputeCost(g, model("causal: false\nsliding_window: 128\n")).keys_per_query(3) == 128);
  CHECK(cost::ComputeCost(g, model("sliding_window: 4096\n")).keys_per_query(0) == 512);
  // Without sliding_window_layers every block has the window.
  CHECK(model("sliding_window: 128\n").sliding_window_layer_ids.size() == 4);
  CHECK(error_field("sliding_window_layers: [1]\n") == "sliding_window_layers");
  CHECK(error_field("sliding_window: 128\nsliding_window_layers: [4]\n") == "sliding_window_layers[0]");
}

TEST_CASE("attention sinks add heads parameters per block; kv_heads must divide heads") {
  CHECK(cost::count_params(model("attention_sinks: true\n")).dense - cost::count_params(model()).dense == 4 * 8);
  CHECK(error_field("kv_heads: 3\n") == "kv_heads");
  CHECK(error_field("kv_heads: 16\n") == "kv_heads");
}

TEST_CASE("Megatron-LM's FLOPs per token, Mixtral-8x7B by hand") {
  // h 4096, 32 blocks all MoE, a 32, g 8, head 128 (q = 1), s 4096, f 14336 SwiGLU top-2, V 32000:
  //   attention (1 + 8/32 + 4096/4096) x 1 = 2.25; MLP 14336/4096 x 2 x 3/2 = 10.5 per block;
  //   12 h^2 x 32 x 12.75 + 6 h V = 12 x 16777216 x 408 + 786432000 = 82,927,681,536 FLOPs per token
  //   (Megatron's logit term 12 h^2 L V / (2 L h) = 6 h V).
  const auto m = workload::load_model(R"(schema: hecate-sim/model@1
name: mixtral
layers: 32
d_model: 4096
d_ffn: 14336
expert_mlp: swiglu
experts: 8
top_k: 2
heads: 32
kv_heads: 8
seq_len: 4096
vocab: 32000
)",
                                      "m.yaml");
  CHECK(cost::megatron_flops_per_token(m) == doctest::Approx(82927681536.0).epsilon(1e-12));
  // A dense block counts its FFN (two matrices: f_dense / h) instead of the experts'.
  auto dense_first = m;
  dense_first.moe_layer_ids.erase(dense_first.moe_layer_ids.begin());
  dense_first.d_ffn_dense = 8192;
  CHECK(cost::megatron_flops_per_token(m) - cost::megatron_flops_per_token(dense_first) ==
        doctest::Approx(12.0 * 4096 * 4096 * (10.5 - 2.0)).epsilon(1e-12));
}

TEST_CASE("multi-head latent attention: projections, core widths, kept latents, Megatron's MLA branch") {
  // 8 heads on d 512; q_lora_rank 128, kv_lora_rank 64, nope 32, rope 16, v 32 (workload::MlaGeometry):
  //   P = d q_r + q_r H (n + r) + d (kv_r + r) + kv_r H (n + v) + H v d
  //     = 65,536 + 49,152 + 40,960 + 32,768 + 131,072 = 319,488 weights (multi-head: 4 d^2 = 1,048,576)
  //   QK^T over qk = H (n + r) = 384 per query, PV over v = H v = 256 (multi-head: 512 and 512).
  const auto g = gpu(8.0);
  const cost::ComputeParams p;
  const std::string mla = "mla: {q_lora_rank: 128, kv_lora_rank: 64, qk_nope_head_dim: 32, qk_rope_head_dim: 16, v_head_dim: 32}\n";
  const auto mha = model(), m = model(mla);
  CHECK(m.attention_proj_params() == 319488);
  CHECK(m.qk_width() == 384);
  CHECK(m.v_width() == 256);
  CHECK(m.mla_latent() == 128 + 64 + 16);
  CHECK(mha.mla_latent() == 0);
  // Causal flash forward = b (2 s P + 2 s (s/2) (qk + v)) / (eta_attn peak) + norms + 6 launches, so
  // multi-head minus MLA = b 2 s (4 d^2 - P) / rate + b 2 s (s/2) (1024 - 640) / rate.
  const double rate = p.eta_attn * 125e12;
  const cost::ComputeCost a(g, mha), c(g, m);
  CHECK(a.attention_forward(0).value() - c.attention_forward(0).value() ==
        doctest::Approx((b * 2 * s * (4 * d * d - 319488) + b * 2 * s * (s / 2) * (1024 - 640)) / rate).epsilon(1e-9));
  // Standard (unfused): QK^T timed at width qk and PV at v, each its own roofline (2 b s^2 width FLOPs
  // against the scores' and operands' bytes), so the narrower MLA widths cost less than 512 and 512.
  CHECK(cost::ComputeCost(g, model(mla + "attention: standard\n")).attention_forward(0).value() <
        cost::ComputeCost(g, model("attention: standard\n")).attention_forward(0).value());
  // Parameters per block: no biases, the latents' norms 128 + 64; multi-head has 4 d^2 weights and
  // q + 2 kv + d = 2,048 biases: 4 blocks lose 4 x (1,048,576 + 2,048 - 319,488 - 192).
  CHECK(m.attention_bias_params() == 192);
  CHECK(cost::count_params(mha).dense - cost::count_params(m).dense == doctest::Approx(4 * (1048576 + 2048 - 319488 - 192)));
  // Kept per token (nothing recomputed): Q and K 384 each, V 256, the output projection's input 256,
  // 2 bytes each = 2,560 B (multi-head: 4 x 512 x 2 = 4,096 B); under recompute: [attention_up_proj]
  // the latents 208 x 2 instead of Q, K, V.
  CHECK(cost::attention_kept_per_token(mha).split - cost::attention_kept_per_token(m).split == doctest::Approx(4096 - 2560));
  const auto r = model(mla + "recompute: [attention_up_proj]\n");
  CHECK(cost::attention_kept_per_token(r).split == doctest::Approx(208 * 2 + 256 * 2));
  // FP8: the five projections' GEMM inputs d + q_r + kv_r + H v and outputs q_r + qk + kv_r + r +
  // H (n + v) + d per token.
  CHECK(m.attention_gemm_in_width() == 512 + 128 + 64 + 256);
  CHECK(m.attention_gemm_out_width() == 128 + 384 + 64 + 16 + 512 + 512);
  CHECK(error_field(mla + "kv_heads: 2\n") == "kv_heads");
}

TEST_CASE("attention_dropout 0: no dropout kernel, only the softmax output kept (unfused attention)") {
  // Standard attention, E = b a s^2 = 2 x 8 x 1024^2 = 16,777,216 score elements per block. Attention
  // dropout is one kernel of 2 ab + 1 = 5 bytes per element each way (read and write ab, the 1-byte
  // mask) and one launch: without it forward and backward are each 5 E / (eta_mem hbm) + one launch
  // shorter. Kept per block: Korthikanti's 5 a s^2 b bytes (softmax output 2, mask 1, dropout output
  // 2 per element) -> 2 a s^2 b, the softmax output alone: 4 blocks x 3 x 8 x 1024^2 x 2 fewer bytes.
  // Flash attention fuses dropout: nothing changes there.
  const auto g = gpu(8.0);
  const cost::ComputeParams p;
  const auto with = model("attention: standard\n"), without = model("attention: standard\nattention_dropout: 0\n");
  CHECK(with.attention_dropout == 0.1);
  const cost::ComputeCost cw(g, with), co(g, without);
  const double elems = b * a * s * s, mem_rate = p.eta_mem * 0.9e12;
  CHECK(cw.attention_forward(0).value() - co.attention_forward(0).value() ==
        doctest::Approx(elems * 5 / mem_rate + p.launch.value()).epsilon(1e-9));
  CHECK(cw.attention_backward(0).value() - co.attention_backward(0).value() ==
        doctest::Approx(elems * 5 / mem_rate + p.launch.value()).epsilon(1e-9));
  CHECK(cost::activation_bytes(with, 0) - cost::activation_bytes(without, 0) == doctest::Approx(L * 3 * a * s * s * b));
  const auto fw = model("attention: flash\n"), fo = model("attention: flash\nattention_dropout: 0\n");
  CHECK(cost::ComputeCost(g, fw).attention_forward(0).value() == cost::ComputeCost(g, fo).attention_forward(0).value());
  CHECK(cost::activation_bytes(fw, 0) == cost::activation_bytes(fo, 0));
  CHECK(error_field("attention_dropout: 1.5\n") == "attention_dropout");
}
