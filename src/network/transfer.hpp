// A transfer is `bytes` sent from one GPU to another; a coflow is a set of transfers that start
// together and finish when the last one does (one phase of a collective). The collective layer
// decomposes collectives into coflows the way NCCL runs them (collective/ring.hpp, all_to_all.hpp);
// the network tiers (network/coflow_network.hpp, the analytic tier's sharing; network/flow_network.hpp,
// the flow tier) time them. The types live here, below both: the collective layer names them
// Transfer, Coflow (collective/transfer.hpp).
#pragma once

#include <vector>

namespace hs::network {

struct Transfer {
  int src = 0;
  int dst = 0;
  double bytes = 0;
  // Most bytes/s this transfer can move whatever the links leave it (0 = no cap): an NCCL
  // point-to-point connection's channels (collective/p2p_channels.hpp), or a reduction's arithmetic.
  double rate_cap = 0;
  bool operator==(const Transfer&) const = default;  // every field exactly
};

using Coflow = std::vector<Transfer>;

}  // namespace hs::network

namespace hs::network {

// Bytes a coflow puts on one link (route fractions applied): what the analytic tier times and the
// coflow-sharing model (network/coflow_network.hpp) shares.
struct LinkLoad {
  int link = 0;
  double bytes = 0;
  double flows = 0;  // transfers crossing the link (ECMP branches count their fraction)
};

// A coflow reduced to its per-link loads and its latency (largest route latency plus any pipeline
// latency its collective adds).
struct CoflowLoads {
  std::vector<LinkLoad> links;
  double latency = 0;
  // Seconds the coflow needs at least whatever the links give it: its slowest transfer at its rate
  // cap (Transfer::rate_cap). Alone it drains in max(this, max over links bytes / capacity).
  double floor = 0;
};

}  // namespace hs::network
