// nccl_log_synth TOPOLOGY.yaml OP RANKS NODES CLASS=SCALE,LATENCY_US[:CLASS=...] NOISE SEED > log
// (an item TIER.PROTO=LATENCY_FACTOR,BANDWIDTH_FACTOR, TIER intra | net and PROTO LL | LL128 | Simple,
// sets NCCL protocol factors: topology::NcclProtoScale)
// Writes a synthetic nccl-tests log (tests/unit/calib/synthetic_log.hpp) for the CLI tests of
// `calibrate`: the simulator's own times with a known calibration applied, plus seeded noise.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "synthetic_log.hpp"
#include "util/atomic_file.hpp"

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: nccl_log_synth TOPOLOGY OP RANKS NODES CLASS=SCALE,LATENCY_US[:...] NOISE SEED\n");
    return 2;
  }
  const auto op = hs::collective::parse_nccl_op(argv[2]);
  if (!op) return 2;
  hs::topology::TopologyAdjust truth;
  std::stringstream spec(argv[5]);
  std::string item;
  while (std::getline(spec, item, ':')) {
    const auto eq = item.find('='), comma = item.find(',');
    if (eq == std::string::npos || comma == std::string::npos) return 2;
    const std::string key = item.substr(0, eq);
    if (const auto dot = key.find('.'); dot != std::string::npos) {
      const std::string tier = key.substr(0, dot), proto = key.substr(dot + 1);
      const int t = tier == "intra" ? 0 : tier == "net" ? 1 : -1;
      const int p = proto == "LL" ? 0 : proto == "LL128" ? 1 : proto == "Simple" ? 2 : -1;
      if (t < 0 || p < 0) return 2;
      truth.protocols[t][p] = {std::atof(item.substr(eq + 1, comma - eq - 1).c_str()), std::atof(item.substr(comma + 1).c_str())};
      continue;
    }
    truth.links.push_back({item.substr(0, eq), std::atof(item.substr(eq + 1, comma - eq - 1).c_str()),
                           hs::Seconds(std::atof(item.substr(comma + 1).c_str()) * 1e-6)});
  }
  const std::string log = hs::synthetic_log(hs::read_file(argv[1]), *op, std::atoi(argv[3]), std::atoi(argv[4]), truth,
                                            std::atof(argv[6]), std::strtoull(argv[7], nullptr, 10));
  std::fwrite(log.data(), 1, log.size(), stdout);
  return 0;
}
