#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "solver/max_min_solver.hpp"
#include "util/rng.hpp"
#include "support/approx.hpp"
#include "support/random_elements.hpp"

using hs::solver::Element;
using hs::solver::MaxMinSolver;

TEST_CASE("two flows on one 400 Gbps link get 200 each; a third limited to 50 elsewhere leaves 175/175") {
  MaxMinSolver s;
  const int big = s.add_link(400), small = s.add_link(50);  // Gbps, units do not matter
  Element on_big[] = {{big, 1.0}};
  const int a = s.add_flow(on_big), b = s.add_flow(on_big);
  s.solve();
  CHECK(s.rate(a) == hs::test::approx(200));
  CHECK(s.rate(b) == hs::test::approx(200));
  // Third flow crosses both: bottlenecked at 50 by the small link; 400 - 50 = 350 shared by a, b.
  Element both[] = {{big, 1.0}, {small, 1.0}};
  const int c = s.add_flow(both);
  s.solve();
  CHECK(s.rate(c) == hs::test::approx(50));
  CHECK(s.rate(a) == hs::test::approx(175));
  CHECK(s.rate(b) == hs::test::approx(175));
  // Removing c gives its share back.
  s.remove_flow(c);
  s.solve();
  CHECK(s.rate(a) == hs::test::approx(200));
}

TEST_CASE("eight flows behind one NIC each get an eighth; a class of multiplicity 8 equals 8 flows") {
  MaxMinSolver s;
  const int nic = s.add_link(100);
  std::vector<int> up;
  for (int i = 0; i < 8; ++i) up.push_back(s.add_link(1000));
  std::vector<int> f;
  for (int i = 0; i < 8; ++i) {
    Element e[] = {{up[i], 1.0}, {nic, 1.0}};
    f.push_back(s.add_flow(e));
  }
  s.solve();
  for (int x : f) CHECK(s.rate(x) == hs::test::approx(100.0 / 8));
  MaxMinSolver t;
  const int nic2 = t.add_link(100);
  Element e[] = {{nic2, 1.0}};
  const int cls = t.add_flow(e, 8.0);
  t.solve();
  CHECK(t.rate(cls) == hs::test::approx(100.0 / 8));
  CHECK(t.link_load(nic2) == hs::test::approx(100));
}

TEST_CASE("coefficients: an ECMP-split flow consumes half its rate on each of two spines") {
  // Flow over uplink 100 and two spines of 30 with coefficient 0.5 each: each spine limits the
  // rate to 30 / 0.5 = 60, so the flow gets 60.
  MaxMinSolver s;
  const int up = s.add_link(100), s1 = s.add_link(30), s2 = s.add_link(30);
  Element e[] = {{up, 1.0}, {s1, 0.5}, {s2, 0.5}};
  const int f = s.add_flow(e);
  s.solve();
  CHECK(s.rate(f) == hs::test::approx(60));
}

TEST_CASE("rate caps act as private links; flows crossing nothing get their cap") {
  MaxMinSolver s;
  const int l = s.add_link(100);
  Element e[] = {{l, 1.0}};
  const int capped = s.add_flow(e, 1.0, 10), free = s.add_flow(e);
  s.solve();
  CHECK(s.rate(capped) == hs::test::approx(10));
  CHECK(s.rate(free) == hs::test::approx(90));
}

TEST_CASE("disjoint components are not re-solved") {
  MaxMinSolver s;
  const int l1 = s.add_link(10), l2 = s.add_link(10);
  Element a[] = {{l1, 1.0}}, b[] = {{l2, 1.0}};
  s.add_flow(a);
  s.add_flow(b);
  s.solve();
  const auto before = s.stats().flows_recomputed;
  s.add_flow(a);  // touches only l1's component: 2 flows recomputed
  s.solve();
  CHECK(s.stats().flows_recomputed - before == 2);
}

TEST_CASE("property: incremental solves equal a from-scratch solve, and the max-min certificate holds") {
  hs::Rng rng(5);
  for (int inst = 0; inst < 200; ++inst) {
    const int nl = 2 + static_cast<int>(rng.below(8));
    MaxMinSolver inc;
    std::vector<double> caps;
    for (int l = 0; l < nl; ++l) caps.push_back(1 + 99 * rng.uniform()), inc.add_link(caps.back());
    std::vector<std::vector<Element>> flows;
    std::vector<int> ids;
    const int nf = 1 + static_cast<int>(rng.below(12));
    for (int f = 0; f < nf; ++f) {
      std::vector<Element> e;
      for (int l = 0; l < nl; ++l)
        if (rng.uniform() < 0.35) e.push_back({l, 1.0});
      if (e.empty()) e.push_back({static_cast<int>(rng.below(nl)), 1.0});
      flows.push_back(e);
      ids.push_back(inc.add_flow(e));
      if (rng.uniform() < 0.5) inc.solve();
    }
    // Remove a few, then solve.
    std::vector<char> gone(nf, 0);
    for (int f = 0; f < nf; ++f)
      if (rng.uniform() < 0.2) inc.remove_flow(ids[f]), gone[f] = 1;
    inc.solve();
    MaxMinSolver fresh;
    for (double c : caps) fresh.add_link(c);
    std::vector<int> fid(nf, -1);
    for (int f = 0; f < nf; ++f)
      if (!gone[f]) fid[f] = fresh.add_flow(flows[f]);
    fresh.solve();
    for (int f = 0; f < nf; ++f) {
      if (gone[f]) continue;
      CHECK(inc.rate(ids[f]) == doctest::Approx(fresh.rate(fid[f])).epsilon(1e-9));
      // Certificate: the flow crosses a saturated link on which no flow has a higher rate.
      bool bottlenecked = false;
      for (const auto& e : flows[f]) {
        const double load = fresh.link_load(e.link);
        bool highest = true;
        for (int g = 0; g < nf; ++g)
          if (!gone[g])
            for (const auto& x : flows[g])
              if (x.link == e.link && fresh.rate(fid[g]) > fresh.rate(fid[f]) * (1 + 1e-9)) highest = false;
        if (load >= caps[e.link] * (1 - 1e-9) && highest) bottlenecked = true;
      }
      CHECK(bottlenecked);
    }
    for (int l = 0; l < nl; ++l) CHECK(fresh.link_load(l) <= caps[l] * (1 + 1e-9));
  }
}

TEST_CASE("property: removal-only re-solves (which keep the slower flows' rates) equal a from-scratch solve") {
  hs::Rng rng(11);
  for (int inst = 0; inst < 300; ++inst) {
    const int nl = 2 + static_cast<int>(rng.below(10));
    MaxMinSolver inc;
    std::vector<double> caps;
    for (int l = 0; l < nl; ++l) caps.push_back(1 + 99 * rng.uniform()), inc.add_link(caps.back());
    std::vector<std::vector<Element>> flows;
    std::vector<int> ids;
    const int nf = 2 + static_cast<int>(rng.below(20));
    for (int f = 0; f < nf; ++f) {
      std::vector<Element> e;
      for (int l = 0; l < nl; ++l)
        if (rng.uniform() < 0.3) e.push_back({l, rng.uniform() < 0.3 ? 0.5 : 1.0});
      if (e.empty()) e.push_back({static_cast<int>(rng.below(nl)), 1.0});
      flows.push_back(e);
      ids.push_back(inc.add_flow(e));
    }
    inc.solve();
    std::vector<char> gone(nf, 0);
    for (int round = 0; round < 3; ++round) {
      for (int f = 0; f < nf; ++f)
        if (!gone[f] && rng.uniform() < 0.25) inc.remove_flow(ids[f]), gone[f] = 1;
      inc.solve();
      MaxMinSolver fresh;
      for (double c : caps) fresh.add_link(c);
      std::vector<int> fid(nf, -1);
      for (int f = 0; f < nf; ++f)
        if (!gone[f]) fid[f] = fresh.add_flow(flows[f]);
      fresh.solve();
      for (int f = 0; f < nf; ++f)
        if (!gone[f]) CHECK(inc.rate(ids[f]) == doctest::Approx(fresh.rate(fid[f])).epsilon(1e-7));
    }
  }
}

TEST_CASE("property: changed() lists exactly the live flows whose rate a solve changed") {
  // Random add/remove sequences; after each solve, a flow is in changed() iff its rate differs from
  // its rate before the solve (a new flow counts as changed from 0). Callers that integrate flow
  // progress rely on this to touch only those flows.
  hs::Rng rng(23);
  for (int inst = 0; inst < 100; ++inst) {
    MaxMinSolver s;
    const int nl = 2 + static_cast<int>(rng.below(6));
    for (int l = 0; l < nl; ++l) s.add_link(1 + 9 * rng.uniform());
    std::vector<int> live;
    std::vector<double> before;
    for (int step = 0; step < 30; ++step) {
      if (!live.empty() && rng.uniform() < 0.4) {
        const size_t k = rng.below(live.size());
        s.remove_flow(live[k]);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        std::vector<Element> e;
        for (int l = 0; l < nl; ++l)
          if (rng.uniform() < 0.4) e.push_back({l, rng.uniform() < 0.2 ? 0.5 : 1.0});
        if (e.empty()) e.push_back({static_cast<int>(rng.below(nl)), 1.0});
        live.push_back(s.add_flow(e));
      }
      before.assign(static_cast<size_t>(s.num_flows()), 0.0);
      for (int f : live) before[f] = s.rate(f);  // a flow added in this step reads 0
      s.solve();
      std::vector<char> listed(static_cast<size_t>(s.num_flows()), 0);
      for (int f : s.changed()) listed[f] = 1;
      for (int f : live) CHECK(static_cast<bool>(listed[f]) == (s.rate(f) != before[f]));
    }
  }
}

TEST_CASE("tiny coefficients: rates come out whatever the scale (no absolute threshold on a link's weights)") {
  // The coflow tier normalizes capacities to 1 and gives a coflow the coefficient bytes / capacity:
  // on a 1e13 B/s link that is ~1e-13 per byte of load. Two flows of coefficient 1e-13 on a link of
  // capacity 1 share it: each 1 / (2 x 1e-13) = 5e12. A third crossing it and a link of capacity 1
  // with coefficient 1e-12 there is held to 1e12 by it; the first two then get (1 - 1e12 x 1e-13) /
  // (2e-13) = 4.5e12 each.
  MaxMinSolver s;
  const int l = s.add_link(1.0), m = s.add_link(1.0);
  Element on_l[] = {{l, 1e-13}};
  const int a = s.add_flow(on_l), b = s.add_flow(on_l);
  s.solve();
  CHECK(s.rate(a) == hs::test::approx(5e12));
  CHECK(s.rate(b) == hs::test::approx(5e12));
  Element both[] = {{l, 1e-13}, {m, 1e-12}};
  const int c = s.add_flow(both);
  s.solve();
  CHECK(s.rate(c) == hs::test::approx(1e12));
  CHECK(s.rate(a) == hs::test::approx(4.5e12));
  CHECK(s.rate(b) == hs::test::approx(4.5e12));
}

TEST_CASE("property: a rate cap acts as a private link of that capacity, with few or many distinct caps") {
  // Few distinct caps take the solver's bucket order of capped flows, many (> 16) a full sort; both
  // must freeze them as private links would.
  hs::Rng rng(11);
  for (int inst = 0; inst < 300; ++inst) {
    const bool few = inst % 2 == 0;
    const int nl = 2 + static_cast<int>(rng.below(6));
    std::vector<double> caps;
    for (int l = 0; l < nl; ++l) caps.push_back(1 + 99 * rng.uniform());
    const double menu[3] = {5 + 10 * rng.uniform(), 20 + 10 * rng.uniform(), 40 + 10 * rng.uniform()};
    MaxMinSolver capped, priv;
    for (double c : caps) capped.add_link(c), priv.add_link(c);
    const int nf = 1 + static_cast<int>(rng.below(40));
    std::vector<int> cid(nf), pid(nf);
    for (int f = 0; f < nf; ++f) {
      std::vector<Element> e;
      for (int l = 0; l < nl; ++l)
        if (rng.uniform() < 0.35) e.push_back({l, 1.0});
      if (e.empty()) e.push_back({static_cast<int>(rng.below(nl)), 1.0});
      const double w = 1 + static_cast<double>(rng.below(3));
      double cap = MaxMinSolver::kUnlimited;
      if (rng.uniform() < 0.7) cap = few ? menu[rng.below(3)] : 1 + 60 * rng.uniform();
      cid[f] = capped.add_flow(e, w, cap);
      if (cap < MaxMinSolver::kUnlimited) e.push_back({priv.add_link(cap), 1.0 / w});  // w members x 1/w x rate = rate
      pid[f] = priv.add_flow(e, w);
    }
    capped.solve();
    priv.solve();
    std::vector<char> gone(nf, 0);
    for (int f = 0; f < nf; ++f)
      if (rng.uniform() < 0.3) capped.remove_flow(cid[f]), priv.remove_flow(pid[f]), gone[f] = 1;
    capped.solve();
    priv.solve();
    for (int f = 0; f < nf; ++f)
      if (!gone[f]) CHECK(capped.rate(cid[f]) == doctest::Approx(priv.rate(pid[f])).epsilon(1e-9));
  }
}

namespace {
// `groups` disjoint sets of `links` links each; a flow of group g crosses 1-3 of g's links, some
// with coefficient 0.5, some with a cap.
struct Grouped {
  std::vector<double> caps;
  std::vector<std::vector<Element>> flows;
  std::vector<int> group;
  std::vector<double> weight, cap;
};
std::vector<Element> random_route(hs::Rng& rng, int g, int links) {
  std::vector<Element> e;
  const int k = 1 + static_cast<int>(rng.below(3));
  for (int i = 0; i < k; ++i) {
    const int l = g * links + static_cast<int>(rng.below(links));
    bool dup = false;
    for (const auto& x : e) dup = dup || x.link == l;
    if (!dup) e.push_back({l, rng.uniform() < 0.2 ? 0.5 : 1.0});
  }
  return e;
}
// A flow as given to add_flow, for tests that rebuild the same problem in a fresh solver.
struct FlowSpec {
  std::vector<Element> e;
  double w = 1, cap = MaxMinSolver::kUnlimited;
};

using hs::test::random_elements;

// Solves `inc` and compares it with a fresh component solve of its live flows (spec[k] added as
// ids[k] unless gone[k]): returns the flows whose rate differs by more than 1e-9 (relative), and
// those whose listing in changed() disagrees with whether their rate moved in this solve.
std::pair<int, int> solve_and_compare(MaxMinSolver& inc, const std::vector<double>& caps, const std::vector<FlowSpec>& spec,
                                      const std::vector<int>& ids, const std::vector<char>& gone) {
  std::vector<double> before(static_cast<size_t>(inc.num_flows()), 0.0);
  for (size_t f = 0; f < ids.size(); ++f)
    if (!gone[f]) before[ids[f]] = inc.rate(ids[f]);
  inc.solve();
  std::vector<char> listed(static_cast<size_t>(inc.num_flows()), 0);
  for (int f : inc.changed()) listed[f] = 1;
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
    if (static_cast<bool>(listed[ids[f]]) != (inc.rate(ids[f]) != before[ids[f]])) ++badlist;
  }
  return {bad, badlist};
}

// Random problems in every mode (120 each): links of capacity 1-100 (some equal: ties), then 30
// steps, each adding up to max_adds - 1 flows (none every third step) over 1-4 links with
// coefficients 1 or 0.5, weights 1 to max_weight, some capped (2, 4 or 6), then offering every live
// flow to `change(inc, spec, id)`, which may edit it (keeping `spec` its twin) and returns true to
// have it removed; every step ends in solve_and_compare, which must find no difference.
template <class Change>
void random_edits_in_every_mode(hs::Rng& rng, uint64_t max_adds, uint64_t max_weight, Change change) {
  for (const auto mode : {MaxMinSolver::Mode::adaptive, MaxMinSolver::Mode::lazy, MaxMinSolver::Mode::component}) {
    for (int inst = 0; inst < 120; ++inst) {
      const int nl = 2 + static_cast<int>(rng.below(14));
      MaxMinSolver inc;
      inc.set_mode(mode);
      std::vector<double> caps;
      for (int l = 0; l < nl; ++l) caps.push_back(rng.uniform() < 0.3 ? 50.0 : 1 + 99 * rng.uniform()), inc.add_link(caps.back());
      std::vector<FlowSpec> spec;
      std::vector<int> ids;
      std::vector<char> gone;
      for (int step = 0; step < 30; ++step) {
        const int adds = step % 3 == 2 ? 0 : static_cast<int>(rng.below(max_adds));
        for (int k = 0; k < adds; ++k) {
          FlowSpec sp;
          sp.e = random_elements(rng, nl);
          sp.w = 1 + static_cast<double>(rng.below(max_weight));
          sp.cap = rng.uniform() < 0.7 ? MaxMinSolver::kUnlimited : 2.0 * (1 + static_cast<double>(rng.below(3)));
          spec.push_back(sp);
          ids.push_back(inc.add_flow(sp.e, sp.w, sp.cap));
          gone.push_back(0);
        }
        for (size_t f = 0; f < ids.size(); ++f) {
          if (gone[f] || !change(inc, spec[f], ids[f])) continue;
          inc.remove_flow(ids[f]);
          gone[f] = 1;
        }
        const auto [bad, badlist] = solve_and_compare(inc, caps, spec, ids, gone);
        CHECK(bad == 0);
        CHECK(badlist == 0);
      }
    }
  }
}
}  // namespace

TEST_CASE("1,024+ flows in two disjoint components: an event in one leaves the other's rates bit-identical") {
  hs::Rng rng(21);
  const int links = 16;
  MaxMinSolver s, alone;  // `alone` holds only component 1's flows, added in the same order
  for (int l = 0; l < 2 * links; ++l) {
    const double c = 10 + 90 * rng.uniform();
    s.add_link(c);
    alone.add_link(c);
  }
  struct Spec {
    std::vector<Element> e;
    double w, cap;
  };
  std::vector<int> ids[2], alone_ids;
  std::vector<Spec> spec[2];
  for (int i = 0; i < 1400; ++i) {
    const int g = i % 2;
    Spec sp{random_route(rng, g, links), 1 + static_cast<double>(rng.below(4)),
            rng.uniform() < 0.2 ? 1 + 5 * rng.uniform() : MaxMinSolver::kUnlimited};
    ids[g].push_back(s.add_flow(sp.e, sp.w, sp.cap));
    if (g == 1) alone_ids.push_back(alone.add_flow(sp.e, sp.w, sp.cap));
    spec[g].push_back(sp);
  }
  s.solve();  // one solve of both (every live flow: the sweep)
  alone.solve();
  for (size_t i = 0; i < ids[1].size(); ++i) CHECK(s.rate(ids[1][i]) == alone.rate(alone_ids[i]));
  std::vector<double> before;
  for (int f : ids[1]) before.push_back(s.rate(f));
  // Events in component 0 only, removals then additions: component 1 is not re-solved.
  for (int round = 0; round < 6; ++round) {
    const auto recomputed = s.stats().flows_recomputed;
    if (round % 2 == 0) {
      for (int k = 0; k < 50; ++k) {
        const size_t at = rng.below(ids[0].size());
        s.remove_flow(ids[0][at]);
        ids[0].erase(ids[0].begin() + static_cast<std::ptrdiff_t>(at));
        spec[0].erase(spec[0].begin() + static_cast<std::ptrdiff_t>(at));
      }
    } else {
      for (int k = 0; k < 40; ++k) {
        spec[0].push_back({random_route(rng, 0, links), 1.0, MaxMinSolver::kUnlimited});
        ids[0].push_back(s.add_flow(spec[0].back().e));
      }
    }
    s.solve();
    // The lazy re-fill recomputes at most component 0's flows (those the event can reach).
    CHECK(s.stats().flows_recomputed - recomputed <= ids[0].size());
    for (size_t i = 0; i < ids[1].size(); ++i) CHECK(s.rate(ids[1][i]) == before[i]);
  }
  // The result equals a full solve of the same flows.
  MaxMinSolver fresh;
  for (int l = 0; l < 2 * links; ++l) fresh.add_link(s.capacity(l));
  for (int g = 0; g < 2; ++g) {
    std::vector<int> fid;
    for (const auto& sp : spec[g]) fid.push_back(fresh.add_flow(sp.e, sp.w, sp.cap));
    fresh.solve();
    for (size_t i = 0; i < fid.size(); ++i) CHECK(s.rate(ids[g][i]) == doctest::Approx(fresh.rate(fid[i])).epsilon(1e-9));
  }
}

TEST_CASE("property: with 1,024+ flows in several components, incremental component solves equal a full solve") {
  hs::Rng rng(23);
  int sweeps = 0, searches = 0;
  for (int inst = 0; inst < 6; ++inst) {
    const int groups = 2 + static_cast<int>(rng.below(5)), links = 4 + static_cast<int>(rng.below(12));
    Grouped p;
    MaxMinSolver inc;
    for (int l = 0; l < groups * links; ++l) p.caps.push_back(1 + 99 * rng.uniform()), inc.add_link(p.caps.back());
    std::vector<int> ids;
    std::vector<char> gone;
    const auto add = [&](int g) {
      p.flows.push_back(random_route(rng, g, links));
      p.group.push_back(g);
      p.weight.push_back(1 + static_cast<double>(rng.below(3)));
      p.cap.push_back(rng.uniform() < 0.15 ? 1 + 10 * rng.uniform() : MaxMinSolver::kUnlimited);
      ids.push_back(inc.add_flow(p.flows.back(), p.weight.back(), p.cap.back()));
      gone.push_back(0);
    };
    // A flow joining two groups now and then (a data-parallel all-reduce across EP groups), removed later.
    for (int i = 0; i < 1200; ++i) add(static_cast<int>(rng.below(groups)));
    inc.solve();
    for (int ev = 0; ev < 40; ++ev) {
      const int g = static_cast<int>(rng.below(groups));
      std::vector<double> old(ids.size());
      for (size_t f = 0; f < ids.size(); ++f) old[f] = gone[f] ? 0 : inc.rate(ids[f]);
      const int kind = static_cast<int>(rng.below(3));
      std::vector<char> touched(groups, 0);
      touched[g] = 1;
      if (kind == 0) {
        for (size_t f = 0; f < ids.size(); ++f)
          if (!gone[f] && p.group[f] == g && rng.uniform() < 0.1) inc.remove_flow(ids[f]), gone[f] = 1;
      } else if (kind == 1) {
        for (int k = 0; k < 20; ++k) add(g);
      } else {
        // A bridge between g and another group: joins their components while it lives.
        const int h = (g + 1) % groups;
        auto e = random_route(rng, g, links);
        e.push_back({h * links + static_cast<int>(rng.below(links)), 1.0});
        p.flows.push_back(e);
        p.group.push_back(-1);
        p.weight.push_back(1);
        p.cap.push_back(MaxMinSolver::kUnlimited);
        ids.push_back(inc.add_flow(e));
        gone.push_back(0);
        touched[h] = 1;
      }
      // Bridges die after a few events.
      if (rng.uniform() < 0.3)
        for (size_t f = 0; f < ids.size(); ++f)
          if (!gone[f] && p.group[f] == -1) {
            inc.remove_flow(ids[f]), gone[f] = 1;
            for (const auto& x : p.flows[f]) touched[x.link / links] = 1;
          }
      // Any live bridge joins the groups it crosses, transitively.
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t f = 0; f < ids.size(); ++f) {
          if (gone[f] || p.group[f] != -1) continue;
          bool any = false, all = true;
          for (const auto& x : p.flows[f]) any = any || touched[x.link / links], all = all && touched[x.link / links];
          if (any && !all) {
            for (const auto& x : p.flows[f]) touched[x.link / links] = 1;
            grew = true;
          }
        }
      }
      const auto recomputed = inc.stats().flows_recomputed;
      inc.solve();
      size_t live = 0;
      for (char x : gone) live += !x;
      // Flows in components no event touched keep their rates: bit for bit when the solve re-solved
      // only the touched component(s); a re-solve of every live flow (when they hold 90% of them)
      // recomputes the others too, which may differ in the last bits when rates were kept.
      const bool everything = inc.stats().flows_recomputed - recomputed == live;
      (everything ? sweeps : searches) += 1;
      for (size_t f = 0; f < old.size(); ++f)
        if (!gone[f] && p.group[f] >= 0 && !touched[p.group[f]]) {
          if (everything)
            CHECK(inc.rate(ids[f]) == doctest::Approx(old[f]).epsilon(1e-12));
          else
            CHECK(inc.rate(ids[f]) == old[f]);
        }
      if (ev % 10 != 9) continue;
      MaxMinSolver fresh;
      for (double c : p.caps) fresh.add_link(c);
      std::vector<int> fid(ids.size(), -1);
      for (size_t f = 0; f < ids.size(); ++f)
        if (!gone[f]) fid[f] = fresh.add_flow(p.flows[f], p.weight[f], p.cap[f]);
      fresh.solve();
      for (size_t f = 0; f < ids.size(); ++f)
        if (!gone[f]) CHECK(inc.rate(ids[f]) == doctest::Approx(fresh.rate(fid[f])).epsilon(1e-9));
    }
  }
  CHECK(searches > 100);
  MESSAGE(sweeps, " sweeps, ", searches, " component searches");
}

TEST_CASE("remove_flows (a batch, clearing the links it empties) equals remove_flow one by one, bit for bit") {
  // Twin solvers, the same adds; one removes batches with remove_flows, the other flow by flow in the
  // same order. Every batch empties some links (it takes every flow crossing links 0-3) and thins the
  // others (40% of the rest). Rates, changed() lists, reused ids and link loads (summed in link-list
  // order) must agree exactly.
  hs::Rng rng(57);
  const int links = 24;
  MaxMinSolver bulk, one;
  for (int l = 0; l < links; ++l) {
    const double c = 10 + 90 * rng.uniform();
    bulk.add_link(c);
    one.add_link(c);
  }
  std::vector<int> live;
  std::vector<std::vector<Element>> route;  // by id
  const auto add = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const auto e = random_route(rng, 0, links);
      const double w = 1 + static_cast<double>(rng.below(3));
      const double cap = rng.uniform() < 0.1 ? 1 + 5 * rng.uniform() : MaxMinSolver::kUnlimited;
      const int id = bulk.add_flow(e, w, cap);
      REQUIRE(one.add_flow(e, w, cap) == id);
      if (static_cast<size_t>(id) >= route.size()) route.resize(id + 1);
      route[id] = e;
      live.push_back(id);
    }
  };
  const auto same = [&] {
    bulk.solve();
    one.solve();
    CHECK(std::vector<int>(bulk.changed().begin(), bulk.changed().end()) ==
          std::vector<int>(one.changed().begin(), one.changed().end()));
    for (int f : live) CHECK(bulk.rate(f) == one.rate(f));
    for (int l = 0; l < links; ++l) CHECK(bulk.link_load(l) == one.link_load(l));
  };
  add(1500);
  same();
  for (int round = 0; round < 4; ++round) {
    std::vector<int> batch, keep;
    for (int f : live) {
      bool low = false;
      for (const auto& x : route[f]) low = low || x.link < 4;
      (low || rng.uniform() < 0.4 ? batch : keep).push_back(f);
    }
    if (round % 2) std::reverse(batch.begin(), batch.end());  // any order, not only ascending ids
    bulk.remove_flows(batch);
    for (int f : batch) one.remove_flow(f);
    live = keep;
    same();
    for (int l = 0; l < 4; ++l) CHECK(bulk.link_load(l) == 0);
    add(300 + 100 * round);
    same();
  }
}

TEST_CASE("property: the lazy re-fill equals a from-scratch component solve over random add/remove sequences") {
  // Random links (capacity 1-100), flows crossing 1-4 of them with coefficients 1 or 0.5 (ECMP
  // halves), weights 1-4 (classes), caps from a few values (an NCCL connection's channels) or all
  // distinct (more than the 16 cap groups: one event per flow), added and removed in random
  // batches. After every solve, each live flow's rate equals that of a fresh solver that re-fills
  // everything from 0 with the component algorithm (set_lazy(false)), to 1e-9; changed() lists
  // exactly the flows whose rate moved.
  hs::Rng rng(77);
  int released = 0;
  for (int inst = 0; inst < 150; ++inst) {
    const int nl = 2 + static_cast<int>(rng.below(12));
    const bool many_caps = inst % 3 == 2;
    MaxMinSolver inc;
    inc.set_mode(MaxMinSolver::Mode::lazy);
    std::vector<double> caps;
    for (int l = 0; l < nl; ++l) caps.push_back(1 + 99 * rng.uniform()), inc.add_link(caps.back());
    std::vector<FlowSpec> spec;
    std::vector<int> ids;
    std::vector<char> gone;
    for (int step = 0; step < 25; ++step) {
      const int adds = static_cast<int>(rng.below(6)), removes = static_cast<int>(rng.below(4));
      for (int k = 0; k < adds; ++k) {
        FlowSpec sp;
        sp.e = random_elements(rng, nl);
        sp.w = 1 + static_cast<double>(rng.below(4));
        const double u = rng.uniform();
        sp.cap = u < 0.6 ? MaxMinSolver::kUnlimited
                         : (many_caps ? 0.5 + 20 * rng.uniform() : 2.0 * (1 + static_cast<double>(rng.below(3))));
        spec.push_back(sp);
        ids.push_back(inc.add_flow(sp.e, sp.w, sp.cap));
        gone.push_back(0);
      }
      for (int k = 0; k < removes && !ids.empty(); ++k) {
        const size_t at = rng.below(ids.size());
        if (gone[at]) continue;
        inc.remove_flow(ids[at]);
        gone[at] = 1;
      }
      const auto [bad, badlist] = solve_and_compare(inc, caps, spec, ids, gone);
      CHECK(bad == 0);
      CHECK(badlist == 0);
    }
    released += static_cast<int>(inc.stats().flows_recomputed);
  }
  CHECK(released > 0);  // the re-fill ran
}

TEST_CASE("property: the lazy re-fill on all-to-alls (equal NIC capacities, many ties) equals a fresh solve") {
  // N GPUs, an egress and an ingress link each (equal capacities: levels tie across links), a flow
  // per ordered pair, some behind a shared uplink; flows finish in random batches, as an
  // all-to-all-v's do. Every solve equals a fresh component solve to 1e-9.
  hs::Rng rng(91);
  for (int inst = 0; inst < 12; ++inst) {
    const int n = 8 + 8 * (inst % 4);
    MaxMinSolver inc;
    inc.set_mode(MaxMinSolver::Mode::lazy);
    std::vector<double> caps;
    for (int l = 0; l < 2 * n; ++l) caps.push_back(inst % 2 ? 10.0 : 10.0 * (1 + static_cast<int>(rng.below(3)))), inc.add_link(caps.back());
    std::vector<std::vector<Element>> spec;
    std::vector<double> fcap;
    std::vector<int> ids;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d)
        if (s != d) {
          spec.push_back({{s, 1.0}, {n + d, 1.0}});
          fcap.push_back(inst % 3 == 0 ? MaxMinSolver::kUnlimited : (s / 8 == d / 8 ? 0.9 : 0.35));
          ids.push_back(inc.add_flow(spec.back(), 1.0, fcap.back()));
        }
    std::vector<char> gone(ids.size(), 0);
    inc.solve();
    for (int step = 0; step < 40; ++step) {
      for (size_t f = 0; f < ids.size(); ++f)
        if (!gone[f] && rng.uniform() < 0.05) inc.remove_flow(ids[f]), gone[f] = 1;
      inc.solve();
      MaxMinSolver fresh;
      fresh.set_mode(MaxMinSolver::Mode::component);
      for (double c : caps) fresh.add_link(c);
      std::vector<int> fid(ids.size(), -1);
      for (size_t f = 0; f < ids.size(); ++f)
        if (!gone[f]) fid[f] = fresh.add_flow(spec[f], 1.0, fcap[f]);
      fresh.solve();
      int bad = 0;
      for (size_t f = 0; f < ids.size(); ++f)
        if (!gone[f] && !(inc.rate(ids[f]) == doctest::Approx(fresh.rate(fid[f])).epsilon(1e-9))) ++bad;
      CHECK(bad == 0);
      if (bad) {
        MESSAGE("instance ", inst, " step ", step);
        break;
      }
    }
  }
}

TEST_CASE("re-fill: a link that bounds no flow loses one, and nothing is recomputed") {
  // A (10) carries f1 and f2: 5 each. B (100) carries f1 and f3; C (4) carries f3 alone: f3 = 4,
  // so B carries 9 of 100 and bounds nobody. Removing f3 frees C (nobody else) and B (bounds
  // nobody): no rate can change, and the re-fill touches no flow. Removing f2 then frees A, which
  // bounds f1: f1 rises to 10 (A's capacity, B's 100 allows it).
  MaxMinSolver s;
  s.set_mode(MaxMinSolver::Mode::lazy);
  const int a = s.add_link(10), b = s.add_link(100), c = s.add_link(4);
  const Element e1[] = {{a, 1.0}, {b, 1.0}}, e2[] = {{a, 1.0}}, e3[] = {{b, 1.0}, {c, 1.0}};
  const int f1 = s.add_flow(e1), f2 = s.add_flow(e2), f3 = s.add_flow(e3);
  s.solve();
  CHECK(s.rate(f1) == doctest::Approx(5));
  CHECK(s.rate(f3) == doctest::Approx(4));
  const auto before = s.stats().flows_recomputed;
  s.remove_flow(f3);
  s.solve();
  CHECK(s.stats().flows_recomputed == before);
  CHECK(s.changed().empty());
  CHECK(s.rate(f1) == doctest::Approx(5));
  CHECK(s.rate(f2) == doctest::Approx(5));
  s.remove_flow(f2);
  s.solve();
  CHECK(s.rate(f1) == doctest::Approx(10));
  REQUIRE(s.changed().size() == 1);
  CHECK(s.changed()[0] == f1);
}

TEST_CASE("re-fill: a link's list carries its flows' weights, kept by set_weight and by removals that move entries") {
  // A link's flow list holds each flow's weight x coef (a copy of its element's), which a link
  // joining the re-fill sums. Link L (120) carries a (weight 1), c (1) and b (3): 5 members, 24
  // each. b loses a member (set_weight 2): 4 members, 30 each. Removing a moves the list's last
  // entry (b) into a's place: b and c are left, 3 members, 40 each. A stale copy of b's weight
  // (3, or a's 1 moved with the entry) would give 30 or 60.
  for (const auto mode : {MaxMinSolver::Mode::lazy, MaxMinSolver::Mode::component, MaxMinSolver::Mode::adaptive}) {
    MaxMinSolver s;
    s.set_mode(mode);
    const int l = s.add_link(120);
    const Element e[] = {{l, 1.0}};
    const int a = s.add_flow(e, 1.0), c = s.add_flow(e, 1.0), b = s.add_flow(e, 3.0);
    s.solve();
    CHECK(s.rate(b) == doctest::Approx(24));
    s.set_weight(b, e, 2.0);
    s.solve();
    CHECK(s.rate(b) == doctest::Approx(30));
    CHECK(s.rate(c) == doctest::Approx(30));
    s.remove_flow(a);
    s.solve();
    CHECK(s.rate(b) == doctest::Approx(40));
    CHECK(s.rate(c) == doctest::Approx(40));
    CHECK(s.link_load(l) == doctest::Approx(120));
  }
}

TEST_CASE("property: the lazy re-fill at medium scale (hundreds of flows, shared cores, classes, ECMP, caps)") {
  // 16 GPUs' egress and ingress links (capacity 10), 4 leaf uplinks and downlinks (capacity 25) and
  // 2 spines (40): a flow from GPU s to GPU d crosses s's egress, d's ingress and, across leaves
  // (4 GPUs per leaf), the two leaves' up/down links and a spine (half each over both spines when
  // split: coefficient 0.5). Weights 1-3, a third of the flows capped (3 or 7), hundreds of flows
  // added and removed in batches as collectives start and drain; every solve equals a fresh
  // component solve to 1e-9, and changed() is exact.
  hs::Rng rng(404);
  const int gpus = 16;
  for (int inst = 0; inst < 6; ++inst) {
    MaxMinSolver inc;
    inc.set_mode(inst % 2 ? MaxMinSolver::Mode::lazy : MaxMinSolver::Mode::adaptive);
    std::vector<double> caps;
    for (int l = 0; l < 2 * gpus; ++l) caps.push_back(10);
    for (int l = 0; l < 8; ++l) caps.push_back(25);
    caps.push_back(40), caps.push_back(40);
    for (double c : caps) inc.add_link(c);
    const auto route = [&](int s, int d) {
      std::vector<Element> e = {{s, 1.0}, {gpus + d, 1.0}};
      const int ls = s / 4, ld = d / 4;
      if (ls != ld) {
        e.push_back({2 * gpus + ls, 1.0});
        e.push_back({2 * gpus + 4 + ld, 1.0});
        if (rng.uniform() < 0.5) {
          e.push_back({2 * gpus + 8, 0.5});
          e.push_back({2 * gpus + 9, 0.5});
        } else {
          e.push_back({2 * gpus + 8 + static_cast<int>(rng.below(2)), 1.0});
        }
      }
      return e;
    };
    std::vector<FlowSpec> spec;
    std::vector<int> ids;
    std::vector<char> gone;
    for (int step = 0; step < 30; ++step) {
      // A collective starts (a random subset of pairs), or flows finish.
      if (step % 3 == 0) {
        for (int s = 0; s < gpus; ++s)
          for (int d = 0; d < gpus; ++d)
            if (s != d && rng.uniform() < 0.4) {
              const double u = rng.uniform();
              spec.push_back({route(s, d), 1 + static_cast<double>(rng.below(3)),
                              u < 0.67 ? MaxMinSolver::kUnlimited : (u < 0.85 ? 3.0 : 7.0)});
              ids.push_back(inc.add_flow(spec.back().e, spec.back().w, spec.back().cap));
              gone.push_back(0);
            }
      } else {
        for (size_t f = 0; f < ids.size(); ++f)
          if (!gone[f] && rng.uniform() < 0.15) inc.remove_flow(ids[f]), gone[f] = 1;
      }
      const auto [bad, badlist] = solve_and_compare(inc, caps, spec, ids, gone);
      CHECK(bad == 0);
      CHECK(badlist == 0);
    }
    if (inst % 2) CHECK(inc.stats().refills == inc.stats().solves);
  }
}

TEST_CASE("property: set_weight then solve equals a fresh solve of the same flows, in every mode") {
  // MaxMinSolver::set_weight: a class losing (or gaining) members keeps its solver flow and takes
  // the new weight, where the flow tier removed and re-added it. Max-min rates depend only on the
  // live flows, so after every solve each rate must equal a fresh solver's given the same flows at
  // their current weights, whatever the mode: the component solve treats a lighter flow as a
  // removal at its rate (flows below it keep theirs: below its rate none of its links saturates,
  // with less weight or more), the lazy re-fill seeds its links at that rate, and a heavier one is
  // re-filled from 0 as an add. changed() lists exactly the flows whose rate moved (the flow tier
  // re-projects only those, and keeps a reweighted class's projection otherwise).
  // Random links (capacity 1-100, some equal: ties), flows over 1-4 of them with coefficients 1 or
  // 0.5, weights 1-6, some capped (a few values), added, removed and reweighted (mostly a member
  // fewer, as a class finishing one; sometimes more) in random batches: rates to 1e-9 relative of
  // a fresh component solve (solve_and_compare).
  hs::Rng rng(3303);
  long reweighted = 0;
  random_edits_in_every_mode(rng, 6, 6, [&](MaxMinSolver& inc, FlowSpec& sp, int id) {
    const double u = rng.uniform();
    if (u < 0.1) return true;
    if (u < 0.35 && sp.w > 1) {
      sp.w -= 1;  // a member finished
      inc.set_weight(id, sp.e, sp.w);
      ++reweighted;
    } else if (u < 0.4) {
      sp.w += 1;
      inc.set_weight(id, sp.e, sp.w);
      ++reweighted;
    }
    return false;
  });
  CHECK(reweighted > 10000);
}

TEST_CASE("property: set_rate_cap then solve equals a fresh solve of the same flows, in every mode") {
  // MaxMinSolver::set_rate_cap: the flow tier caps a slowed task's flows (speed x bytes / its solo
  // drain) and lifts the caps again, in place. Max-min rates depend only on the live flows and
  // their caps, so after every solve each rate must equal a fresh solver's given the same flows at
  // their current caps (solve_and_compare: to 1e-9 relative, and changed() lists exactly the flows
  // whose rate moved), in every mode: the re-fill and the component solve both start filling at the
  // lower of the flow's rate and its new cap (below that level nothing differs), and a cap that
  // cannot bind (at or above the rate of a flow a link froze) changes nothing at all.
  // Random links (capacity 1-100, some equal: ties), flows over 1-4 of them with coefficients 1 or
  // 0.5, weights 1-4, some capped; each step adds and removes a few and re-caps about a third:
  // lowered (often below its rate), raised, lifted (kUnlimited), or set twice before the solve.
  hs::Rng rng(4409);
  long recapped = 0, bound = 0;
  const auto random_cap = [&](double rate) {
    const double u = rng.uniform();
    if (u < 0.2) return MaxMinSolver::kUnlimited;
    if (u < 0.6 && rate > 0) return rate * (0.1 + 0.85 * rng.uniform());  // binds
    if (u < 0.7) return 2.0 * (1 + static_cast<double>(rng.below(3)));    // a shared value (cap groups)
    return 0.5 + 40 * rng.uniform();
  };
  random_edits_in_every_mode(rng, 5, 4, [&](MaxMinSolver& inc, FlowSpec& sp, int id) {
    CHECK(inc.rate_cap(id) == sp.cap);  // as last set
    const double u = rng.uniform();
    if (u < 0.08) return true;
    if (u < 0.4) {
      const int times = rng.uniform() < 0.15 ? 2 : 1;
      for (int k = 0; k < times; ++k) {
        sp.cap = random_cap(inc.rate(id));
        bound += sp.cap < inc.rate(id);
        inc.set_rate_cap(id, sp.cap);
        ++recapped;
      }
    }
    return false;
  });
  CHECK(recapped > 20000);
  CHECK(bound > 5000);
}

TEST_CASE("property: set_rate_cap with 1,024+ flows (id-ordered component solves, sweeps) equals a fresh solve") {
  // The component solve lists a large problem's flows in id order (or sweeps them all); re-capped
  // flows must come out as from scratch there too. Groups of links as in the tests above, 1,200+
  // flows, a few percent re-capped per event (a slowed task's transfers), some removed.
  hs::Rng rng(4411);
  for (const auto mode : {MaxMinSolver::Mode::adaptive, MaxMinSolver::Mode::lazy, MaxMinSolver::Mode::component}) {
    const int groups = 4, links = 10;
    MaxMinSolver inc;
    inc.set_mode(mode);
    std::vector<double> caps;
    for (int l = 0; l < groups * links; ++l) caps.push_back(1 + 99 * rng.uniform()), inc.add_link(caps.back());
    std::vector<FlowSpec> spec;
    std::vector<int> ids;
    std::vector<char> gone;
    for (int i = 0; i < 1200; ++i) {
      FlowSpec sp;
      sp.e = random_route(rng, static_cast<int>(rng.below(groups)), links);
      sp.w = 1 + static_cast<double>(rng.below(3));
      spec.push_back(sp);
      ids.push_back(inc.add_flow(sp.e, sp.w, sp.cap));
      gone.push_back(0);
    }
    inc.solve();
    for (int ev = 0; ev < 12; ++ev) {
      for (size_t f = 0; f < ids.size(); ++f) {
        if (gone[f]) continue;
        const double u = rng.uniform();
        if (u < 0.02) {
          inc.remove_flow(ids[f]);
          gone[f] = 1;
        } else if (u < 0.06) {
          const double r = inc.rate(ids[f]);
          spec[f].cap = rng.uniform() < 0.3 ? MaxMinSolver::kUnlimited : r * (0.2 + 1.2 * rng.uniform());
          inc.set_rate_cap(ids[f], spec[f].cap);
        }
      }
      const auto [bad, badlist] = solve_and_compare(inc, caps, spec, ids, gone);
      CHECK(bad == 0);
      CHECK(badlist == 0);
    }
  }
}
