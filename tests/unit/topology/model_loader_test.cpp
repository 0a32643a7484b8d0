#include <doctest/doctest.h>

#include <string>

#include "util/diagnostics.hpp"
#include "workload/model_spec.hpp"

using namespace hs;

namespace {
const char* kModel = R"(schema: hecate-sim/model@1
name: m
layers: 4
moe_layers: every 2
d_model: 256
d_ffn: 512
experts: 8
top_k: 2
heads: 4
seq_len: 128
micro_batch: 2
)";
}

TEST_CASE("model YAML loads, with defaults and overrides") {
  auto m = workload::load_model(kModel, "m.yaml");
  CHECK(m.moe_layer_ids == std::vector<int>{1, 3});
  CHECK(m.tokens_per_gpu_iteration() == 256);  // micro_batch 2 x seq 128 x grad_accum 1
  CHECK(m.precision.state_bytes_per_param() == 16);  // bf16 + bf16 + fp32 master + Adam 2 x fp32
  auto o = workload::load_model(kModel, "m.yaml", {"experts=32", "precision.params=fp32"});
  CHECK(o.experts == 32);
  CHECK(o.precision.param_bytes == 4);
}

TEST_CASE("bad model fields are located and explained") {
  std::string bad = kModel;
  bad.replace(bad.find("top_k: 2"), 8, "top_k: 9");
  try {
    workload::load_model(bad, "m.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    std::string s = e.what();
    CHECK(s.find("top_k") != std::string::npos);
    CHECK(s.find("exceeds") != std::string::npos);
  }
  try {
    workload::load_model(std::string(kModel) + "d_modle: 3\n", "m.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    std::string s = e.what();
    CHECK(s.find("m.yaml:12:1") != std::string::npos);
    CHECK(s.find("d_modle") != std::string::npos);
  }
  CHECK_THROWS_AS(workload::load_model(kModel, "m.yaml", {"nonsense"}), InputError);
  CHECK_THROWS_AS(workload::load_model(kModel, "m.yaml", {"experts=many"}), InputError);
}

TEST_CASE("attention and causal: defaults, values, overrides, errors") {
  auto m = workload::load_model(kModel, "m.yaml");
  CHECK(m.attention == workload::AttentionImpl::kAuto);
  CHECK(m.causal);  // absent: causal (decoder LMs)
  auto f = workload::load_model(std::string(kModel) + "attention: flash\ncausal: false\n", "m.yaml");
  CHECK(f.attention == workload::AttentionImpl::kFlash);
  CHECK_FALSE(f.causal);
  auto o = workload::load_model(kModel, "m.yaml", {"attention=standard", "causal=false"});
  CHECK(o.attention == workload::AttentionImpl::kStandard);
  CHECK_FALSE(o.causal);
  CHECK(workload::load_model(kModel, "m.yaml", {"attention=auto"}).attention == workload::AttentionImpl::kAuto);
  CHECK(std::string(workload::attention_name(workload::AttentionImpl::kStandard)) == "standard");

  try {
    workload::load_model(std::string(kModel) + "attention: fused\n", "m.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    std::string s = e.what();
    CHECK(s.find("m.yaml:12:") != std::string::npos);
    CHECK(s.find("attention") != std::string::npos);
    CHECK(s.find("auto, flash, standard") != std::string::npos);
    CHECK(s.find("fused") != std::string::npos);
  }
  try {
    workload::load_model(std::string(kModel) + "causal: maybe\n", "m.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    std::string s = e.what();
    CHECK(s.find("m.yaml:12:") != std::string::npos);
    CHECK(s.find("causal") != std::string::npos);
    CHECK(s.find("true or false") != std::string::npos);
  }
  CHECK_THROWS_AS(workload::load_model(kModel, "m.yaml", {"attention=sparse"}), InputError);
}

TEST_CASE("as trained: precision.compute, moments, recompute, mla, ema; errors name the field") {
  auto m = workload::load_model(kModel, "m.yaml");
  CHECK_FALSE(m.precision.fp8());
  CHECK(m.precision.optimizer_bytes() == 8);  // two fp32 moments
  CHECK_FALSE(m.recompute.rmsnorm);
  CHECK(m.ema == workload::EmaPlacement::kNone);
  auto t = workload::load_model(kModel, "m.yaml",
                                {"precision.compute=fp8", "precision.moments=bf16", "recompute=[rmsnorm, attention_up_proj]",
                                 "mla={kv_lora_rank: 64, qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16}",
                                 "ema=cpu"});
  CHECK(t.precision.fp8());
  CHECK(t.precision.optimizer_bytes() == 4);  // two bf16 moments (DeepSeek-V3 §3.3.3)
  CHECK(t.recompute.rmsnorm);
  CHECK(t.recompute.attention_up_proj);
  // Latents kept under recomputed up-projections: q_lora_rank 0 + kv_lora_rank 64 + rope 8 = 72.
  CHECK(t.mla_latent() == 72);
  CHECK(t.ema == workload::EmaPlacement::kCpu);
  auto error_of = [](const std::vector<std::string>& sets) {
    try {
      workload::load_model(kModel, "m.yaml", sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of({"precision.compute=int8"}).find("precision.compute") != std::string::npos);
  CHECK(error_of({"precision.moments=fp8"}).find("precision.moments") != std::string::npos);
  CHECK(error_of({"recompute=[attention]"}).find("recompute[0]") != std::string::npos);
  CHECK(error_of({"recompute=rmsnorm"}).find("expected a list") != std::string::npos);
  CHECK(error_of({"ema=host"}).find("ema") != std::string::npos);
  // MLA needs its latent and head widths; it names the missing or misplaced field.
  CHECK(error_of({"mla={kv_lora_rank: 64}"}).find("mla.qk_nope_head_dim") != std::string::npos);
  CHECK(error_of({"mla={kv_lora_rank: 64, qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16, rank: 2}"})
            .find("mla.rank") != std::string::npos);
  CHECK(error_of({"mla={kv_lora_rank: 64, qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16}", "head_dim=32"})
            .find("head_dim") != std::string::npos);
  CHECK(error_of({"mla=512"}).find("expected a map") != std::string::npos);
  CHECK(error_of({"mla_latent=96"}).find("mla_latent") != std::string::npos);  // the field it replaced: unknown
}
