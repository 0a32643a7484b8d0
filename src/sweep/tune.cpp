#include "sweep/tune.hpp"

#include <map>

namespace hs::sweep {

namespace {
std::string text_of(const Setting& s) {
  std::string t;
  for (const auto& [k, v] : s) t += k + "=" + v + ";";
  return t;
}
}  // namespace

TuneOutcome coordinate_descent(const std::vector<TuneAxis>& axes, const Setting& start, Objective objective,
                               int budget, const std::function<std::vector<Row>(const std::vector<Setting>&)>& eval) {
  TuneOutcome out;
  out.grid_size = 1;
  for (const auto& a : axes) out.grid_size *= static_cast<double>(a.values.size());
  std::map<std::string, size_t> seen;  // setting -> index in trail
  auto left = [&] { return budget <= 0 ? 1 << 30 : budget - static_cast<int>(out.trail.size()); };
  auto better = [&](const Row& a, const Row& b) {
    const double va = objective_value(a, objective), vb = objective_value(b, objective);
    return vb >= 0 ? va < vb * (1 - 1e-9) : va < vb * (1 + 1e-9);
  };
  Setting current = start;
  out.start = eval({current}).front();
  out.trail.push_back(out.start);
  seen[text_of(current)] = 0;
  out.found = out.start.feasible;
  out.best = out.start;
  while (left() > 0) {
    ++out.rounds;
    bool moved = false;
    for (const auto& axis : axes) {
      std::vector<Setting> batch;
      for (const auto& v : axis.values) {
        Setting s = current;
        for (auto& [k, x] : s)
          if (k == axis.knob) x = v;
        if (seen.count(text_of(s)) || static_cast<int>(batch.size()) >= left()) continue;
        batch.push_back(std::move(s));
      }
      if (batch.empty()) continue;
      std::vector<Row> rows = eval(batch);
      for (size_t i = 0; i < rows.size(); ++i) {
        seen[text_of(batch[i])] = out.trail.size();
        out.trail.push_back(rows[i]);
        if (rows[i].feasible && (!out.found || better(rows[i], out.best))) {
          out.best = rows[i];
          out.found = true;
          current = batch[i];
          moved = true;
        }
      }
      if (left() <= 0) break;
    }
    if (!moved) {
      out.converged = true;
      break;
    }
  }
  return out;
}

}  // namespace hs::sweep
