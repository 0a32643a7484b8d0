// FSSDP's re-materialization (`rematerialize`) on bundled presets: freeing the copies after forward
// and gathering them again for backward costs time (a second spAG per layer, behind the attention
// backward with the spRS of the layer above) and saves memory (two layers' copies resident instead
// of every layer's), never the other way round.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cost/compute_cost.hpp"
#include "support/make_named.hpp"
#include "support/resolved_setting.hpp"
#include "topology/topology_loader.hpp"
#include "util/rng.hpp"
#include "workload/model_spec.hpp"

using namespace hs;
using namespace hs::strategy;

TEST_CASE("bundled presets: re-materialization never lowers the iteration time and lowers peak memory when copies exist") {
  const char* root = std::getenv("HECATE_SOURCE_ROOT");
  if (!root) {
    MESSAGE("HECATE_SOURCE_ROOT not set: bundled presets not checked");
    return;
  }
  namespace fs = std::filesystem;
  hs::Rng rng(3);
  int compared = 0, with_copies = 0;
  for (const char* topo : {"aws-p3dn-v100-2node", "aws-p4d-a100-4node", "dgx-h100-1node"}) {
    const auto t = topology::load_topology_file((fs::path(root) / "topologies" / (std::string(topo) + ".yaml")).string());
    for (const char* name : {"gpt-moe-s", "bert-moe"}) {
      const auto m = workload::load_model_file((fs::path(root) / "models" / (std::string(name) + ".yaml")).string());
      cost::ComputeCost cc(t.gpu_model(), m);
      Context ctx{t, m, cc, 1};
      ctx.interference = t.gpu_model().interference;
      const int n = t.num_gpus(), E = m.experts, L = m.moe_layers();
      const double per_gpu = static_cast<double>(m.tokens_per_micro_batch()) * m.grad_accum * m.top_k;
      // The same t with and without re-materialization: the default (hidden, which does not depend
      // on it) and a fixed 4.
      for (const char* t_knob : {"hidden", "4"}) {
        CAPTURE(topo);
        CAPTURE(name);
        CAPTURE(t_knob);
        auto plain = test::make_named("fssdp", ctx, {{"overlap_degree", t_knob}});
        auto rm = test::make_named("fssdp", ctx, {{"overlap_degree", t_knob}, {"rematerialize", "true"}});
        for (int it = 0; it < 3; ++it) {
          std::vector<double> loads(static_cast<size_t>(L) * n * E);
          for (int l = 0; l < L; ++l) {
            std::vector<double> w(E);
            double sum = 0;
            for (auto& x : w) sum += x = std::exp(1.5 * rng.normal());
            for (int g = 0; g < n; ++g)
              for (int e = 0; e < E; ++e) loads[(static_cast<size_t>(l) * n + g) * E + e] = per_gpu * w[e] / sum;
          }
          const auto a = plain->simulate(loads);
          const auto b = rm->simulate(loads);
          // Same plan (copies per layer) either way, so the comparison is the schedule's alone.
          CHECK(test::resolved_json(*plain, "copies_per_layer") == test::resolved_json(*rm, "copies_per_layer"));
          CHECK(b.time >= a.time * (1 - 1e-12));
          const bool copies = a.memory.copy_params > 0;
          if (copies) CHECK(b.memory.total() < a.memory.total());
          else CHECK(b.memory.total() == a.memory.total());
          ++compared;
          with_copies += copies;
        }
      }
    }
  }
  CHECK(compared == 36);
  CHECK(with_copies > 0);
}
