#include "strategy/policy/fastermoe/fastermoe.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <numeric>

#include "collective/sparse_plan.hpp"
#include "strategy/capacity.hpp"
#include "strategy/policy/ep/ep.hpp"
#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/layer_plan.hpp"
#include "util/units.hpp"

namespace hs::strategy {

std::vector<int> fastermoe_shadow_policy(std::span<const double> counts, int per, const ShadowCostModel& cm) {
  const int E = static_cast<int>(counts.size());
  const int gpus = E / per;
  std::vector<int> chosen;
  if (gpus < 2) return chosen;  // nobody to shadow to
  std::vector<int> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return counts[a] > counts[b]; });
  std::vector<double> load(gpus, 0.0);
  for (int e = 0; e < E; ++e) load[e / per] += counts[e];
  const double per_token = 3 * cm.comp + 4 * cm.feat;
  double best = per_token * *std::max_element(load.begin(), load.end());
  for (int i = 0; i + 1 < E; ++i) {  // the source never shadows the last expert of the order
    const int e = order[i];
    load[e / per] -= counts[e];
    const double lat = per_token * *std::max_element(load.begin(), load.end()) +
                       static_cast<double>(chosen.size() + 1) * cm.model;
    if (!(lat < best)) break;
    best = lat;
    chosen.push_back(e);
  }
  return chosen;
}

namespace {

// The bandwidth a GPU's tokens leave through: to the first GPU of its EP group on another node, else
// to its neighbour in the node.
double auto_bandwidth(const topology::Topology& t, int ep) {
  for (int g = 1; g < ep; ++g)
    if (t.node_of(g) != t.node_of(0)) return t.route_bandwidth(0, g).value();
  return ep > 1 ? t.route_bandwidth(0, 1).value() : 0.0;
}

}  // namespace

ShadowPlanner::ShadowPlanner(const Context& ctx, const FasterMoeKnobs& k, int ep, double tokens_per_gpu)
    : ctx_(ctx), trigger_(k.trigger), n_(ctx.topo.num_gpus()), E_(ctx.model.experts), ep_(ep) {
  const auto& m = ctx.model;
  capacity_ = m.capacity_factor ? expert_capacity(*m.capacity_factor, tokens_per_gpu, m.top_k, E_)
                                : std::numeric_limits<double>::infinity();
  const auto params = cost::count_params(m);
  expert_bytes_ = params.per_expert * m.precision.param_bytes;
  grad_bytes_ = params.per_expert * m.precision.grad_bytes;
  for (int g = 0; g < n_; ++g) node_of_.push_back(ctx.topo.node_of(g));
  channels_ = collective::chain_channels(ctx.topo);
  // The policy's model parameters: the knobs, or derived from the topology and the cost model.
  bandwidth_ = k.bandwidth > 0 ? k.bandwidth : auto_bandwidth(ctx.topo, ep);
  alpha_ = k.alpha > 0 ? k.alpha : static_cast<double>(m.d_ffn) / m.d_model;
  const double tokens = static_cast<double>(ep) * tokens_per_gpu * m.top_k / E_;
  gemm_ = k.gemm_throughput > 0 ? k.gemm_throughput
                                : 2 * tokens * m.d_model * static_cast<double>(m.d_ffn) * m.n_mats() /
                                      ctx.compute.expert_forward_uniform(tokens, 1).value();
  const double h2 = alpha_ * m.d_model * static_cast<double>(m.d_model) * m.n_mats();  // expert weights
  cost_.comp = 2 * h2 / gemm_;
  cost_.feat = bandwidth_ > 0 ? m.d_model * m.precision.activation_bytes / bandwidth_ : 0.0;
  cost_.model = bandwidth_ > 0 ? h2 * m.precision.param_bytes / bandwidth_ : 0.0;
}

int ShadowPlanner::plan(std::span<const double> layer, double ga, LayerPlan& p, std::vector<double>& held) const {
  const auto& m = ctx_.model;
  const int per = E_ / ep_, groups = n_ / ep_;
  const double token_bytes = m.d_model * m.precision.activation_bytes;
  std::vector<char> mask;
  std::vector<double> counts(E_);
  collective::SparsePlacement shadows;
  int shadowed = 0;
  if (trigger_) {
    mask.assign(static_cast<size_t>(groups) * E_, 0);
    for (int k = 0; k < groups; ++k) {
      std::fill(counts.begin(), counts.end(), 0.0);
      for (int s = k * ep_; s < (k + 1) * ep_; ++s)
        for (int e = 0; e < E_; ++e) counts[e] += layer[static_cast<size_t>(s) * E_ + e] / ga;
      std::vector<int> chosen = fastermoe_shadow_policy(counts, per, cost_);
      std::sort(chosen.begin(), chosen.end());
      for (int e : chosen) {
        mask[static_cast<size_t>(k) * E_ + e] = 1;
        const int owner = k * ep_ + e / per;
        shadows.owner.push_back(owner);
        shadows.replicas.emplace_back();
        for (int g = k * ep_; g < (k + 1) * ep_; ++g)
          if (g != owner) shadows.replicas.back().push_back(g);
      }
      held[k] += static_cast<double>(chosen.size()) * expert_bytes_;
      shadowed += static_cast<int>(chosen.size());
    }
  }
  p.routed_tokens = p.dropped_tokens = 0;
  std::vector<double> kept;
  if (capacity_ < std::numeric_limits<double>::infinity()) {  // per group: ep instances of a shadowed expert
    kept.assign(layer.begin(), layer.end());
    std::vector<int> instances(E_, 1);
    const size_t rows = static_cast<size_t>(ep_) * E_;
    for (int k = 0; k < groups; ++k) {
      if (!mask.empty())
        for (int e = 0; e < E_; ++e) instances[e] = mask[static_cast<size_t>(k) * E_ + e] ? ep_ : 1;
      const CapacityTally t = cut_to_capacity(std::span<double>(kept).subspan(k * rows, rows), E_, capacity_ * ga, instances);
      p.routed_tokens += t.routed, p.dropped_tokens += t.dropped;
    }
    layer = kept;
  }
  route_ep_layer(layer.data(), n_, E_, ep_, token_bytes, mask, p);
  // FastMoE's ncclBcast / ncclReduce over the EP group: chains on the communicator's channels.
  const auto chain = collective::BroadcastAlgo::kChain;
  p.spag_flows = collective::sparse_allgather(shadows, expert_bytes_, node_of_, chain, channels_);
  p.spag_latency = collective::sparse_finish(p.spag_flows, shadows, ctx_.topo, node_of_, chain, false, channels_);
  p.sprs_flows = collective::sparse_reduce_scatter(shadows, grad_bytes_, node_of_, chain, channels_);
  p.sprs_latency = collective::sparse_finish(p.sprs_flows, shadows, ctx_.topo, node_of_, chain, true, channels_);
  p.copy_bytes.assign(n_, 0.0);
  for (size_t c = 0; c < shadows.owner.size(); ++c)
    for (int g = shadows.owner[c] / ep_ * ep_; g < (shadows.owner[c] / ep_ + 1) * ep_; ++g) p.copy_bytes[g] += expert_bytes_;
  return shadowed;
}

void ShadowPlanner::sum_routing(LayerPlan& p) const {
  p.expert_tokens = p.micro.front().expert_tokens;
  for (auto& v : p.expert_tokens) std::fill(v.begin(), v.end(), 0.0);
  p.dispatch_bytes.assign(static_cast<size_t>(n_) * n_, 0.0);
  p.received_tokens.assign(n_, 0.0);
  p.shadow_tokens.assign(n_, std::vector<double>(E_, 0.0));
  p.routed_tokens = p.dropped_tokens = 0;
  for (const LayerPlan& q : p.micro) {
    p.routed_tokens += q.routed_tokens, p.dropped_tokens += q.dropped_tokens;
    for (int g = 0; g < n_; ++g) {
      for (size_t i = 0; i < q.expert_tokens[g].size(); ++i) p.expert_tokens[g][i] += q.expert_tokens[g][i];
      p.received_tokens[g] += q.received_tokens[g];
      if (!q.shadow_tokens.empty())
        for (int e = 0; e < E_; ++e) p.shadow_tokens[g][e] += q.shadow_tokens[g][e];
    }
    for (size_t i = 0; i < q.dispatch_bytes.size(); ++i) p.dispatch_bytes[i] += q.dispatch_bytes[i];
  }
}

std::vector<ResolvedSetting> ShadowPlanner::resolved_model() const {
  return {{"bandwidth", format_bandwidth(Bandwidth(bandwidth_)), fmt::format("{:.17g}", bandwidth_)},
          {"gemm_throughput", fmt::format("{:.4g} TFLOP/s", gemm_ / 1e12), fmt::format("{:.17g}", gemm_)},
          resolved_value("alpha", alpha_)};
}

namespace {

}  // namespace

FasterMoeKnobs parse_fastermoe_knobs(const KnobValues& v) {
  FasterMoeKnobs k;
  k.trigger = v.boolean("trigger");
  k.ep_size = static_cast<int>(v.integer("ep_size"));
  if (!v.is_auto("bandwidth")) k.bandwidth = v.quantity("bandwidth", Dimension::kBandwidth);
  if (!v.is_auto("gemm_throughput")) k.gemm_throughput = v.quantity("gemm_throughput", Dimension::kFlopRate);
  if (!v.is_auto("alpha")) k.alpha = v.number("alpha");
  return k;
}

}  // namespace hs::strategy
