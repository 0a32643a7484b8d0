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
  else if (!doc.at_pointer("/provenance/gpus/0/name").get(name)) m.device = std::string(name);
  // rows: [{"tokens": T, "forward_s": S}, ...] under `section`.
  auto read_rows = [&](simdjson::dom::element section, const std::string& sname, std::vector<GemmRow>& out) {
    simdjson::dom::array rows;
    if (section["rows"].get(rows)) fail(sname + ".rows", "expected a list of measured rows");
    size_t i = 0;
    for (auto r : rows) {
      int64_t t = 0;
      double s = 0;
      if (r["tokens"].get(t) || t <= 0) fail(fmt::format("{}.rows[{}].tokens", sname, i), "expected a positive integer");
      if (r["forward_s"].get(s) || !(s > 0)) fail(fmt::format("{}.rows[{}].forward_s", sname, i), "expected a positive time");
      out.push_back({static_cast<double>(t), s});
      ++i;
    }
    if (out.empty()) fail(sname + ".rows", "expected at least one row");
  };
  simdjson::dom::element ffn;
  if (!doc["expert_ffn"].get(ffn)) {
    int64_t d = 0, f = 0, mats = 0;
    if (ffn["d_model"].get(d) || d <= 0) fail("expert_ffn.d_model", "expected a positive integer");
    if (ffn["d_ffn"].get(f) || f <= 0) fail("expert_ffn.d_ffn", "expected a positive integer");
    if (ffn["mats"].get(mats) || (mats != 2 && mats != 3)) fail("expert_ffn.mats", "expected 2 or 3");
    m.d_model = d, m.d_ffn = f, m.mats = static_cast<int>(mats);
    read_rows(ffn, "expert_ffn", m.rows);
  }
  simdjson::dom::element b;
  if (!doc["expert_ffn_batched"].get(b)) {
    if (!m.has_gemm()) fail("expert_ffn_batched", "needs the expert_ffn section (its d_model, d_ffn and mats)");
    int64_t e = 0;
    if (b["experts"].get(e) || e <= 0) fail("expert_ffn_batched.experts", "expected a positive integer");
    m.batched_experts = static_cast<int>(e);
    read_rows(b, "expert_ffn_batched", m.batched);
  }
  simdjson::dom::element coll;
  if (!doc["collectives"].get(coll)) {
    int64_t ranks = 0, nodes = 0;
    if (coll["ranks"].get(ranks) || ranks <= 0) fail("collectives.ranks", "expected a positive integer");
    if (coll["nodes"].get(nodes) || nodes <= 0 || nodes > ranks) fail("collectives.nodes", "expected an integer in [1, ranks]");
    m.ranks = static_cast<int>(ranks), m.nodes = static_cast<int>(nodes);
    simdjson::dom::array rows;
    if (coll["rows"].get(rows)) fail("collectives.rows", "expected a list of measured rows");
    size_t i = 0;
    for (auto r : rows) {
      const std::string at = fmt::format("collectives.rows[{}]", i++);
      std::string_view op;
      CollectiveRow c;
      if (r["op"].get(op) || !collective::parse_nccl_op(op))
        fail(at + ".op", "expected all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or send_recv");
      c.op = *collective::parse_nccl_op(op);
      // bytes and time positive; bandwidths non-negative (0 where the time was below the timer's resolution).
      auto number = [&](const char* key, double& out, bool zero_ok) {
        double v = 0;
        if (r[key].get(v) || !std::isfinite(v) || v < 0 || (v == 0 && !zero_ok))
          fail(at + "." + key, zero_ok ? "expected a non-negative number" : "expected a positive number");
        out = v;
      };
      number("bytes", c.bytes, false);
      number("median_s", c.seconds, false);
      number("algbw_Bps", c.algbw, true);
      number("busbw_Bps", c.busbw, true);
      m.collectives.push_back(c);
    }
    if (m.collectives.empty()) fail("collectives.rows", "expected at least one row");
  }
  for (const char* other : {"alltoallv", "sparse", "materialize", "overlap"}) {
    simdjson::dom::element sec;
    if (doc[other].get(sec)) continue;
    simdjson::dom::array rows;
    if (sec["rows"].get(rows)) fail(std::string(other) + ".rows", "expected a list of measured rows");
    m.other_sections.emplace_back(other, static_cast<int>(rows.size()));
  }
  double bw = 0;
  if (!doc["hbm_copy"]["bandwidth_Bps"].get(bw)) m.hbm_Bps = bw;
  if (!m.has_gemm() && m.collectives.empty() && m.other_sections.empty() && m.hbm_Bps <= 0)
    fail("", "no measurements: expected at least one of expert_ffn, hbm_copy, collectives, alltoallv, sparse, materialize, "
             "overlap");
  return m;
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
}  // namespace

std::optional<GemmCalibration> fit_gemm(const Measured& m, double peak) {
  if (!m.has_gemm()) return std::nullopt;
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
