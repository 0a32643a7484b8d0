// Node-limited routing (DeepSeek-V3 §2.1.2): the router and the generator's token-level mode.
#include <doctest/doctest.h>

#include <cmath>
#include <fmt/format.h>
#include <set>
#include <string>

#include "util/diagnostics.hpp"
#include "util/rng.hpp"
#include "workload/node_limited_routing.hpp"
#include "workload/trace_generator.hpp"
#include "workload/trace_io.hpp"

using namespace hs;
using namespace hs::workload;

namespace {

ModelSpec limited_model(int experts, int top_k, int groups, int max_nodes, int seq_len, int layers = 2) {
  return load_model(fmt::format(R"(schema: hecate-sim/model@1
name: nl-test
layers: {}
d_model: 64
d_ffn: 128
experts: {}
top_k: {}
route_groups: {}
max_nodes: {}
heads: 4
seq_len: {}
)", layers, experts, top_k, groups, max_nodes, seq_len), "m.yaml");
}

int groups_used(const std::vector<int>& experts, int group_size) {
  std::set<int> g;
  for (int e : experts) g.insert(e / group_size);
  return static_cast<int>(g.size());
}

}  // namespace

TEST_CASE("node-limited router: over seeds, no token's experts span more than max_nodes groups") {
  // Property: for any affinities, route() returns top_k distinct experts inside <= M of the G groups,
  // and they are the top_k of the chosen groups' experts.
  struct Case { int experts, top_k, groups, max_nodes; };
  for (const Case c : {Case{256, 8, 8, 4}, Case{64, 6, 8, 2}, Case{32, 4, 4, 1}, Case{16, 3, 4, 3}}) {
    CAPTURE(c.experts);
    CAPTURE(c.top_k);
    CAPTURE(c.groups);
    CAPTURE(c.max_nodes);
    NodeLimitedRouter router(c.experts, c.top_k, c.groups, c.max_nodes);
    std::vector<double> a(c.experts);
    std::vector<int> chosen;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      Rng rng(seed);
      // Skewed affinities (log-normal) so that the unrestricted top-k would often span more groups.
      for (double& v : a) v = std::exp(1.5 * rng.normal());
      router.route(a, chosen);
      REQUIRE(chosen.size() == static_cast<size_t>(c.top_k));
      CHECK(std::set<int>(chosen.begin(), chosen.end()).size() == chosen.size());
      CHECK(groups_used(chosen, c.experts / c.groups) <= c.max_nodes);
    }
  }
}

TEST_CASE("node-limited router: DeepSeek-V3's rule by hand") {
  // 8 experts in 4 groups of 2, top_k 2, at most 1 group: group scores are each group's top 2/1 = 2
  // affinities summed: g0 = 9+1 = 10, g1 = 5+5 = 10, g2 = 8+0 = 8, g3 = 2+2 = 4. g0 and g1 tie; the lower
  // index wins, so the token takes experts 0 and 1 (plain top-2 would take 0 and 4).
  NodeLimitedRouter router(8, 2, 4, 1);
  const std::vector<double> a = {9, 1, 5, 5, 8, 0, 2, 2};
  std::vector<int> chosen;
  router.route(a, chosen);
  CHECK(chosen == std::vector<int>{0, 1});
  NodeLimitedRouter plain(8, 2, 0, 0);
  plain.route(a, chosen);
  CHECK(chosen == std::vector<int>{0, 4});
  // Two groups allowed: a group scores its top 2/2 = 1 affinity: g0 = 9, g1 = 5, g2 = 8, g3 = 2; g0 and
  // g2 are kept and the top 2 of {9, 1, 8, 0} are experts 0 and 4.
  NodeLimitedRouter two(8, 2, 4, 2);
  two.route(a, chosen);
  CHECK(chosen == std::vector<int>{0, 4});
  // One group of {3, 9, 0, 0, 8, 8, 0, 0}: g0 = 12, g2 = 16 -> experts 4 and 5, not the best expert 1.
  const std::vector<double> b = {3, 9, 0, 0, 8, 8, 0, 0};
  router.route(b, chosen);
  CHECK(chosen == std::vector<int>{4, 5});
}

TEST_CASE("generator with max_nodes: over seeds, every token's experts lie in at most M groups") {
  // One token per source (seq_len 1, micro_batch 1): a source's counts of a layer are exactly one
  // token's choice, K ones, so the trace itself shows which groups each token used.
  const auto m = limited_model(64, 8, 8, 3, 1);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    const Trace t = generate_trace(m, "nl-test", 16, 3, *GeneratorParams::preset("concentrated"), "concentrated", seed);
    CHECK(t.tokens_per_source == 1);
    for (const auto& r : t.records)
      for (int l = 0; l < t.moe_layers; ++l)
        for (int s = 0; s < t.sources; ++s) {
          std::vector<int> experts;
          for (int e = 0; e < t.experts; ++e) {
            const uint32_t c = r.counts[(static_cast<size_t>(l) * t.sources + s) * t.experts + e];
            CHECK(c <= 1);
            if (c) experts.push_back(e);
          }
          CHECK(experts.size() == 8);
          CHECK(groups_used(experts, 8) <= 3);
        }
  }
}

TEST_CASE("generator with max_nodes: deterministic, invariants kept, provenance records the routing") {
  const auto m = limited_model(32, 4, 4, 2, 64);
  const auto p = *GeneratorParams::preset("aux_loss");
  const Trace a = generate_trace(m, "nl-test", 4, 5, p, "aux_loss", 3);
  const Trace b = generate_trace(m, "nl-test", 4, 5, p, "aux_loss", 3);
  CHECK(trace_to_json(a) == trace_to_json(b));
  CHECK(a.provenance_json.find("\"routing\": {\"route_groups\": 4, \"max_nodes\": 2}") != std::string::npos);
  for (const auto& r : a.records)
    for (int l = 0; l < a.moe_layers; ++l)
      for (int s = 0; s < a.sources; ++s) {
        uint64_t sum = 0;
        for (int e = 0; e < a.experts; ++e) {
          const uint32_t c = r.counts[(static_cast<size_t>(l) * a.sources + s) * a.experts + e];
          CHECK(c <= 64);  // a token takes an expert at most once
          sum += c;
        }
        CHECK(sum == 64u * 4);  // tokens x top_k
      }
  // Without the limit the same model routes multinomially, as before: other counts, no "routing".
  const auto plain = load_model(R"(schema: hecate-sim/model@1
name: nl-test
layers: 2
d_model: 64
d_ffn: 128
experts: 32
top_k: 4
heads: 4
seq_len: 64
)", "m.yaml");
  const Trace c = generate_trace(plain, "nl-test", 4, 5, p, "aux_loss", 3);
  CHECK(c.provenance_json.find("routing") == std::string::npos);
}

TEST_CASE("model: node-limited routing fields are checked") {
  auto bad = [](const std::string& extra) {
    try {
      load_model("schema: hecate-sim/model@1\nname: x\nlayers: 2\nd_model: 64\nd_ffn: 128\nexperts: 32\ntop_k: 4\n"
                 "heads: 4\nseq_len: 64\n" + extra, "m.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(bad("max_nodes: 2\n").find("route_groups") != std::string::npos);
  CHECK(bad("route_groups: 5\nmax_nodes: 2\n").find("must divide the 32 experts") != std::string::npos);
  CHECK(bad("route_groups: 4\nmax_nodes: 5\n").find("exceeds route_groups") != std::string::npos);
  CHECK(bad("route_groups: 16\nmax_nodes: 1\n").find("fewer than top_k") != std::string::npos);
  CHECK(bad("route_groups: 4\nmax_nodes: 2\n").empty());
}
