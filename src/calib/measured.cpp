#include "calib/measured.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <simdjson.h>

#include "cost/compute_cost.hpp"
#include "util/diagnostics.hpp"

namespace hs::calib {

// Reads the fields `validate` uses; a missing or mistyped one is an input error naming it.
Measured read_measured(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc))
    throw InputError({path, 0, 0}, "", fmt::format("cannot read measured results: {}", simdjson::error_message(err)));
  auto fail = [&](const std::string& field, const std::string& what) { throw InputError({path, 0, 0}, field, what); };
  std::string_view schema;
  if (doc["schema"].get(schema) || schema != "hecate-sim/measured@1")
    fail("schema", "expected \"hecate-sim/measured@1\" (written by hecate-validate)");
  Measured m;
  m.file = path;
  std::string_view name;
  if (!doc["device"]["name"].get(name)) m.device = std::string(name);
  int64_t d = 0, f = 0, mats = 0;
  if (doc["expert_ffn"]["d_model"].get(d) || d <= 0) fail("expert_ffn.d_model", "expected a positive integer");
  if (doc["expert_ffn"]["d_ffn"].get(f) || f <= 0) fail("expert_ffn.d_ffn", "expected a positive integer");
  if (doc["expert_ffn"]["mats"].get(mats) || (mats != 2 && mats != 3)) fail("expert_ffn.mats", "expected 2 or 3");
  m.d_model = d, m.d_ffn = f, m.mats = static_cast<int>(mats);
  // rows: [{"tokens": T, "forward_s": S}, ...] under `section`.
  auto read_rows = [&](simdjson::dom::element section, const std::string& name, std::vector<GemmRow>& out) {
    simdjson::dom::array rows;
    if (section["rows"].get(rows)) fail(name + ".rows", "expected a list of measured rows");
    size_t i = 0;
    for (auto r : rows) {
      int64_t t = 0;
      double s = 0;
      if (r["tokens"].get(t) || t <= 0) fail(fmt::format("{}.rows[{}].tokens", name, i), "expected a positive integer");
      if (r["forward_s"].get(s) || !(s > 0)) fail(fmt::format("{}.rows[{}].forward_s", name, i), "expected a positive time");
      out.push_back({static_cast<double>(t), s});
      ++i;
    }
    if (out.empty()) fail(name + ".rows", "expected at least one row");
  };
  simdjson::dom::element ffn;
  if (doc["expert_ffn"].get(ffn)) fail("expert_ffn", "expected the expert-FFN measurements");
  read_rows(ffn, "expert_ffn", m.rows);
  simdjson::dom::element b;
  if (!doc["expert_ffn_batched"].get(b)) {
    int64_t e = 0;
    if (b["experts"].get(e) || e <= 0) fail("expert_ffn_batched.experts", "expected a positive integer");
    m.batched_experts = static_cast<int>(e);
    read_rows(b, "expert_ffn_batched", m.batched);
  }
  double bw = 0;
  if (!doc["hbm_copy"]["bandwidth_Bps"].get(bw)) m.hbm_Bps = bw;
  return m;
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
}  // namespace

std::optional<GemmCalibration> fit_gemm(const Measured& m, double peak) {
  const bool batched = m.batched_experts > 0;
  const auto& rows = batched ? m.batched : m.rows;
  const int experts = batched ? m.batched_experts : 1;
  const double flops_per_token = 2.0 * m.d_model * m.d_ffn * m.mats;
  std::vector<cost::GemmPoint> fit_rows, check_rows;
  for (const auto& r : rows) {
    if (r.tokens < 256 || std::fmod(r.tokens, 128) != 0) continue;
    const cost::GemmPoint p{r.tokens, flops_per_token * r.tokens * experts / r.seconds / peak};
    ((fit_rows.size() + check_rows.size()) % 2 == 0 ? fit_rows : check_rows).push_back(p);
  }
  const auto fit = cost::fit_gemm_efficiency(fit_rows);
  if (!fit) return std::nullopt;
  GemmCalibration g;
  g.fit = *fit;
  g.fit_rows = static_cast<int>(fit_rows.size());
  g.held_rows = static_cast<int>(check_rows.size());
  g.experts = experts;
  std::vector<double> held, held_default;
  const cost::ComputeParams defaults;
  for (const auto& p : check_rows) {
    held.push_back(std::abs(cost::gemm_efficiency(*fit, p.tokens) - p.efficiency) / p.efficiency);
    held_default.push_back(std::abs(cost::gemm_efficiency({defaults.eta_max, defaults.t_half}, p.tokens) - p.efficiency) /
                           p.efficiency);
  }
  g.held_median_error = median(held);
  g.held_median_error_default = median(held_default);
  return g;
}

}  // namespace hs::calib
