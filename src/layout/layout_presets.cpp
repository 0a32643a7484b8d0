#include "layout/layout_presets.hpp"

#include <fmt/format.h>

namespace hs::workload {

std::span<const LayoutPreset> layout_presets() {
  static constexpr LayoutPreset kPresets[] = {
      {"deepseek-v3", "tp=1,pp=16,ep=64,dist_opt=on,schedule=dualpipe",
       "DeepSeek-V3 technical report, arXiv 2412.19437, section 3.2 (PP16 with DualPipe, EP64 over 8 nodes, ZeRO-1 "
       "DP, no TP; 2,048 H800 GPUs)"},
      {"mixtral-8x7b", "tp=1,pp=4,ep=8,sp=on,dist_opt=on,overlap_grad_reduce=on,overlap_param_gather=on",
       "NVIDIA/Megatron-LM examples/mixtral/README.md (recommended training config TP1EP8PP4; "
       "train_mixtral_8x7b_distributed.sh: distributed optimizer, sequence parallelism, --overlap-grad-reduce, "
       "--overlap-param-gather)"},
      {"gpt-oss-120b", "tp=1,pp=4,ep=8,sp=off,dist_opt=on,overlap_grad_reduce=on,overlap_param_gather=on",
       "NVIDIA-NeMo/Megatron-Bridge perf recipe gpt_oss_120b_pretrain_64gpu_h100_bf16_config (TP1 PP4 EP8, no "
       "sequence parallelism, MBS 1, GBS 1280 on 64 H100: grad_accum=80 at dp 16; its selective recompute of "
       "layernorm and moe_act is not modelled)"},
  };
  return kPresets;
}

std::string expand_layout_preset(const std::string& text, const SourceLocation& source) {
  const size_t comma = text.find(',');
  const std::string first = text.substr(0, comma);
  if (first.empty() || first.find('=') != std::string::npos) return text;
  std::vector<std::string> names;
  for (const auto& p : layout_presets()) {
    if (first == p.name) return comma == std::string::npos ? p.layout : std::string(p.layout) + text.substr(comma);
    names.push_back(p.name);
  }
  throw InputError(source, "layout",
                   fmt::format("'{}' is neither KEY=VALUE nor a layout preset (presets: {})", first,
                               fmt::join(names, ", ")));
}

}  // namespace hs::workload
