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
//   gemm(t) = max(A * pad(t) * (1 + t_half / t), W + a * t) is subadditive, gemm(x + y) <=
//   gemm(x) + gemm(y) (pad() is a ceiling, so pad(x + y) <= pad(x) + pad(y); 1 + t_half / t falls
//   with t; W >= 0), and gemm(0) = 0. Whatever a strategy does with expert e (one owner, replicas,
//   shadows, materialized copies), the instances that compute it split c_e, so their gemm terms sum
//   to at least gemm(c_e); over all GPUs the expert work is at least sum_e gemm(c_e), and the most
//   loaded GPU, which every collective after the layer waits for, does at least the mean of it plus
//   its launch. A GPU of the bound does exactly that mean. With uniform loads and E >= N this is the
//   oracle's expert compute (E/N experts of c/E tokens each), up to rounding.
// * All-to-all: zero bytes (every token computed on its own GPU). Token locality is reachable: FSDP
//   of experts and FSSDP with everything materialized keep every token local. Charging the cheapest
//   way to get there (parameter moves minus the attention they hide behind) would not be a bound for
//   every strategy: FlexMoE's replicas persist between iterations, their moves are amortized over
//   `period` iterations and their only per-iteration cost, a gradient all-reduce, overlaps the whole
//   backward, not just the attention; FSSDP's spAG and spRS hide behind attention forward and
//   backward. Any positive per-layer charge for locality can therefore exceed what some
//   configuration of some strategy pays, so the honest bound charges nothing: the dispatch and
//   combine tasks stay in the graph (their latency, as FSDP pays it) with no bytes.
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
// What it leaves out (so it can sit well below every strategy on all-to-all-bound platforms): the
// cost of making tokens local. It is a floor, not a forecast.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "strategy/strategy.hpp"

namespace hs::strategy {

std::unique_ptr<Strategy> make_bound(const Context& ctx, const std::map<std::string, std::string>& knobs);

}  // namespace hs::strategy
