// The analytic network tier (docs/model.md §5): a coflow takes
//     alpha + max over links (bytes crossing the link / link bandwidth)
// where alpha is the largest route latency among its transfers and a transfer's bytes cross each
// link of its route times the route's ECMP fraction. Within a coflow every link's load is exact, so
// NIC sharing and incast onto one GPU show up as that link's serialization time. This class times
// a coflow alone; in a simulation the coflows' link loads (loads()) go to network/coflow_network.hpp,
// where concurrent coflows share the links they have in common.
//
// Only the links that may bind (Topology::binding_hops) are loaded: the others never carry more than
// their capacity while these carry no more than theirs, so the time is the same. On an
// endpoint-separable topology (Topology::endpoint_separable) an all-to-all's loads are its byte
// matrix's row and column sums, in one sequential pass over it.
//
// Closed form checked in the tests: a uniform all-to-all of S bytes per GPU inside one NVSwitch node
// of n GPUs puts (n-1)/n*S on every GPU's uplink: time = latency + (n-1)/n * S / B.
//
// Rate caps. A transfer with a rate cap (Transfer::rate_cap: an NCCL connection's channels) cannot
// drain faster than bytes / cap, so a coflow takes latency + max(max over links bytes / capacity,
// max over transfers bytes / cap). All-to-alls are NCCL point-to-point exchanges
// (collective/all_to_all.hpp): every pair gets its connection's cap and the latency is paid once per
// scheduling batch.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "collective/all_to_all.hpp"
#include "collective/transfer.hpp"
#include "topology/topology.hpp"

namespace hs::collective {

class AnalyticNetwork {
 public:
  explicit AnalyticNetwork(const topology::Topology& topo);

  double coflow_time(std::span<const Transfer> transfers);
  // All-to-all-v from a dense n x n byte matrix (row = source); `transpose` reads it column-wise
  // (the combine of a dispatch). Diagonal entries stay on their GPU and cost nothing.
  // `block` (all of these): GPUs [first, second) hold every non-zero entry of `matrix`, as rows and
  // as columns (a pipeline stage's all-to-all); on a topology that is not endpoint-separable only
  // that block is read, with the same result bit for bit (entries without bytes add nothing, in
  // any order). {0, 0} (the default): the whole matrix.
  double alltoallv_time(std::span<const double> matrix, bool transpose = false, std::pair<int, int> block = {0, 0});
  // The same coflows reduced to their per-link loads and latency (+ extra latency); the return value
  // is the standalone time, and last_bottleneck() is set as by the *_time calls.
  double loads(std::span<const Transfer> transfers, double extra_latency, CoflowLoads& out);
  double alltoallv_loads(std::span<const double> matrix, bool transpose, CoflowLoads& out,
                         std::pair<int, int> block = {0, 0});
  // Both directions of one all-to-all-v, each exactly as alltoallv_loads gives it: the dispatch
  // (row = source) into `fwd`, its combine (transposed) into `tr`. On an endpoint-separable topology
  // one pass over the matrix serves both: the combine's per-GPU sends are the dispatch's receives
  // and the other way round, with the same pairs, latencies and largest transfers.
  struct PairTimes {
    double fwd = 0, tr = 0;
    topology::LinkId link_fwd = -1, link_tr = -1;  // their bottlenecks, as last_bottleneck()
  };
  PairTimes alltoallv_loads_both(std::span<const double> matrix, CoflowLoads& fwd, CoflowLoads& tr,
                                 std::pair<int, int> block = {0, 0});
  // Link that determined the last coflow's time (-1 if none), and its load in bytes.
  topology::LinkId last_bottleneck() const { return last_bottleneck_; }
  const topology::Topology& topology() const { return topo_; }

 private:
  void add(int src, int dst, double bytes, double cap = 0);
  double alltoallv_add(std::span<const double> matrix, bool transpose, std::pair<int, int> block);
  // Separable topologies: the per-GPU sums of a matrix read row by row (sums_, sends_, recvs_ and
  // the pass's latency and largest local / network transfers), then the links loaded from them as
  // the dispatch or (`transpose`) the combine, returning the extra batch latency.
  void scan_sums(std::span<const double> matrix);
  double add_sums(bool transpose);
  double finish(CoflowLoads* out = nullptr);
  const topology::Topology& topo_;
  std::vector<double> load_;
  std::vector<double> count_;  // transfers per link (for loads())
  std::vector<double> inv_bw_;
  std::vector<int> gpu_node_;  // Topology::node_of per GPU
  std::vector<int> sends_, recvs_;  // scratch: peers per GPU of an all-to-all
  std::vector<double> band_;         // scratch: a band of a transposed matrix's columns, as rows
  // Scratch: an all-to-all's row (out) and column (in) sums per GPU and locality (separable
  // topologies): [locality * n + gpu], locality 0 = the GPU's node, 1 = the network.
  std::vector<double> out_bytes_, in_bytes_;
  std::vector<int> out_count_, in_count_;
  double scan_alpha_ = 0, scan_max_local_ = 0, scan_max_net_ = 0;  // scratch of scan_sums
  // Per GPU: the largest route latency to any other GPU (filled on the first scan_sums), the latency
  // of a row that sends to every other GPU without reading n route latencies; max_latency_ is the
  // largest of them (once a pass has reached it, no row can raise its latency).
  std::vector<double> row_max_latency_;
  double max_latency_ = 0;
  // Per GPU g: the GPUs of its node as one range [node_lo_[g], node_hi_[g]) when they are
  // consecutive (compact topologies), else node_lo_[g] = -1 (the row is read GPU by GPU).
  std::vector<int> node_lo_, node_hi_;
  bool band8_;  // scan_sums reads eight rows of a node at a time in vector lanes (row_band_sums.hpp)
  double alpha_ = 0;
  double floor_ = 0;  // slowest transfer at its rate cap (seconds)
  topology::LinkId last_bottleneck_ = -1;
};

}  // namespace hs::collective
