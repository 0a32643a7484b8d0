#include "sweep/sweep_points.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "util/rng.hpp"

namespace hs::sweep {

std::string SweepPoint::spec() const {
  std::string s = strategy;
  for (const auto& [k, v] : knobs) s += fmt::format(":{}={}", k, v);
  return s;
}

std::string SweepPoint::model_sets() const {
  std::string s;
  for (const auto& [k, v] : model) s += fmt::format("{}{}={}", s.empty() ? "" : ";", k, v);
  return s;
}

std::string SweepPoint::canonical() const {
  // calibration= and layout= only when set, so the keys of points without them stay what they were.
  return fmt::format("topology={}\ntrace={}\nmodel_file={}\nmodel={}\nnetwork={}\n{}{}iterations={}\nseed={}\nstrategy={}\n",
                     topology, trace, model_file, model_sets(), network,
                     calibration.empty() ? std::string() : "calibration=" + calibration + "\n",
                     layout.empty() ? std::string() : "layout=" + layout + "\n", iterations, seed, spec());
}

std::string point_key(const std::string& canonical) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  for (unsigned char c : canonical) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

SweepPoint defaults_of(const SweepPoint& p) {
  SweepPoint d = p;
  d.knobs.clear();
  d.index = -1;
  d.key = point_key(d.canonical());
  return d;
}

namespace {
// Odometer over axis sizes: calls f with the index of every axis, last axis fastest.
template <class F>
void product(const std::vector<size_t>& sizes, F f) {
  for (size_t s : sizes)
    if (s == 0) return;
  std::vector<size_t> i(sizes.size(), 0);
  while (true) {
    f(i);
    size_t k = sizes.size();
    while (k > 0) {
      --k;
      if (++i[k] < sizes[k]) break;
      i[k] = 0;
      if (k == 0) return;
    }
    if (sizes.empty()) return;
  }
}
}  // namespace

std::vector<SweepPoint> expand(const SweepSpec& s) {
  std::vector<SweepPoint> grid;
  std::vector<size_t> outer = {s.topologies.size(), s.traces.size(), s.networks.size(), s.models.size(),
                               s.calibrations.size(), s.layouts.size()};
  for (const auto& m : s.model) outer.push_back(m.values.size());
  product(outer, [&](const std::vector<size_t>& o) {
    for (const auto& st : s.strategies) {
      std::vector<size_t> inner;
      for (const auto& k : st.knobs) inner.push_back(k.values.size());
      product(inner, [&](const std::vector<size_t>& in) {
        SweepPoint p;
        p.topology = s.topologies[o[0]].text;
        p.trace = s.traces[o[1]].text;
        p.network = s.networks[o[2]].text;
        p.model_file = s.models[o[3]].text;
        p.calibration = s.calibrations[o[4]].text;
        p.layout = s.layouts[o[5]].text;
        p.layout_at = s.layouts[o[5]].at;
        for (size_t m = 0; m < s.model.size(); ++m) p.model.emplace_back(s.model[m].name, s.model[m].values[o[6 + m]].text);
        p.strategy = st.name;
        for (size_t k = 0; k < st.knobs.size(); ++k) p.knobs.emplace_back(st.knobs[k].name, st.knobs[k].values[in[k]].text);
        p.iterations = s.iterations;
        p.seed = s.seed;
        grid.push_back(std::move(p));
      });
    }
  });
  if (s.random && s.samples < static_cast<int>(grid.size())) {
    // Partial Fisher-Yates over indices, then back to grid order.
    Rng rng(s.search_seed);
    std::vector<size_t> idx(grid.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    for (int i = 0; i < s.samples; ++i) std::swap(idx[i], idx[i + rng.below(idx.size() - i)]);
    idx.resize(s.samples);
    std::sort(idx.begin(), idx.end());
    std::vector<SweepPoint> picked;
    for (size_t i : idx) picked.push_back(std::move(grid[i]));
    grid = std::move(picked);
  }
  for (size_t i = 0; i < grid.size(); ++i) {
    grid[i].index = static_cast<int>(i);
    grid[i].key = point_key(grid[i].canonical());
  }
  return grid;
}

}  // namespace hs::sweep
