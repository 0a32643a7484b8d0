// Named parallel layouts of published training runs, usable wherever a layout is given
// (`--layout deepseek-v3`, a sweep's `layouts:`), alone or followed by overrides
// (`--layout deepseek-v3,recompute=full`: later keys win). A preset fixes tp, pp, ep and the
// switches the run used; dp is left to be derived from the cluster (N / (tp x pp)), so the same
// preset runs on the published cluster or a smaller one. Batch sizes are model fields
// (micro_batch, grad_accum: `--set`), not part of a layout; docs/manual.md lists the published ones.
//
//   deepseek-v3   tp=1,pp=16,ep=64,schedule=dualpipe  DeepSeek-V3 technical report (arXiv 2412.19437,
//                 §3.2): 16-way pipeline parallelism run by DualPipe (§3.2.1: micro-batches from both
//                 ends, two model chunks per stage, so it needs an even grad_accum >= 32), 64-way
//                 expert parallelism spanning 8 nodes, ZeRO-1 data parallelism, no tensor parallelism,
//                 on 2,048 H800 GPUs (dp 128). The report does not publish which blocks each of the 16
//                 pieces holds; Megatron-Core's published DeepSeek-V3 layout ("Et*3|(tt|)*29,m|L") is
//                 for PP16 x VPP2 (32 pieces, interleaved 1F1B) and carries an MTP layer, which no model
//                 here has, so the preset keeps the even split of the 61 blocks (13 pieces of 4, then
//                 3 of 3; the LM head on the last). A pipeline_layout=... override gives another.
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
