// FSSDP's overlap degree t (Hecate, arXiv 2502.02581, sparse materialization; docs/model.md §4): how
// many of a layer's most-loaded experts are materialized in an iteration, meant as the number whose
// SparseAllGather hides behind the attention forward that precedes the layer. Three ways to choose
// it (`overlap_degree` knob; an integer fixes it):
//   hidden  (default) the largest t whose spAG, as the iteration graph runs it, fits in the window:
//           the spAG's full duration (collective::SparsePlanCache::time: NCCL's rate caps, the
//           chain's pipeline latency, the chosen broadcast; times communication interference) <= the attention
//           forward (hidden_overlap_degree);
//   formula the paper's t = floor(T_attn x bw / expert bytes), bw = paper_bandwidth (the network
//           bandwidth per GPU), no latency and no route (formula_overlap_degree);
//   best    per layer the t of least predicted layer time, exposed spAG / spRS included, within the
//           memory cap (best_overlap_degree over the caller's prediction).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "collective/sparse_plan_cache.hpp"
#include "topology/topology.hpp"

namespace hs::strategy {

enum class OverlapMode { kHidden, kFormula, kBest, kFixed };
const char* overlap_mode_name(OverlapMode m);

// What the search for t needs beside the loads: a group of GPUs (an FSSDP group; ids 0..size-1 in
// `owner` and `slots`, `gpus` their topology ids), the per-GPU cap materialize() plans with, the
// expert's bytes, the broadcast, the interference on communication.
struct SpagSetting {
  std::span<const int> gpus;
  std::span<const int> slots;
  double expert_bytes = 0;
  collective::BroadcastAlgo algo = collective::BroadcastAlgo::kChain;
  double comm_slowdown = 0;
  // The spAG plans' memo (for the topology's node_of, `algo` and collective::chain_channels),
  // kept by the caller across calls; null: one for this call.
  collective::SparsePlanCache* cache = nullptr;
};

// hidden: the largest t in [0, E] whose spAG, materialize(load, owner, group nodes, t, slots) moved
// onto `gpus` and timed as the iteration graph times it (SparsePlanCache::time, times
// 1 + comm_slowdown: it runs beside the attention, engine::Interference), takes at most `window`
// seconds. Binary search
// assuming the spAG grows with t; only a t that was timed and fits is returned, and t + 1 was timed
// and does not fit (unless t = E).
// `guess` >= 0: the search starts there (util::largest_fitting_from: the same t when the spAG grows
// with t, in fewer timings when the guess is near).
int hidden_overlap_degree(const std::vector<double>& load, const std::vector<int>& owner, const SpagSetting& s,
                          collective::AnalyticNetwork& net, double window, int guess = -1);

// The paper's bw: the inter-node bandwidth per GPU (a node's network links towards the fabric over
// its GPUs) when it is much lower (> 2x) than a GPU's intra-node bandwidth, else the intra-node
// GPU-to-GPU bandwidth; one node: the intra-node bandwidth. Bytes per second, as the topology's
// links give it (efficiency applied).
double paper_bandwidth(const topology::Topology& t);
// formula: floor(window x bw / expert_bytes), clamped to [0, experts].
int formula_overlap_degree(double window, double bw, double expert_bytes, int experts);

// best: the t in [0, E] of least layer time; ties go to the smaller t (fewer copies). Every t up
// to 16, then a ladder whose step doubles every 8 rungs, refined around the best rung, so a layer of
// E experts costs O(16 + 8 log2(E / 16)) predictions.
// layer_time(t, beat): the layer time at t, or, when that time is above `beat` (the least time
// found so far; infinite at first), any value above beat (a bound that prunes the prediction). Such
// a t is neither the least time nor tied with it, so the t chosen and the ts tried are those of every
// time in full. `guess` >= 0 (the t an earlier search chose): the rung nearest it is tried first,
// which changes neither the ts tried nor the t chosen, only how many predictions are pruned.
int best_overlap_degree(int experts, const std::function<double(int t, double beat)>& layer_time, int guess = -1);

}  // namespace hs::strategy
