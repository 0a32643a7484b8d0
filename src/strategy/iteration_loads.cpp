#include "strategy/iteration_loads.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "util/rng.hpp"

namespace hs::strategy {

std::vector<ProportionalBin> proportional_bins(int from, int to) {
  // Overlap of [s/from, (s+1)/from) with [j/to, (j+1)/to), in units of 1/(from*to).
  std::vector<ProportionalBin> bins;
  for (int s = 0; s < from; ++s) {
    const long long s0 = static_cast<long long>(s) * to, s1 = static_cast<long long>(s + 1) * to;
    for (int j = 0; j < to; ++j) {
      const long long j0 = static_cast<long long>(j) * from, j1 = static_cast<long long>(j + 1) * from;
      const long long ov = std::min(s1, j1) - std::max(s0, j0);
      if (ov > 0) bins.push_back({s, j, static_cast<double>(ov) / static_cast<double>(to)});
    }
  }
  return bins;
}

IterationLoads::IterationLoads(const workload::Trace& trace, const workload::ModelSpec& model, int gpus,
                               const std::string& file, Diagnostics& warnings, GlobalSplit split, uint64_t seed)
    : trace_(trace), n_(gpus), model_micro_batches_(model.grad_accum), split_(split), seed_(seed) {
  Diagnostics d;
  SourceLocation at{file, 0, 0};
  if (trace.experts != model.experts)
    d.error(at, "model.experts", fmt::format("the trace has {} experts but the model '{}' has {} (use --model or "
                                             "--set experts={})", trace.experts, model.name, model.experts, trace.experts));
  // A trace of the main model's MoE layers only (no MTP routers recorded) serves a model with MTP
  // modules: each MTP layer routes as the last recorded layer does (a warning says so).
  layers_ = model.moe_layers();
  const int main_layers = model.moe_layers() - model.mtp_moe_layers();
  if (trace.moe_layers != model.moe_layers() && !(model.mtp_moe_layers() > 0 && trace.moe_layers == main_layers))
    d.error(at, "model.moe_layers",
            model.mtp_moe_layers() > 0
                ? fmt::format("the trace has {} MoE layers but the model '{}' has {} ({} with its {} MTP layer(s))",
                              trace.moe_layers, model.name, main_layers, model.moe_layers(), model.mtp_moe_layers())
                : fmt::format("the trace has {} MoE layers but the model '{}' has {}", trace.moe_layers, model.name,
                              model.moe_layers()));
  else if (trace.moe_layers != model.moe_layers())
    warnings.warning(at, "model.mtp_layers",
                     fmt::format("the trace records the main model's {} MoE layers: the {} MTP layer(s) route as its "
                                 "last one does", trace.moe_layers, model.mtp_moe_layers()));
  if (trace.top_k != model.top_k)
    d.error(at, "model.top_k", fmt::format("the trace was recorded with top_k {} but the model '{}' uses {}",
                                           trace.top_k, model.name, model.top_k));
  if (trace.records.empty()) d.error(at, "records", "the trace has no records");
  d.throw_if_errors();
  const int S = trace.per_source() ? trace.sources : 1;
  // bins weights: share of source s's tokens going to GPU j = ov / N (sums to 1 over j).
  bins_ = proportional_bins(S, n_);
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
  if (trace.per_micro_batch()) {
    mb_bins_ = proportional_bins(trace.micro_batches, model_micro_batches_);
    const int M = trace.micro_batches, G = model_micro_batches_;
    if (M != G) {
      const std::string how =
          M % G == 0 ? fmt::format("every {} consecutive recorded micro-batches are summed into one of the model's", M / G)
          : G % M == 0 ? fmt::format("every recorded micro-batch is split evenly over {} of the model's", G / M)
                       : fmt::format("they are re-binned proportionally (model micro-batch j routes what the recorded "
                                     "ones hold of [j/{0}, (j+1)/{0}) of the iteration)", G);
      warnings.warning(at, "workload.micro_batches",
                       fmt::format("the trace records {} micro-batches per iteration but the model runs grad_accum {}: "
                                   "{} (--set grad_accum={} routes every recorded micro-batch as it was)",
                                   M, G, how, M));
    }
  }
}

void IterationLoads::load_slice(const uint32_t* counts, uint64_t slice, std::vector<double>& out) const {
  out.resize(size());  // every element of every layer is written below
  SplitScratch scratch;
  for (int l = 0; l < layers_; ++l)
    load_slice_layer(counts, slice, l, out.data() + layer_size() * l, scratch);
}

void IterationLoads::load_slice_layer(const uint32_t* counts, uint64_t slice, int l, double* out,
                                      SplitScratch& scratch) const {
  const int E = trace_.experts, L = trace_.moe_layers;
  const int S = trace_.per_source() ? trace_.sources : 1;
  l = std::min(l, L - 1);  // an MTP layer the trace does not record: its last layer's counts and seeds
  if (!trace_.per_source() && split_ == GlobalSplit::kMultinomial) {
    // Experts in blocks of kBlock: the block's splits, each with its own stream, drawn together
    // (UniformMultinomialLanes) into draws[j * kBlock + k], GPU j's count of expert e0 + k, so that
    // output row j takes the block's counts from one contiguous run.
    constexpr int kBlock = 64, kAhead = 8;
    scratch.draws.resize(static_cast<size_t>(n_) * kBlock);
    const uint32_t* draw = scratch.draws.data();
    const double scale = scale_;  // a local: stores to `out` cannot alias it
    for (int e0 = 0; e0 < E; e0 += kBlock) {
      const int w = std::min(kBlock, E - e0);
      scratch.rngs.clear(), scratch.n.clear();
      for (int k = 0; k < w; ++k) {
        const int e = e0 + k;
        scratch.rngs.push_back(Rng::derive(seed_, (slice * L + l) * E + e));
        scratch.n.push_back(counts[static_cast<size_t>(l) * E + e]);
      }
      scratch.lanes.draw(scratch.rngs, scratch.n, static_cast<size_t>(n_), scratch.draws.data(), kBlock);
      // A draw is at most its expert's count; below 2^31 it converts exactly as an int32_t, which
      // SSE2 does two at a time (cvtdq2pd), where int64_t and uint32_t convert one at a time.
      const bool small = *std::max_element(scratch.n.begin(), scratch.n.end()) < (uint64_t{1} << 31);
      for (int j = 0; j < n_; ++j) {
        double* row = out + static_cast<size_t>(j) * E + e0;
        // The rows are E doubles apart (8 KB at 1,024 experts), so no hardware prefetcher asks for
        // them and every store waits for its line (read for ownership): ask for the row kAhead rows
        // on, a line at a time.
        if (j + kAhead < n_)
          for (int k = 0; k < w; k += 8) __builtin_prefetch(row + static_cast<size_t>(kAhead) * E + k, 1);
        const uint32_t* d = draw + static_cast<size_t>(j) * kBlock;
        if (small)
          for (int k = 0; k < w; ++k) row[k] = scale * static_cast<double>(static_cast<int32_t>(d[k]));
        else  // via int64_t: the same value, converted without the branch an unsigned one takes
          for (int k = 0; k < w; ++k) row[k] = scale * static_cast<double>(static_cast<int64_t>(d[k]));
      }
    }
    return;
  }
  std::fill(out, out + layer_size(), 0.0);
  for (const auto& b : bins_) {
    const uint32_t* src = counts + (static_cast<size_t>(l) * S + b.src) * E;
    double* dst = out + static_cast<size_t>(b.dst) * E;
    const double w = b.w * scale_;
    for (int e = 0; e < E; ++e) dst[e] += w * src[e];
  }
}

void IterationLoads::load_layer(int record, int layer, double* out, SplitScratch& scratch) const {
  if (trace_.per_micro_batch())
    throw std::logic_error("IterationLoads::load_layer: a trace with a micro-batch axis is loaded whole");
  load_slice_layer(trace_.records[record].counts.data(), static_cast<uint64_t>(record), layer, out, scratch);
}

void IterationLoads::load(int record, std::vector<double>& out) const {
  if (!trace_.per_micro_batch()) return load_slice(trace_.records[record].counts.data(), static_cast<uint64_t>(record), out);
  std::vector<std::vector<double>> micro;
  load(record, out, micro);
}

void IterationLoads::load(int record, std::vector<double>& total, std::vector<std::vector<double>>& micro) const {
  const auto& rec = trace_.records[record];
  if (!trace_.per_micro_batch()) {
    micro.clear();
    return load_slice(rec.counts.data(), static_cast<uint64_t>(record), total);
  }
  // Each recorded micro-batch re-binned and scaled, then spread over the model's micro-batches; the
  // iteration is their sum (so it splits global counts exactly as its micro-batches do).
  const int M = trace_.micro_batches;
  micro.assign(static_cast<size_t>(model_micro_batches_), std::vector<double>(size(), 0.0));
  std::vector<double> slice;
  int loaded = -1;
  for (const auto& b : mb_bins_) {  // ordered by recorded micro-batch
    if (b.src != loaded) {
      load_slice(trace_.micro_slice(rec, b.src), static_cast<uint64_t>(record) * M + b.src, slice);
      loaded = b.src;
    }
    auto& dst = micro[b.dst];
    for (size_t i = 0; i < slice.size(); ++i) dst[i] += b.w * slice[i];
  }
  total.assign(size(), 0.0);
  for (const auto& v : micro)
    for (size_t i = 0; i < v.size(); ++i) total[i] += v[i];
}

}  // namespace hs::strategy
