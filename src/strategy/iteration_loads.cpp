#include "strategy/iteration_loads.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "util/rng.hpp"

namespace hs::strategy {

IterationLoads::IterationLoads(const workload::Trace& trace, const workload::ModelSpec& model, int gpus,
                               const std::string& file, Diagnostics& warnings, GlobalSplit split, uint64_t seed)
    : trace_(trace), n_(gpus), split_(split), seed_(seed) {
  Diagnostics d;
  SourceLocation at{file, 0, 0};
  if (trace.experts != model.experts)
    d.error(at, "model.experts", fmt::format("the trace has {} experts but the model '{}' has {} (use --model or "
                                             "--set experts={})", trace.experts, model.name, model.experts, trace.experts));
  if (trace.moe_layers != model.moe_layers())
    d.error(at, "model.moe_layers", fmt::format("the trace has {} MoE layers but the model '{}' has {}",
                                                trace.moe_layers, model.name, model.moe_layers()));
  if (trace.top_k != model.top_k)
    d.error(at, "model.top_k", fmt::format("the trace was recorded with top_k {} but the model '{}' uses {}",
                                           trace.top_k, model.name, model.top_k));
  if (trace.records.empty()) d.error(at, "records", "the trace has no records");
  d.throw_if_errors();
  const int S = trace.per_source() ? trace.sources : 1;
  // Proportional overlap of [s/S, (s+1)/S) with [j/N, (j+1)/N), in exact integer arithmetic (units
  // of 1/(S*N)).
  for (int s = 0; s < S; ++s) {
    const long long s0 = static_cast<long long>(s) * n_, s1 = static_cast<long long>(s + 1) * n_;
    for (int j = 0; j < n_; ++j) {
      const long long j0 = static_cast<long long>(j) * S, j1 = static_cast<long long>(j + 1) * S;
      const long long ov = std::min(s1, j1) - std::max(s0, j0);
      if (ov > 0) bins_.push_back({s, j, static_cast<double>(ov) / static_cast<double>(n_)});
    }
  }
  // bins weights: share of source s's tokens going to GPU j = ov / N (sums to 1 over j).
  if (!trace.per_source())
    warnings.warning(at, "axes", fmt::format("the trace has global counts only: split {} over {} GPUs",
                                             split == GlobalSplit::kEven ? "evenly" : "multinomially (seeded)", n_));
  else if (trace.sources != n_)
    warnings.warning(at, "workload.sources",
                     fmt::format("the trace has {} sources and the topology {} GPUs: sources re-binned "
                                 "proportionally", trace.sources, n_));
  const double trace_tokens_per_gpu = static_cast<double>(trace.tokens_per_layer()) / n_;
  const double model_tokens = static_cast<double>(model.tokens_per_gpu_iteration());
  scale_ = model_tokens / trace_tokens_per_gpu;
  if (std::abs(scale_ - 1.0) > 1e-9)
    warnings.warning(at, "workload.tokens_per_source",
                     fmt::format("the trace routes {:.6g} tokens per GPU per iteration, the model {} (micro_batch "
                                 "x seq_len x grad_accum): counts scaled by {:.4g}",
                                 trace_tokens_per_gpu, model.tokens_per_gpu_iteration(), scale_));
}

void IterationLoads::load(int record, std::vector<double>& out) const {
  const auto& rec = trace_.records[record];
  const int E = trace_.experts, L = trace_.moe_layers;
  const int S = trace_.per_source() ? trace_.sources : 1;
  out.assign(size(), 0.0);
  if (!trace_.per_source() && split_ == GlobalSplit::kMultinomial) {
    // Experts in blocks of kBlock, so that the per-expert draws (one column of out each) are
    // written a row of the block at a time rather than one strided element at a time.
    constexpr int kBlock = 16;
    std::vector<uint64_t> draw(static_cast<size_t>(n_) * kBlock);
    for (int l = 0; l < L; ++l)
      for (int e0 = 0; e0 < E; e0 += kBlock) {
        const int w = std::min(kBlock, E - e0);
        for (int k = 0; k < w; ++k) {
          const int e = e0 + k;
          Rng rng = Rng::derive(seed_, (static_cast<uint64_t>(record) * L + l) * E + e);
          rng.uniform_multinomial(rec.counts[static_cast<size_t>(l) * E + e],
                                  std::span<uint64_t>(draw.data() + static_cast<size_t>(k) * n_, n_));
        }
        for (int j = 0; j < n_; ++j) {
          double* row = out.data() + (static_cast<size_t>(l) * n_ + j) * E + e0;
          for (int k = 0; k < w; ++k) row[k] = scale_ * static_cast<double>(draw[static_cast<size_t>(k) * n_ + j]);
        }
      }
    return;
  }
  for (int l = 0; l < L; ++l) {
    for (const auto& b : bins_) {
      const uint32_t* src = rec.counts.data() + (static_cast<size_t>(l) * S + b.src) * E;
      double* dst = out.data() + (static_cast<size_t>(l) * n_ + b.dst) * E;
      const double w = b.w * scale_;
      for (int e = 0; e < E; ++e) dst[e] += w * src[e];
    }
  }
}

}  // namespace hs::strategy
