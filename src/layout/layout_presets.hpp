// Named parallel layouts of published training runs, usable wherever a layout is given
// (`--layout deepseek-v3`, a sweep's `layouts:`), alone or followed by overrides
// (`--layout deepseek-v3,recompute=full`: later keys win). A preset fixes tp, pp, ep and the
// switches the run used; dp is left to be derived from the cluster (N / (tp x pp)), so the same
// preset runs on the published cluster or a smaller one. Batch sizes are model fields
// (micro_batch, grad_accum: `--set`), not part of a layout; docs/manual.md lists the published ones.
//
//   deepseek-v3   tp=1,pp=16,ep=64  DeepSeek-V3 technical report (arXiv 2412.19437, §3.2): 16-way
//                 pipeline parallelism, 64-way expert parallelism spanning 8 nodes, ZeRO-1 data
//                 parallelism, no tensor parallelism, on 2,048 H800 GPUs (dp 128). The report's
//                 DualPipe schedule is not modelled: 1F1B runs instead, so the bubble and the
//                 overlap of all-to-alls with compute are 1F1B's (upper side on both).
//   mixtral-8x7b  tp=1,pp=4,ep=8    NVIDIA/Megatron-LM examples/mixtral/README.md: "For training,
//                 the recommended model parallel config is TP1EP8PP4"; the example training script
//                 (train_mixtral_8x7b_distributed.sh) adds --use-distributed-optimizer and
//                 --sequence-parallel, both defaults here, and --overlap-grad-reduce and
//                 --overlap-param-gather (off by default here, as in Megatron-Core; the preset
//                 turns them on).
#pragma once

#include <span>
#include <string>

#include "util/diagnostics.hpp"

namespace hs::workload {

struct LayoutPreset {
  const char* name;
  const char* layout;  // KEY=VALUE,... as --layout takes it
  const char* source;  // where the layout is published
};

std::span<const LayoutPreset> layout_presets();

// "NAME[,KEY=VALUE...]" -> the preset's text followed by the overrides; text whose first item is
// KEY=VALUE is returned unchanged. A first item without '=' that names no preset is an InputError
// listing the presets.
std::string expand_layout_preset(const std::string& text, const SourceLocation& source);

}  // namespace hs::workload
