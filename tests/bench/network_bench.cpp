// Flow-tier speed: one skewed all-to-all-v (one flow per GPU pair, log-normal sizes) among N GPUs
// on N/8 nodes of 8 GPUs (370 GB/s NVSwitch, one 46 GB/s NIC per GPU, non-blocking core), the
// platform of the design notes' comparison with SimGrid and ASTRA-sim. Prints wall time, flows,
// solver updates and the simulated time against the analytic tier's. Median of `reps` runs.
// Usage: network_bench [N...]   (default 32 64 128)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "collective/analytic_network.hpp"
#include "engine/simulation.hpp"
#include "network/flow_network.hpp"
#include "topology/topology_builder.hpp"
#include "util/rng.hpp"

using namespace hs;

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoi(argv[i]));
  if (sizes.empty()) sizes = {32, 64, 128};
  for (int n : sizes) {
    topology::CompactSpec s;
    s.name = "bench";
    s.gpu = {"X", FlopRate(1e15), Bandwidth(3e12), Bytes(80e9)};
    s.nodes = n / 8;
    s.gpus_per_node = 8;
    s.intra = {Bandwidth(370e9), 1.0, Seconds(3e-6), ""};
    s.nics_per_node = 8;
    s.nic = {Bandwidth(46e9), 1.0, Seconds(2e-6), ""};
    s.pcie = {Bandwidth(1e12), 1.0, Seconds(0), ""};
    s.fabric_kind = "single-switch";
    auto t0 = std::chrono::steady_clock::now();
    auto topo = topology::build_compact(s, {"bench", 0, 0});
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Rng rng(7);
    collective::Coflow c;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) c.push_back({a, b, 1e6 * std::exp(rng.normal())});
    collective::AnalyticNetwork an(topo);
    const double analytic = an.coflow_time(c);
    std::vector<double> walls;
    double simulated = 0;
    network::FlowStats st;
    uint64_t rounds = 0, elements = 0;
    for (int rep = 0; rep < 3; ++rep) {
      engine::TaskGraph g;
      auto id = g.add_task(g.add_resource("r"), Seconds(0), 0, 1);
      network::FlowNetwork net(topo);
      net.assign(id, c);
      engine::Simulation sim(g);
      sim.add_model(&net);
      auto a = std::chrono::steady_clock::now();
      sim.run();
      walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      simulated = sim.makespan();
      st = net.stats();
      rounds = net.solver_stats().rounds;
      elements = net.solver_stats().elements_visited;
    }
    std::sort(walls.begin(), walls.end());
    fmt::print("all-to-all-v {:>5} GPUs: {:>8} flows, {:>8} solver updates, wall {:.3f} s (median of 3; topology "
               "build {:.3f} s); simulated {:.3f} ms flow vs {:.3f} ms analytic\n",
               n, st.flows, st.solver_updates, walls[1], build, simulated * 1e3, analytic * 1e3);
    fmt::print("    solver: {:.1f} rounds and {:.0f} element updates per solve\n", double(rounds) / st.solver_updates,
               double(elements) / st.solver_updates);
  }
  return 0;
}
