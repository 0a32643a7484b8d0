#include "app/sweep_batch.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "app/max_fit_batch.hpp"
#include "network/flow_network.hpp"

namespace hs::app {

std::vector<std::string> apply_max_fit_batch(std::vector<sweep::SweepPoint>& points, const sweep::SweepSpec& spec,
                                             const ScenarioCache& paths) {
  // Settings in grid order, each with the indices of its points.
  auto setting_of = [](const sweep::SweepPoint& p) {
    return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", p.topology, p.trace, p.network, p.model_file, p.calibration, p.layout,
                       p.model_sets());
  };
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < points.size(); ++i) {
    auto [it, inserted] = members.try_emplace(setting_of(points[i]));
    if (inserted) order.push_back(it->first);
    it->second.push_back(i);
  }
  std::vector<int> candidates = spec.batch_candidates.empty() ? kDefaultCandidates : spec.batch_candidates;
  const int smallest = *std::min_element(candidates.begin(), candidates.end());
  std::vector<std::string> notes;
  for (const std::string& key : order) {
    const std::vector<size_t>& idx = members[key];
    const sweep::SweepPoint& first = points[idx.front()];
    MaxFitRequest r;
    r.args.topology = paths.resolve(first.topology);
    r.args.trace = paths.resolve(first.trace);
    if (!first.model_file.empty()) r.args.model = paths.resolve(first.model_file);
    if (!first.calibration.empty()) r.args.calibration = paths.resolve(first.calibration);
    for (const auto& [f, v] : first.model) r.args.sets.push_back(f + "=" + v);
    r.args.seed = spec.seed;
    r.layout = first.layout;
    r.flow = first.network == "flow";
    r.flow_precision = network::kDefaultFlowPrecision;
    r.candidates = candidates;
    for (size_t i : idx) {
      const auto s = strategy::parse_strategy_spec(points[i].spec());
      if (std::none_of(r.specs.begin(), r.specs.end(), [&](const auto& x) { return x.full == s.full; })) r.specs.push_back(s);
    }
    const MaxFitResult fit = max_fit_batch(r);
    const int mb = fit.micro_batch.value_or(smallest);
    std::string why;
    for (const auto& p : fit.probes)
      if (!p.fits) why = fmt::format("; micro_batch {}: {}", p.micro_batch, p.why);  // the last refused: the next larger
    std::string where = first.topology + " | " + first.trace + (first.layout.empty() ? "" : " | layout " + first.layout) +
                        (first.model.empty() ? "" : " | " + first.model_sets()) + " | " + first.network;
    notes.push_back(fit.micro_batch
                        ? fmt::format("sweep: batch max-fit: micro_batch {} at {} ({} strategy settings fit{})", mb, where,
                                      r.specs.size(), why)
                        : fmt::format("sweep: batch max-fit: no candidate fits at {}: micro_batch {}, its rows do not fit{}",
                                      where, mb, why));
    for (size_t i : idx) {
      points[i].model.emplace_back("micro_batch", std::to_string(mb));
      points[i].key = sweep::point_key(points[i].canonical());
    }
  }
  return notes;
}

}  // namespace hs::app
