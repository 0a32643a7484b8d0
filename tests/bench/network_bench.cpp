// Flow-tier speed: one skewed all-to-all-v (one flow per GPU pair, log-normal sizes) among N GPUs
// on N/8 nodes of 8 GPUs (370 GB/s NVSwitch, one 46 GB/s NIC per GPU, non-blocking core), the
// platform of the design notes' comparison with SimGrid and ASTRA-sim. Prints wall time, flows,
// solver updates and the simulated time against the analytic tier's. Median of `reps` runs.
// Usage: network_bench [-p PRECISION] [-r REPS] [-u] [-s] [N...]   (default -p 0.001 -r 3, N = 32 64 128)
// -u: a uniform all-to-all instead (1 MB per pair): one solve, so the per-flow set-up is what it times.
// -s: time the coflow alone, solved link by link (network/coflow_drain.hpp: what `collective --network
// flow` runs), instead of FlowNetwork inside a simulation; prints the same simulated time.
// With -p 0 every completion is its own event (exact max-min); run both to see the error.
// network_bench -w FILE N: writes the skewed coflow among N GPUs as an all-to-all-v byte matrix
// (`src dst bytes` lines, bytes rounded) for `hecate-sim collective --op all_to_all_v --matrix`.
// network_bench -t TOPOLOGY.yaml: only loads the topology (routes included) and prints the time and
// the process's peak memory (the 4,096-GPU preset's case).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <fmt/os.h>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "collective/analytic_network.hpp"
#include "engine/simulation.hpp"
#include "network/coflow_drain.hpp"
#include "network/flow_network.hpp"
#include "topology/topology_builder.hpp"
#include "topology/topology_loader.hpp"
#include "util/rng.hpp"

using namespace hs;

int main(int argc, char** argv) {
  std::vector<int> sizes;
  double precision = network::kDefaultFlowPrecision;
  int reps = 3;
  bool uniform = false, drain = false;
  std::string topo_file, matrix_file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-p" && i + 1 < argc) precision = std::stod(argv[++i]);
    else if (a == "-r" && i + 1 < argc) reps = std::stoi(argv[++i]);
    else if (a == "-u") uniform = true;
    else if (a == "-s") drain = true;
    else if (a == "-t" && i + 1 < argc) topo_file = argv[++i];
    else if (a == "-w" && i + 1 < argc) matrix_file = argv[++i];
    else sizes.push_back(std::stoi(a));
  }
  if (!topo_file.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto topo = topology::load_topology_file(topo_file);
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    fmt::print("topology {}: {} GPUs, {} links, routes {}: built in {:.3f} s, peak RSS {:.0f} MB\n", topo_file,
               topo.num_gpus(), topo.num_links(), topo.factored_routes() ? "factored" : "all pairs", build,
               static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
  }
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
    s.pcie = {Bandwidth(64e9), 1.0, Seconds(0), ""};  // slower than NVSwitch: intra-node flows stay on it
    s.fabric_kind = "single-switch";
    auto t0 = std::chrono::steady_clock::now();
    auto topo = topology::build_compact(s, {"bench", 0, 0});
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Rng rng(7);
    collective::Coflow c;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) c.push_back({a, b, uniform ? 1e6 : 1e6 * std::exp(rng.normal())});
    if (!matrix_file.empty()) {
      auto out = fmt::output_file(matrix_file);
      out.print("# network_bench's skewed all-to-all-v among {} GPUs: src dst bytes\n", n);
      for (const auto& t : c) out.print("{} {} {:.0f}\n", t.src, t.dst, t.bytes);
      return 0;
    }
    collective::AnalyticNetwork an(topo);
    const double analytic = an.coflow_time(c);
    std::vector<double> walls, cpus;  // wall and process CPU seconds of each run
    if (drain) {
      double simulated = 0;
      network::DrainStats ds;
      for (int rep = 0; rep < reps; ++rep) {
        auto a = std::chrono::steady_clock::now();
        const std::clock_t c0 = std::clock();
        const auto r = network::drain_coflow(topo, c, 0.0, precision);
        cpus.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
        walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
        if (!r) {
          fmt::print(stderr, "a transfer crosses more than two links that may bind\n");
          return 1;
        }
        simulated = r->seconds, ds = r->stats;
      }
      std::sort(walls.begin(), walls.end());
      std::sort(cpus.begin(), cpus.end());
      rusage ru{};
      getrusage(RUSAGE_SELF, &ru);
      fmt::print("{} {:>5} GPUs, precision {:g}, alone, link by link: {:>8} flows, {:>5} events, wall {:.3f} s, CPU {:.3f} s "
                 "(medians of {}); simulated {:.6f} ms flow ({:.17g} s) vs {:.6f} ms analytic; peak RSS so far {:.0f} MB\n",
                 uniform ? "uniform all-to-all" : "all-to-all-v", n, precision, ds.flows, ds.events, walls[walls.size() / 2],
                 cpus[cpus.size() / 2], reps, simulated * 1e3, simulated, analytic * 1e3, static_cast<double>(ru.ru_maxrss) / 1024.0);
      continue;
    }
    double simulated = 0;
    network::FlowStats st;
    uint64_t rounds = 0, elements = 0, changed = 0;
    for (int rep = 0; rep < reps; ++rep) {
      engine::TaskGraph g;
      auto id = g.add_task(g.add_resource("r"), Seconds(0), 0, 1);
      network::FlowNetwork net(topo, precision);
      net.assign(id, rep + 1 < reps ? c : std::move(c));  // the last run takes the bench's copy
      engine::Simulation sim(g);
      sim.add_model(&net);
      auto a = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      sim.run();
      cpus.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
      walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      simulated = sim.makespan();
      st = net.stats();
      rounds = net.solver_stats().rounds;
      elements = net.solver_stats().elements_visited;
      changed = net.solver_stats().rates_changed;
    }
    std::sort(walls.begin(), walls.end());
    std::sort(cpus.begin(), cpus.end());
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    fmt::print("{} {:>5} GPUs, precision {:g}: {:>8} flows, {:>8} solver updates, wall {:.3f} s, CPU {:.3f} s (medians of "
               "{}; topology build {:.3f} s); simulated {:.6f} ms flow vs {:.6f} ms analytic\n",
               uniform ? "uniform all-to-all" : "all-to-all-v", n, precision, st.flows, st.solver_updates, walls[walls.size() / 2], cpus[cpus.size() / 2], reps, build, simulated * 1e3,
               analytic * 1e3);
    fmt::print("    {} completion events; {:.2f} elements per flow; per solve: {:.1f} rounds, {:.0f} elements frozen, {:.0f} rates changed; "
               "peak RSS so far {:.0f} MB\n",
               st.completion_events, double(st.elements) / st.flows, double(rounds) / st.solver_updates, double(elements) / st.solver_updates,
               double(changed) / st.solver_updates, static_cast<double>(ru.ru_maxrss) / 1024.0);
  }
  return 0;
}
