// The lower bound (`bound`): no strategy this simulator models can finish an iteration faster, under
// the same model, trace, topology and cost models. It answers "how far is each strategy from the
// best possible?" (`oracle` answers a different question: what EP would take without imbalance).
//
// It runs the shared iteration graph (moe_iteration.hpp), so attention, dense FFNs, router and
// permutes, LM head, the dense gradient all-reduce, micro-batches and the optimizer are charged
// exactly as every other strategy is charged, with each MoE layer planned as follows.
//
// * Expert compute: every GPU computes, per micro-batch,
//       launch + (1/N) * sum_e gemm(c_e)        (backward likewise, with its launches)
//   where c_e is expert e's global assignment count of the micro-batch and gemm the cost model's
//   per-expert term (cost/compute_cost.hpp). Why this is below every strategy: the cost model's
//   gemm(t) = max(A * (t + t_half), A * pad(t), W + a * t) is subadditive, gemm(x + y) <=
//   gemm(x) + gemm(y) (each term is: t_half >= 0, pad() is a ceiling so pad(x + y) <= pad(x) + pad(y),
//   W >= 0; and so is their max), and gemm(0) = 0 (tests/unit/cost/expert_gemm_test.cpp checks it). Whatever a strategy does with expert e (one owner, replicas,
//   shadows, materialized copies), the instances that compute it split c_e, so their gemm terms sum
//   to at least gemm(c_e); over all GPUs the expert work is at least sum_e gemm(c_e), and the most
//   loaded GPU, which every collective after the layer waits for, does at least the mean of it plus
//   its launch. A GPU of the bound does exactly that mean. With uniform loads and E >= N this is the
//   oracle's expert compute (E/N experts of c/E tokens each), up to rounding.
// * All-to-all: zero bytes in the graph (every token computed on its own GPU). Token locality is
//   reachable (FSDP of experts, FSSDP with everything materialized), but its price is not a per-layer
//   charge every strategy pays: FlexMoE's replicas persist between iterations and their gradient
//   all-reduce overlaps the whole backward; FSSDP's spAG and spRS hide behind attention. So the
//   graph charges nothing for it, and the traffic floor (strategy/traffic_floor.hpp) bounds it
//   instead, over the whole iteration: the least bytes any placement must move for the iteration's
//   routing (tokens out and back, or parameters and gradients of the copies that keep them local)
//   over the fabric's summed link capacity. The bound is max(graph makespan, traffic floor): both
//   are floors, so their max is.
// * No sparse collectives, shadows, replica all-reduces, migrations or copies (each only adds work).
// * Optimizer: every GPU updates the mean owned parameters (dense + E/N experts of every MoE layer);
//   every expert has at least one owner, so the most loaded GPU updates at least that.
// * Memory: owned state as above, activations at the mean routed tokens (reported, never binding).
//
// The argument is per task; the iteration time follows because the graph's makespan grows with its
// task durations and the bound's graph is every strategy's graph less tasks, with each task no
// longer than the longest of its kind among the GPUs in that strategy (an all-GPU collective starts
// only when the slowest GPU reaches it). Communication sharing links with other communication runs
// no slower with less traffic beside it. The property test (tests/unit/strategy/bound_test.cpp)
// checks bound <= every registered strategy over random loads on several platforms.
//
// What it leaves out: latencies, contention and uneven link use in the traffic floor (it divides by
// the fabric's total capacity), and any overlap limit between the two floors. It is a floor, not a
// forecast.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "strategy/strategy.hpp"

namespace hs::strategy {

std::unique_ptr<Strategy> make_bound(const Context& ctx, const std::map<std::string, std::string>& knobs);

}  // namespace hs::strategy
