// A strategy is a policy for running MoE layers (where experts live, who computes which tokens,
// what moves over the network when). It builds each iteration's task graph for the engine and
// reports per-iteration results; the engine knows nothing about MoE (docs/model.md §4).
//
// Strategies are named on the command line as NAME[:KNOB=VALUE...] (e.g. "fssdp:window=10"); that
// full spec is the strategy's name in every output. Every knob is declared with its default so
// `sweep` can vary any of them, and unknown strategies or knobs are bad input (exit 2).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collective/analytic_network.hpp"
#include "collective/sparse_plan.hpp"
#include "cost/compute_cost.hpp"
#include "cost/memory_model.hpp"
#include "engine/simulation.hpp"
#include "network/flow_network.hpp"
#include "topology/topology.hpp"
#include "strategy/knob_domain.hpp"
#include "strategy/timeline_sink.hpp"
#include "workload/model_spec.hpp"

namespace hs::workload {
struct ParallelLayout;
}

namespace hs::strategy {

// Where the time of an iteration went, along its critical path (sums to the iteration time).
enum class Component {
  kAttention,       // attention blocks, dense FFNs, embedding / LM head
  kRouting,         // router, token permute / unpermute
  kExpertCompute,   // expert FFN at the mean GPU's load
  kStragglerWait,   // expert FFN beyond the mean: the wait imposed by the most loaded GPU
  kAllToAll,        // dispatch / combine all-to-all-v
  kDenseAllReduce,  // exposed data-parallel gradient all-reduce
  kOptimizer,       // optimizer step
  kExposedSpag,     // FSSDP: SparseAllGather not hidden behind attention; FasterMoE: shadow broadcast not hidden
  kExposedSprs,     // FSSDP: SparseReduceScatter not hidden behind attention backward; FasterMoE: shadow gradient reduce
  kCalibrationSpag, // FSSDP: extra spAG of the calibration stage (after the gate, on the critical path)
  kReshard,         // FSSDP: re-sharding migration of owned experts + optimizer states
  kMaterializeCopy, // FSSDP: copying materialized experts into the expert buffer, their gradients out
  kOverlapSlowdown, // compute slowed by communication running beside it on the same GPU
  kCount
};
inline constexpr int kNumComponents = static_cast<int>(Component::kCount);
const char* component_name(Component c);

struct IterationResult {
  double time = 0;
  std::array<double, kNumComponents> breakdown{};
  double hidden_comm = 0;             // sparse/dense collective time overlapped with compute (not in the sum)
  int bottleneck_gpu = -1;            // GPU with the most expert work on the critical path
  topology::LinkId bottleneck_link = -1;  // most loaded link of the slowest all-to-all
  cost::MemoryBreakdown memory;       // peak memory of the most loaded GPU in this iteration
  int memory_gpu = -1;
  // FSSDP without re-materialization: the worst GPU's memory for the same plan with
  // re-materialization's copy lifetimes (a second evaluation of the memory model, not a second
  // simulation), for the verdict "fits with rematerialize=on". Unset for every other strategy.
  std::optional<cost::MemoryBreakdown> memory_rematerialized;
  // Token dropping (strategy/capacity.hpp), per MoE layer: token-expert assignments routed and those
  // dropped at the capacity. Empty when the model is dropless.
  std::vector<double> routed_tokens, dropped_tokens;
};

struct Knob {
  std::string name;
  std::string value;  // default, textual; parsed by the strategy
  std::string help;
  KnobDomain domain;  // type and range: every value is checked against it before the strategy is built
};

struct StrategySpec {
  std::string name;                           // registered name, e.g. "ep"
  std::map<std::string, std::string> knobs;   // as given
  std::string full;                           // canonical "name:k=v:..." (as given order)
};

// Parses "NAME[:KNOB=VALUE...]" (syntax only; knob names are checked by the factory).
StrategySpec parse_strategy_spec(const std::string& text);

struct Context {
  const topology::Topology& topo;
  const workload::ModelSpec& model;
  const cost::ComputeCost& compute;
  uint64_t seed = 1;
  bool flow_network = false;  // communication on the flow-level tier instead of the analytic one
  double flow_precision = network::kDefaultFlowPrecision;  // see network/flow_network.hpp
  // Compute slowed by communication on the same GPU and the reverse (engine/simulation.hpp).
  engine::Interference interference{};
};

// What a knob left to `auto` (or a derived setting) became, for the output: a user tuning a policy
// must see what the defaults chose. `json` is a JSON literal (number, string, array).
struct ResolvedSetting {
  std::string key;
  std::string text;  // for the table
  std::string json;
};

// JSON array / table text of a per-layer list of integers.
ResolvedSetting resolved_list(const std::string& key, const std::vector<int>& values);
ResolvedSetting resolved_value(const std::string& key, double value);
ResolvedSetting resolved_text(const std::string& key, const std::string& value);

// What a strategy planned for the iteration it simulated last, per MoE layer: which GPU owns each
// expert (chunk), which GPUs hold materialized copies, the sparse collectives' transfers in the
// order the simulator issues them (spAG: owner towards the copies; spRS: the mirror, gradients back
// to the owner) and the dispatch byte matrix. Plain data, so the validation backend can execute
// exactly what was timed (`hecate-sim plan`, src/transport/); the strategy knows nothing of files.
struct ChunkTransfer {
  int chunk = 0, src = 0, dst = 0;
  double bytes = 0;
};

struct LayerPlanSnapshot {
  double chunk_bytes = 0;  // one expert's parameter bytes
  collective::BroadcastAlgo broadcast = collective::BroadcastAlgo::kChain;
  std::vector<int> owner;                  // [chunk] -> owning GPU
  std::vector<std::vector<int>> replicas;  // [chunk] -> GPUs with a copy (owner excluded), sorted
  std::vector<ChunkTransfer> spag, sprs;   // in issue order (calibration copies after the forward spAG)
  std::vector<double> dispatch_bytes;      // n x n, row = source GPU
};

struct PlanSnapshot {
  int iteration = -1;  // 0-based count of simulate() calls before the one planned
  std::vector<LayerPlanSnapshot> layers;
};

// One iteration's loads, counts[layer][gpu][expert] (IterationLoads): the whole iteration's and, when
// the trace records micro-batches, one vector per micro-batch of the model (grad_accum of them, same
// layout, summing to `total`). With `micro` empty every micro-batch routes total / grad_accum.
//
// The iteration's counts come either whole or a layer at a time from a producer (IterationLoads'
// load_layer, see runner.hpp's iteration_counts), so that a strategy that routes layer by layer reads
// each layer's n x E counts while they are in cache instead of L x n x E of them from memory. layer()
// serves both; total() produces every layer once (then layer() reads from it), for strategies that
// plan from the whole iteration. Either way the numbers are the same.
class IterationCounts {
 public:
  // Writes layer l's counts[gpu][expert] (gpus x experts values) to `out`.
  using LayerProducer = std::function<void(int layer, double* out)>;
  IterationCounts(std::span<const double> total, std::span<const std::vector<double>> micro_batches = {})
      : micro(micro_batches), total_(total), whole_(true) {}
  // Counts produced on demand: `layers` layers of `layer_size` values each; `layer_buf` and
  // `total_buf` (the caller's, re-used across iterations) hold them.
  IterationCounts(LayerProducer produce, int layers, size_t layer_size, std::vector<double>& layer_buf,
                  std::vector<double>& total_buf)
      : produce_(std::move(produce)), layers_(layers), layer_size_(layer_size), layer_buf_(&layer_buf),
        total_buf_(&total_buf) {}
  // counts[layer][gpu][expert] of the whole iteration.
  std::span<const double> total() const {
    if (!whole_) {
      total_buf_->resize(static_cast<size_t>(layers_) * layer_size_);
      for (int l = 0; l < layers_; ++l) produce_(l, total_buf_->data() + static_cast<size_t>(l) * layer_size_);
      total_ = *total_buf_;
      whole_ = true;
    }
    return total_;
  }
  // Layer l's counts[gpu][expert] (gpus x experts). When produced on demand, valid until the next
  // layer() call.
  std::span<const double> layer(int l, int gpus, int experts) const {
    const size_t size = static_cast<size_t>(gpus) * experts;
    if (whole_) return total_.subspan(static_cast<size_t>(l) * size, size);
    layer_buf_->resize(size);
    produce_(l, layer_buf_->data());
    return *layer_buf_;
  }
  std::span<const std::vector<double>> micro;

 private:
  LayerProducer produce_;
  int layers_ = 0;
  size_t layer_size_ = 0;
  std::vector<double>* layer_buf_ = nullptr;
  std::vector<double>* total_buf_ = nullptr;
  mutable std::span<const double> total_;
  mutable bool whole_ = false;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Settings resolved so far (after the last simulate()): automatic knobs and derived choices.
  virtual std::vector<ResolvedSetting> resolved() const { return {}; }
  // Simulates one iteration with loads counts[layer][gpu][expert] (see IterationLoads), every
  // micro-batch routing loads / grad_accum.
  IterationResult simulate(const std::vector<double>& loads) { return simulate(IterationCounts{loads, {}}); }
  // Simulates one iteration; with counts.micro, micro-batch mb routes counts.micro[mb]. Strategies
  // plan (place experts, predict loads) per iteration from `total` and what came before, as their
  // runtimes do; only the routing of tokens (and FasterMoE's shadowing, decided per forward call)
  // follows each micro-batch.
  virtual IterationResult simulate(const IterationCounts& counts) = 0;
  // True when an iteration's result depends only on its loads (no state carried between
  // iterations): the runner then re-uses the result of a repeated trace record.
  virtual bool stateless() const { return true; }
  // What the last simulate() planned, for strategies that materialize copies (valid until the next
  // simulate()); nullptr otherwise or before any simulate().
  virtual const PlanSnapshot* last_plan() const { return nullptr; }
  // When set, the next simulate() reports its tasks to `sink` (then the strategy forgets it).
  void record_next(TimelineSink* sink) { timeline_ = sink; }

 protected:
  TimelineSink* take_timeline() {
    TimelineSink* s = timeline_;
    timeline_ = nullptr;
    return s;
  }

 private:
  TimelineSink* timeline_ = nullptr;
};

// Builds a strategy under a resolved parallel layout (workload::resolve_layout): its policy inside
// every EP group of every pipeline stage, on the one iteration graph (strategy/graph/layout_iteration.hpp).
// The spec's knobs have been checked against the registry row (check_strategy_spec).
using StrategyFactory = std::unique_ptr<Strategy> (*)(const StrategySpec& spec, const Context& ctx,
                                                      const workload::ParallelLayout& layout);

struct StrategyInfo {
  const char* name;
  const char* help;
  std::vector<Knob> knobs;  // defaults
  StrategyFactory make;
};

// The table of every implemented strategy (feeds --help and the default "run all").
const std::vector<StrategyInfo>& registry();
// The registry row of a strategy, or nullptr.
const StrategyInfo* find_strategy(const std::string& name);
// The registry row of spec's strategy after checking its name and every knob's name and value
// against the registry (with and without a layout). Throws InputError on bad names or values.
const StrategyInfo& check_strategy_spec(const StrategySpec& spec);
// The layout of a run without --layout: tp=1, pp=1, ep = the strategy's EP size (its ep_size knob,
// or automatic: N if E % N == 0, else E if N % E == 0), dp = N, and data parallelism as PyTorch
// DDP runs it (dist_opt=off: every rank keeps the whole optimizer state; overlap_grad_reduce=on:
// gradient buckets all-reduced as the backward fills them, bucket_size = DDP's bucket_cap_mb of 25
// MiB of gradients). Throws InputError naming the strategy when its experts cannot be spread over
// the GPUs.
workload::ParallelLayout default_layout(const StrategySpec& spec, const Context& ctx);
// Validates knob names and values against the registry and builds the strategy under `layout`
// (resolved), or under default_layout without one. Throws InputError on bad names or values.
std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec, const Context& ctx,
                                        const workload::ParallelLayout& layout);
std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec, const Context& ctx);

}  // namespace hs::strategy
