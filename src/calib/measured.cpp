#include "calib/measured.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "cost/compute_cost.hpp"
#include "util/json_tree.hpp"

namespace hs::calib {

// Reads the fields `validate` and `calibrate` use; a missing or mistyped one is an input error naming
// it and its line (util/json_tree: keys given twice, non-UTF-8 text and NaN are refused there too).
// Sections this version does not read (provenance, suites added later) are skipped.
Measured read_measured(const std::string& path) {
  const json::Document doc = json::Document::load(path);
  const json::Node& root = doc.root();
  if (root.kind != json::Node::Kind::kObject) doc.fail(root, "", "expected a JSON object (hecate-validate's measured.json)");
  // The node `key` of `parent` (named `field` in messages): absent -> error at the parent.
  auto need = [&](const json::Node& parent, const char* key, const std::string& field, const char* what) -> const json::Node& {
    const json::Node* n = parent.find(key);
    if (!n) doc.fail(parent, field, fmt::format("missing: expected {}", what));
    return *n;
  };
  auto positive_int = [&](const json::Node& n, const std::string& field, int64_t max) {
    if (n.kind != json::Node::Kind::kInteger || n.integer <= 0 || n.integer > max)
      doc.fail(n, field, fmt::format("expected a positive integer (at most {})", max));
    return n.integer;
  };
  auto object = [&](const json::Node& n, const std::string& field) -> const json::Node& {
    if (n.kind != json::Node::Kind::kObject) doc.fail(n, field, "expected an object");
    return n;
  };
  const json::Node& schema = need(root, "schema", "schema", "\"hecate-sim/measured@1\"");
  if (schema.kind != json::Node::Kind::kString || schema.string != "hecate-sim/measured@1")
    doc.fail(schema, "schema", "expected \"hecate-sim/measured@1\" (written by hecate-validate)");
  Measured m;
  m.file = path;
  if (const json::Node* dev = root.find("device"); dev && dev->kind == json::Node::Kind::kObject)
    if (const json::Node* name = dev->find("name"); name && name->kind == json::Node::Kind::kString) m.device = name->string;
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  const json::Node& ffn = object(need(root, "expert_ffn", "expert_ffn", "the expert-FFN measurements"), "expert_ffn");
  m.d_model = positive_int(need(ffn, "d_model", "expert_ffn.d_model", "a positive integer"), "expert_ffn.d_model", kMaxDim);
  m.d_ffn = positive_int(need(ffn, "d_ffn", "expert_ffn.d_ffn", "a positive integer"), "expert_ffn.d_ffn", kMaxDim);
  const json::Node& mats = need(ffn, "mats", "expert_ffn.mats", "2 or 3");
  if (mats.kind != json::Node::Kind::kInteger || (mats.integer != 2 && mats.integer != 3)) doc.fail(mats, "expert_ffn.mats", "expected 2 or 3");
  m.mats = static_cast<int>(mats.integer);
  // rows: [{"tokens": T, "forward_s": S}, ...] under `section`.
  auto read_rows = [&](const json::Node& section, const std::string& name, std::vector<GemmRow>& out) {
    const json::Node& rows = need(section, "rows", name + ".rows", "a list of measured rows");
    if (rows.kind != json::Node::Kind::kArray) doc.fail(rows, name + ".rows", "expected a list of measured rows");
    for (size_t i = 0; i < rows.items.size(); ++i) {
      const json::Node& r = rows.items[i];
      const std::string at = fmt::format("{}.rows[{}]", name, i);
      object(r, at);
      const double t = static_cast<double>(positive_int(need(r, "tokens", at + ".tokens", "a positive integer"), at + ".tokens", int64_t{1} << 40));
      const json::Node& s = need(r, "forward_s", at + ".forward_s", "a positive time in seconds");
      if (!s.is_number() || !(s.number > 0)) doc.fail(s, at + ".forward_s", "expected a positive time in seconds");
      out.push_back({t, s.number});
    }
    if (out.empty()) doc.fail(rows, name + ".rows", "expected at least one row");
  };
  read_rows(ffn, "expert_ffn", m.rows);
  if (const json::Node* b = root.find("expert_ffn_batched")) {
    object(*b, "expert_ffn_batched");
    m.batched_experts = static_cast<int>(
        positive_int(need(*b, "experts", "expert_ffn_batched.experts", "a positive integer"), "expert_ffn_batched.experts", 1 << 20));
    read_rows(*b, "expert_ffn_batched", m.batched);
  }
  if (const json::Node* hbm = root.find("hbm_copy")) {
    object(*hbm, "hbm_copy");
    if (const json::Node* bw = hbm->find("bandwidth_Bps")) {
      if (!bw->is_number() || !(bw->number > 0)) doc.fail(*bw, "hbm_copy.bandwidth_Bps", "expected a positive rate in bytes per second");
      m.hbm_Bps = bw->number;
    }
  }
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
