// MaxMinSolver::set_weight: a class losing (or gaining) members keeps its solver flow and takes
// the new weight, where the flow tier removed and re-added it. Max-min rates depend only on the
// live flows, so after every solve each rate must equal that of a fresh solver given the same
// flows at their current weights, whatever the mode: the component solve treats a lighter flow as
// a removal at its rate (flows below it keep theirs: at levels below its rate none of its links
// saturates, with less weight or more), the lazy re-fill seeds its links at that rate, and a
// heavier one is re-filled from 0 as an add. changed() must list exactly the flows whose rate moved
// (the flow tier re-projects only those, and keeps a reweighted class's projection otherwise).
#include <doctest/doctest.h>

#include <vector>

#include "solver/max_min_solver.hpp"
#include "util/rng.hpp"

using hs::solver::Element;
using hs::solver::MaxMinSolver;

namespace {
struct Spec {
  std::vector<Element> e;
  double w = 1, cap = MaxMinSolver::kUnlimited;
};
}  // namespace

TEST_CASE("property: set_weight then solve equals a fresh solve of the same flows, in every mode") {
  // Random links (capacity 1-100, some equal: ties), flows over 1-4 of them with coefficients 1 or
  // 0.5, weights 1-6, some capped (a few values), added, removed and reweighted (mostly a member
  // fewer, as a class finishing one; sometimes more) in random batches. Rates to 1e-9 relative of
  // a fresh component solve; changed() exactly the moved ones.
  hs::Rng rng(3303);
  long compared = 0, reweighted = 0;
  for (const auto mode : {MaxMinSolver::Mode::adaptive, MaxMinSolver::Mode::lazy, MaxMinSolver::Mode::component}) {
    for (int inst = 0; inst < 120; ++inst) {
      const int nl = 2 + static_cast<int>(rng.below(14));
      MaxMinSolver inc;
      inc.set_mode(mode);
      std::vector<double> caps;
      for (int l = 0; l < nl; ++l) caps.push_back(rng.uniform() < 0.3 ? 50.0 : 1 + 99 * rng.uniform()), inc.add_link(caps.back());
      std::vector<Spec> spec;
      std::vector<int> ids;
      std::vector<char> gone;
      for (int step = 0; step < 30; ++step) {
        const int adds = step % 3 == 2 ? 0 : static_cast<int>(rng.below(6));
        for (int k = 0; k < adds; ++k) {
          Spec sp;
          const int n = 1 + static_cast<int>(rng.below(4));
          for (int j = 0; j < n; ++j) {
            const int l = static_cast<int>(rng.below(static_cast<uint64_t>(nl)));
            bool dup = false;
            for (const auto& x : sp.e) dup |= x.link == l;
            if (!dup) sp.e.push_back({l, rng.uniform() < 0.3 ? 0.5 : 1.0});
          }
          sp.w = 1 + static_cast<double>(rng.below(6));
          sp.cap = rng.uniform() < 0.7 ? MaxMinSolver::kUnlimited : 2.0 * (1 + static_cast<double>(rng.below(3)));
          spec.push_back(sp);
          ids.push_back(inc.add_flow(sp.e, sp.w, sp.cap));
          gone.push_back(0);
        }
        for (size_t f = 0; f < ids.size(); ++f) {
          if (gone[f]) continue;
          const double u = rng.uniform();
          if (u < 0.1) {
            inc.remove_flow(ids[f]);
            gone[f] = 1;
          } else if (u < 0.35 && spec[f].w > 1) {
            spec[f].w -= 1;  // a member finished
            inc.set_weight(ids[f], spec[f].e, spec[f].w);
            ++reweighted;
          } else if (u < 0.4) {
            spec[f].w += 1;
            inc.set_weight(ids[f], spec[f].e, spec[f].w);
            ++reweighted;
          }
        }
        std::vector<double> before(static_cast<size_t>(inc.num_flows()), 0.0);
        for (size_t f = 0; f < ids.size(); ++f)
          if (!gone[f]) before[static_cast<size_t>(ids[f])] = inc.rate(ids[f]);
        inc.solve();
        std::vector<char> listed(static_cast<size_t>(inc.num_flows()), 0);
        for (int f : inc.changed()) listed[static_cast<size_t>(f)] = 1;
        MaxMinSolver fresh;
        fresh.set_mode(MaxMinSolver::Mode::component);
        for (double c : caps) fresh.add_link(c);
        std::vector<int> fid(ids.size(), -1);
        for (size_t f = 0; f < ids.size(); ++f)
          if (!gone[f]) fid[f] = fresh.add_flow(spec[f].e, spec[f].w, spec[f].cap);
        fresh.solve();
        int bad = 0, badlist = 0;
        for (size_t f = 0; f < ids.size(); ++f) {
          if (gone[f]) continue;
          if (!(inc.rate(ids[f]) == doctest::Approx(fresh.rate(fid[f])).epsilon(1e-9))) ++bad;
          if (static_cast<bool>(listed[static_cast<size_t>(ids[f])]) != (inc.rate(ids[f]) != before[static_cast<size_t>(ids[f])])) ++badlist;
          ++compared;
        }
        CHECK(bad == 0);
        CHECK(badlist == 0);
      }
    }
  }
  CHECK(reweighted > 10000);
  CHECK(compared > 50000);
}
