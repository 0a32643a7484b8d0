#include "strategy/policy/ep/ep.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "strategy/gpu_memory.hpp"
#include "strategy/knobs.hpp"
#include "strategy/load_history.hpp"
#include "strategy/layer_plan.hpp"

namespace hs::strategy {

int resolve_ep_size(const Context& ctx, int requested, const std::string& spec) {
  const int n = ctx.topo.num_gpus(), e = ctx.model.experts;
  int ep = requested;
  if (ep == 0) {
    if (e % n == 0) ep = n;
    else if (n % e == 0) ep = e;
    else
      throw InputError({"--strategy", 0, 0}, spec,
                       fmt::format("{} experts cannot be spread evenly over {} GPUs: set ep_size to a divisor of "
                                   "the GPU count that divides the experts (or divides into them)", e, n));
  }
  if (n % ep != 0 || (e % ep != 0 && ep % e != 0) || ep > n)
    throw InputError({"--strategy", 0, 0}, spec + ".ep_size",
                     fmt::format("ep_size {} must divide the {} GPUs and divide (or be divided by) the {} experts", ep, n, e));
  if (ep > e)
    throw InputError({"--strategy", 0, 0}, spec + ".ep_size",
                     fmt::format("ep_size {} exceeds the {} experts: use ep_size={} (experts replicated across groups)", ep, e, e));
  return ep;
}

namespace {
// An empty EP plan: n GPUs with `per` expert slots each, no tokens; dispatch_bytes is sized but left
// for the caller to fill (every row is written, so a zero-fill here would be a second pass).
void reset_ep_plan(LayerPlan& p, int n, int per) {
  p.expert_tokens.resize(n);
  for (auto& v : p.expert_tokens) v.assign(static_cast<size_t>(per), 0.0);
  p.dispatch_bytes.resize(static_cast<size_t>(n) * n);
  p.received_tokens.assign(n, 0.0);
}
}  // namespace

void route_ep_layer(const double* layer, int n, int E, int ep, double token_bytes, const std::vector<char>& shadowed,
                    LayerPlan& p) {
  const int per = E / ep;
  reset_ep_plan(p, n, per);
  if (shadowed.empty()) p.shadow_tokens.clear();
  else p.shadow_tokens.assign(n, std::vector<double>(E, 0.0));
  for (int s = 0; s < n; ++s) {
    const int base = (s / ep) * ep;
    const double* row = layer + static_cast<size_t>(s) * E;
    double* sent = p.dispatch_bytes.data() + static_cast<size_t>(s) * n;
    const char* shadow = shadowed.empty() ? nullptr : shadowed.data() + static_cast<size_t>(s / ep) * E;
    // The row zeroed while it is in cache; without shadows the group's entries are all assigned below.
    std::fill(sent, sent + base, 0.0);
    std::fill(sent + base + ep, sent + n, 0.0);
    if (shadow) std::fill(sent + base, sent + base + ep, 0.0);
    if (!shadow && per == 1) {
      // One expert per GPU: the loop below with its single slot, without branches. Adding a zero
      // count leaves a sum of non-negative counts unchanged, and the slot's token count takes the
      // same additions as received_tokens, so it is set from it after the last row. A pair's bytes
      // are c * token_bytes + 0.0: the product itself for every c but -0.0, which the + 0.0 turns
      // into the 0.0 that a pair without tokens gets (so no compare, and the loop vectorizes).
      double* received = p.received_tokens.data() + base;
      double* to = sent + base;
      for (int k = 0; k < ep; ++k) {
        const double c = row[k];
        received[k] += c;
        to[k] = c * token_bytes + 0.0;
      }
      continue;
    }
    // Expert e = k * per + j lives on GPU base + k, in its slot j.
    for (int k = 0; k < ep; ++k) {
      const int g = base + k;
      double* tokens = p.expert_tokens[g].data();
      if (!shadow) {  // the same sums as below, kept in registers
        double received = p.received_tokens[g], bytes = 0;
        for (int j = 0; j < per; ++j) {
          const double c = row[k * per + j];
          if (c == 0) continue;
          tokens[j] += c;
          received += c;
          bytes += c * token_bytes;
        }
        p.received_tokens[g] = received;
        sent[g] = bytes;
        continue;
      }
      for (int j = 0; j < per; ++j) {
        const int e = k * per + j;
        const double c = row[e];
        if (c == 0) continue;
        if (shadow[e]) {  // computed on its own GPU with the broadcast parameters
          p.shadow_tokens[s][e] += c;
          p.received_tokens[s] += c;
          continue;
        }
        tokens[j] += c;
        p.received_tokens[g] += c;
        sent[g] += c * token_bytes;
      }
    }
  }
  if (shadowed.empty() && per == 1)
    for (int g = 0; g < n; ++g) p.expert_tokens[g][0] = p.received_tokens[g];
}

void balance_ep_layer(const double* layer, int n, int E, int ep, double token_bytes, std::span<const int> gpus,
                      LayerPlan& p) {
  const int per = E / ep;
  reset_ep_plan(p, n, per);
  std::fill(p.dispatch_bytes.begin(), p.dispatch_bytes.end(), 0.0);
  double total = 0;
  for (int g : gpus)
    for (int e = 0; e < E; ++e) total += layer[static_cast<size_t>(g) * E + e];
  const double each = total / static_cast<double>(gpus.size());
  for (int g : gpus) {
    std::fill(p.expert_tokens[g].begin(), p.expert_tokens[g].end(), each / per);
    p.received_tokens[g] = each;
    double sent = 0;
    for (int e = 0; e < E; ++e) sent += layer[static_cast<size_t>(g) * E + e];
    const int base = (g / ep) * ep;
    for (int d = 0; d < ep; ++d) p.dispatch_bytes[static_cast<size_t>(g) * n + base + d] = sent / ep * token_bytes;
  }
}

}  // namespace hs::strategy
