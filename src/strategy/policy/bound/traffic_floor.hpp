// The least communication any strategy needs for an iteration's routing, and the time it takes at
// the fabric's full capacity: the traffic half of the lower bound (`bound`, strategy/policy/bound/layout_bound.cpp).
//
// Units: GPUs, and (with 2+ nodes) nodes. For a unit u and expert e of a layer, c(u, e) is the
// iteration's assignments from u's GPUs to e (all micro-batches), b the bytes of one token's
// activations (d_model x activation bytes) and P_e one expert's parameters at the smaller of the
// parameter and gradient byte sizes. Whatever a strategy does with expert e, some set H of units
// computes it:
//   * a unit outside H sends each of its c(u, e) tokens out twice (forward dispatch, backward
//     gradient of the combine) and receives them back twice, so it sends 2 b c(u, e) bytes;
//   * with |H| >= 2 every unit of H sends at least P_e: the others' result (parameters gathered
//     from it, or a gradient sum) depends on all P_e values it holds (FSSDP's spAG / spRS, FasterMoE's
//     shadow broadcast / reduce, FlexMoE's and EP replicas' gradient all-reduce, which sends
//     2 (k - 1) / k P_e >= P_e per member); with |H| = 1 nothing need move.
// So each expert costs at least min over H of [|H| >= 2] |H| P_e + 2 b sum_{u not in H} c(u, e),
// reached by H = the top-k units by c(u, e) for the best k (computed exactly, per expert). The dense
// gradient all-reduce adds at least P_dense per unit (it sends its gradients to someone and every
// unit needs all others'). Every byte a unit sends leaves it over its outgoing links (a GPU's
// NVLink/PCIe ports; a node's links into the fabric) and arrives over some unit's incoming links,
// so the iteration lasts at least bytes / min(sum of outgoing, sum of incoming capacity) at every
// level. Latencies, contention, NCCL's channel limits and memory are ignored: each only adds time.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "workload/model_spec.hpp"

namespace hs::strategy {

struct TrafficFloor {
  double seconds = 0;  // the largest level's bytes / capacity (0 on one GPU)
  double bytes = 0;    // least bytes sent at that level
  std::string level;   // "GPU links" or "node links"; empty when nothing binds
};

// The levels (units and their summed link capacity) and byte sizes of a topology and model, computed
// once; evaluate() per iteration.
class TrafficFloorModel {
 public:
  TrafficFloorModel(const topology::Topology& topo, const workload::ModelSpec& m);
  // counts: the iteration's [layer][gpu][expert] assignments (all micro-batches summed).
  TrafficFloor evaluate(std::span<const double> counts) const;

 private:
  struct Level {
    const char* name;
    int units;
    std::vector<int> unit_of;  // per GPU
    double capacity;           // min(sum of outgoing, sum of incoming) link bandwidth over its units
  };
  std::vector<Level> levels_;
  int gpus_, experts_, layers_;
  double token_bytes_, p_expert_, p_dense_;
};

// One evaluation (builds the model: for tests and one-off use).
TrafficFloor traffic_floor(const topology::Topology& topo, const workload::ModelSpec& m, std::span<const double> counts);

}  // namespace hs::strategy
