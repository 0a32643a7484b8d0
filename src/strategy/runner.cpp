#include "strategy/runner.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace hs::strategy {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double RunSummary::dropped_fraction() const {
  double routed = 0, dropped = 0;
  for (double v : routed_tokens) routed += v;
  for (double v : dropped_tokens) dropped += v;
  return routed > 0 ? dropped / routed : 0.0;
}

IterationCounts iteration_counts(const IterationLoads& loads, int record, CountBuffers& buf) {
  if (loads.micro_batches() > 0) {
    loads.load(record, buf.total, buf.micro);
    return IterationCounts{buf.total, buf.micro};
  }
  auto produce = [&loads, &buf, record](int layer, double* out) { loads.load_layer(record, layer, out, buf.scratch); };
  return IterationCounts(produce, loads.layers(), loads.layer_size(), buf.layer, buf.total);
}

RunSummary run_strategy(Strategy& s, const std::string& name, const IterationLoads& loads, int iterations,
                        double gpu_memory_bytes, TimelineSink* timeline, const IterationProgress& progress) {
  RunSummary out;
  out.name = name;
  CountBuffers buf;
  std::vector<IterationResult> cache;
  std::vector<char> cached;
  const int R = loads.num_records();
  if (s.stateless()) {
    cache.resize(R);
    cached.assign(R, 0);
  }
  std::map<int, int> gpu_votes;
  std::map<int, int> link_votes;
  double worst_mem = -1;
  for (int i = 0; i < iterations; ++i) {
    const int rec = i % R;
    IterationResult r;
    const bool record = timeline && i + 1 == iterations;
    if (record) s.record_next(timeline);
    if (s.stateless() && cached[rec] && !record) {
      r = cache[rec];
    } else {
      r = s.simulate(iteration_counts(loads, rec, buf));
      if (!(s.stateless() && cached[rec])) ++out.simulated_iterations;
      if (s.stateless()) cache[rec] = r, cached[rec] = 1;
    }
    out.times.push_back(r.time);
    for (int c = 0; c < kNumComponents; ++c) out.breakdown[c] += r.breakdown[c];
    out.hidden_comm += r.hidden_comm;
    if (r.bottleneck_gpu >= 0) ++gpu_votes[r.bottleneck_gpu];
    if (r.bottleneck_link >= 0) ++link_votes[r.bottleneck_link];
    if (r.memory.total() > worst_mem) {
      worst_mem = r.memory.total();
      out.peak_memory = r.memory;
      out.peak_memory_gpu = r.memory_gpu;
      out.peak_memory_iteration = i;
    }
    if (r.memory.total() > gpu_memory_bytes) ++out.iterations_over_memory;
    if (r.memory_rematerialized &&
        (!out.peak_memory_rematerialized || r.memory_rematerialized->total() > out.peak_memory_rematerialized->total()))
      out.peak_memory_rematerialized = r.memory_rematerialized;
    if (out.routed_tokens.size() < r.routed_tokens.size()) {
      out.routed_tokens.resize(r.routed_tokens.size(), 0.0);
      out.dropped_tokens.resize(r.dropped_tokens.size(), 0.0);
    }
    for (size_t l = 0; l < r.routed_tokens.size(); ++l)
      out.routed_tokens[l] += r.routed_tokens[l], out.dropped_tokens[l] += r.dropped_tokens[l];
    if (progress) progress(i + 1, iterations);
  }
  double sum = 0;
  for (double t : out.times) sum += t;
  out.mean = iterations > 0 ? sum / iterations : 0;
  out.p50 = percentile(out.times, 0.5);
  out.p99 = percentile(out.times, 0.99);
  for (auto& b : out.breakdown) b /= std::max(1, iterations);
  out.hidden_comm /= std::max(1, iterations);
  for (double& v : out.routed_tokens) v /= std::max(1, iterations);
  for (double& v : out.dropped_tokens) v /= std::max(1, iterations);
  auto best = [](const std::map<int, int>& votes) {
    int id = -1, n = 0;
    for (auto [k, v] : votes)
      if (v > n) id = k, n = v;
    return id;
  };
  out.bottleneck_gpu = best(gpu_votes);
  out.bottleneck_link = best(link_votes);
  out.fits_memory = out.peak_memory.total() <= gpu_memory_bytes;
  out.resolved = s.resolved();
  return out;
}

}  // namespace hs::strategy
