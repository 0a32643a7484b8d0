#include "strategy/policy/fssdp/materialization.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "strategy/capacity.hpp"

namespace hs::strategy {

namespace {

std::vector<int> ranked(const std::vector<double>& load) {
  std::vector<int> order(load.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] > load[b]; });
  return order;
}

bool holds(const collective::SparsePlacement& p, int e, int g) {
  return p.owner[e] == g || std::binary_search(p.replicas[e].begin(), p.replicas[e].end(), g);
}

// Places up to `copies` copies of expert e, node-first, within free slots. Returns copies placed.
int place_copies(collective::SparsePlacement& p, int e, int copies, const std::vector<int>& node_of,
                 std::vector<int>& free_slots) {
  const int n = static_cast<int>(node_of.size());
  const int nodes = n == 0 ? 0 : *std::max_element(node_of.begin(), node_of.end()) + 1;
  int placed = 0;
  for (; placed < copies; ++placed) {
    std::vector<char> node_has(nodes, 0);
    std::vector<int> node_free(nodes, 0);
    for (int g = 0; g < n; ++g) {
      if (holds(p, e, g)) node_has[node_of[g]] = 1;
      else node_free[node_of[g]] += free_slots[g];
    }
    // Node-first: a node without e and with free slots (most free slots, lowest id).
    int best_node = -1;
    for (int k = 0; k < nodes; ++k)
      if (!node_has[k] && node_free[k] > 0 && (best_node < 0 || node_free[k] > node_free[best_node])) best_node = k;
    int best = -1;
    for (int g = 0; g < n; ++g) {
      if (holds(p, e, g) || free_slots[g] <= 0) continue;
      if (best_node >= 0 && node_of[g] != best_node) continue;
      if (best < 0 || free_slots[g] > free_slots[best]) best = g;
    }
    if (best < 0) break;
    auto& r = p.replicas[e];
    r.insert(std::upper_bound(r.begin(), r.end(), best), best);
    --free_slots[best];
  }
  return placed;
}

// Replica counts for the top experts out of `slots`, proportional to load, at most cap each.
std::vector<int> proportional_counts(const std::vector<double>& load, const std::vector<int>& top, int slots, int cap) {
  std::vector<int> count(top.size(), 0);
  double total = 0;
  for (int e : top) total += load[e];
  if (slots <= 0 || top.empty()) return count;
  std::vector<std::pair<double, int>> rem;
  int used = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    const double share = total > 0 ? slots * load[top[i]] / total : static_cast<double>(slots) / top.size();
    count[i] = std::min(cap, static_cast<int>(std::floor(share)));
    used += count[i];
    rem.push_back({share - std::floor(share), static_cast<int>(i)});
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  // Largest remainder first, then round-robin in load order while slots and caps allow.
  bool progress = true;
  while (used < slots && progress) {
    progress = false;
    for (auto& [r, i] : rem) {
      if (used >= slots) break;
      if (count[i] < cap) {
        ++count[i];
        ++used;
        progress = true;
      }
    }
  }
  return count;
}

}  // namespace

collective::SparsePlacement materialize(const std::vector<double>& load, const std::vector<int>& owner,
                                        const std::vector<int>& node_of, int t, int m) {
  return materialize(load, owner, node_of, t, std::vector<int>(node_of.size(), m));
}

collective::SparsePlacement materialize(const std::vector<double>& load, const std::vector<int>& owner,
                                        const std::vector<int>& node_of, int t, std::span<const int> slots) {
  const int E = static_cast<int>(load.size());
  const int n = static_cast<int>(node_of.size());
  collective::SparsePlacement p{owner, std::vector<std::vector<int>>(E)};
  t = std::clamp(t, 0, E);
  if (t == 0 || n < 2) return p;
  const auto order = ranked(load);
  // need[g]: top-t experts GPU g does not own.
  std::vector<int> need(n, t), free_slots(n);
  for (int i = 0; i < t; ++i) --need[owner[order[i]]];
  bool everywhere = true, any = false;
  for (int g = 0; g < n; ++g) {
    free_slots[g] = std::clamp(slots[g], 0, t);
    everywhere = everywhere && free_slots[g] >= need[g];
    any = any || free_slots[g] > 0;
  }
  if (!any) return p;
  if (everywhere) {
    for (int i = 0; i < t; ++i) {
      const int e = order[i];
      for (int g = 0; g < n; ++g)
        if (g != owner[e]) p.replicas[e].push_back(g);
    }
    return p;
  }
  extend_placement(p, load, node_of, t, free_slots);
  return p;
}

int extend_placement(collective::SparsePlacement& p, const std::vector<double>& load, const std::vector<int>& node_of,
                     int t, std::vector<int>& free_slots) {
  const int E = static_cast<int>(load.size());
  const int n = static_cast<int>(node_of.size());
  t = std::clamp(t, 0, E);
  const auto order = ranked(load);
  std::vector<int> top(order.begin(), order.begin() + t);
  int slots = 0;
  for (int f : free_slots) slots += std::max(0, f);
  auto counts = proportional_counts(load, top, slots, n - 1);
  int added = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    const int e = top[i];
    const int have = static_cast<int>(p.replicas[e].size());
    const int want = std::max(0, counts[i] - have);
    added += place_copies(p, e, want, node_of, free_slots);
  }
  return added;
}

void dispatch(std::span<const double> counts, int n, const collective::SparsePlacement& p,
              const std::vector<int>& node_of, DispatchRule rule, double token_bytes, DispatchResult& out,
              double cap) {
  const int E = static_cast<int>(p.owner.size());
  // Each expert's holders (owner and copies) in GPU order, in CSR form (hold[at[e] .. at[e + 1])),
  // and each one's instance slot on its GPU (slot, parallel to hold): per GPU, one slot per expert
  // it holds, in expert order.
  std::vector<int> at(E + 1, 0), hold, slot, per_gpu(n, 0);
  for (int e = 0; e < E; ++e) {
    const auto first = static_cast<std::ptrdiff_t>(hold.size());
    hold.push_back(p.owner[e]);
    for (int g : p.replicas[e])
      if (g != p.owner[e]) hold.push_back(g);
    std::sort(hold.begin() + first, hold.end());
    for (auto k = static_cast<size_t>(first); k < hold.size(); ++k) slot.push_back(per_gpu[hold[k]]++);
    at[e + 1] = static_cast<int>(hold.size());
  }
  out.expert_tokens.resize(n);
  for (int g = 0; g < n; ++g) out.expert_tokens[g].assign(per_gpu[g], 0.0);
  out.bytes.assign(static_cast<size_t>(n) * n, 0.0);
  out.received.assign(n, 0.0);
  out.routed = out.dropped = 0;
  std::vector<double> kept;
  if (cap < std::numeric_limits<double>::infinity()) {  // the replica group's capacity, then route what is kept
    std::vector<int> instances(E);
    for (int e = 0; e < E; ++e) instances[e] = at[e + 1] - at[e];
    kept.assign(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(n) * E);
    const CapacityTally t = cut_to_capacity(kept, E, cap, instances);
    out.routed = t.routed, out.dropped = t.dropped;
    counts = kept;
  }
  // The topology rule's candidates without scanning every holder per (source, expert): per expert,
  // the index of each GPU among its holders (-1: none), and its holders' indices grouped by node
  // in increasing order (CSR: local[first[e * nodes + v] .. first[e * nodes + v + 1])).
  // Only an expert with more than one holder reads them: without any copy (EP's and SmartMoE's
  // placements) every assignment takes the one-holder path below, and they are not built.
  const bool topo_rule = rule == DispatchRule::kTopology;
  const bool any_copy = hold.size() > static_cast<size_t>(E);
  const int nodes = topo_rule && n > 0 ? *std::max_element(node_of.begin(), node_of.begin() + n) + 1 : 0;
  std::vector<int> index_of, first, local;
  if (topo_rule && any_copy) {
    index_of.assign(static_cast<size_t>(E) * n, -1);
    first.assign(static_cast<size_t>(E) * nodes + 1, 0);
    for (int e = 0; e < E; ++e)
      for (int k = 0; k < at[e + 1] - at[e]; ++k) {
        index_of[static_cast<size_t>(e) * n + hold[at[e] + k]] = k;
        ++first[static_cast<size_t>(e) * nodes + node_of[hold[at[e] + k]] + 1];
      }
    for (size_t i = 1; i < first.size(); ++i) first[i] += first[i - 1];
    local.resize(first.back());
    std::vector<int> fill(first.begin(), first.end() - 1);
    for (int e = 0; e < E; ++e)
      for (int k = 0; k < at[e + 1] - at[e]; ++k) local[fill[static_cast<size_t>(e) * nodes + node_of[hold[at[e] + k]]]++] = k;
  }
  // Each instance's token count, parallel to hold (expert_tokens[hold[i]][slot[i]]).
  std::vector<double*> tokens_at(hold.size());
  for (size_t i = 0; i < hold.size(); ++i) tokens_at[i] = &out.expert_tokens[hold[i]][slot[i]];
  std::vector<int> chosen;
  for (int s = 0; s < n; ++s) {
    const double* row = counts.data() + static_cast<size_t>(s) * E;
    double* bytes_row = out.bytes.data() + static_cast<size_t>(s) * n;
    for (int e = 0; e < E; ++e) {
      const double c = row[e];
      if (c == 0) continue;
      const int* h = hold.data() + at[e];  // e's holders, and their token counts:
      double* const* h_tokens = tokens_at.data() + at[e];
      const int holders = at[e + 1] - at[e];
      // One holder chosen: no copy (every rule picks the owner), or the topology rule's source
      // holding e itself. c / 1 is c exactly, so it is the general case below with one holder.
      int one = holders == 1 ? 0 : -1;
      if (one < 0 && topo_rule) one = index_of[static_cast<size_t>(e) * n + s];
      if (one >= 0) {
        const int g = h[one];
        *h_tokens[one] += c;
        out.received[g] += c;
        bytes_row[g] += c * token_bytes;
        continue;
      }
      chosen.clear();
      if (topo_rule) {  // its node's holders (in holder order), else all
        const size_t at = static_cast<size_t>(e) * nodes + node_of[s];
        chosen.assign(local.begin() + first[at], local.begin() + first[at + 1]);
      }
      if (chosen.empty())
        for (int k = 0; k < holders; ++k) chosen.push_back(k);
      const double share = c / static_cast<double>(chosen.size());
      for (int k : chosen) {
        const int g = h[k];
        *h_tokens[k] += share;
        out.received[g] += share;
        bytes_row[g] += share * token_bytes;
      }
    }
  }
}

collective::SparsePlacement on_gpus(const collective::SparsePlacement& p, std::span<const int> gpus) {
  collective::SparsePlacement out{std::vector<int>(p.owner.size()), std::vector<std::vector<int>>(p.replicas.size())};
  for (size_t e = 0; e < p.owner.size(); ++e) {
    out.owner[e] = gpus[p.owner[e]];
    for (int g : p.replicas[e]) out.replicas[e].push_back(gpus[g]);
    std::sort(out.replicas[e].begin(), out.replicas[e].end());
  }
  return out;
}

}  // namespace hs::strategy
