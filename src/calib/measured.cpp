#include "calib/measured.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "cost/compute_cost.hpp"
#include "util/json_tree.hpp"

namespace hs::calib {

// Reads the fields `validate` and `calibrate` use; a missing or mistyped one is an input error naming
// it and its line (util/json_tree: keys given twice, non-UTF-8 text and NaN are refused there too).
// Fields this version does not read (provenance beyond the GPU's name, ranks and nodes) are skipped.
Measured read_measured(const std::string& path) {
  using Kind = json::Node::Kind;
  const json::Document doc = json::Document::load(path);
  const json::Node& root = doc.root();
  if (root.kind != Kind::kObject) doc.fail(root, "", "expected a JSON object (hecate-validate's measured.json)");
  // The node `key` of `parent` (named `field` in messages): absent -> error at the parent.
  auto need = [&](const json::Node& parent, const char* key, const std::string& field, const char* what) -> const json::Node& {
    const json::Node* n = parent.find(key);
    if (!n) doc.fail(parent, field, fmt::format("missing: expected {}", what));
    return *n;
  };
  auto positive_int = [&](const json::Node& parent, const char* key, const std::string& field, int64_t max) {
    const json::Node& n = need(parent, key, field, "a positive integer");
    if (n.kind != Kind::kInteger || n.integer <= 0 || n.integer > max)
      doc.fail(n, field, fmt::format("expected a positive integer (at most {})", max));
    return n.integer;
  };
  auto object = [&](const json::Node& n, const std::string& field) -> const json::Node& {
    if (n.kind != Kind::kObject) doc.fail(n, field, "expected an object");
    return n;
  };
  // The list `rows` of `section` (named `name`), each row an object.
  auto rows_of = [&](const json::Node& section, const std::string& name) -> const std::vector<json::Node>& {
    const json::Node& rows = need(section, "rows", name + ".rows", "a list of measured rows");
    if (rows.kind != Kind::kArray) doc.fail(rows, name + ".rows", "expected a list of measured rows");
    for (size_t i = 0; i < rows.items.size(); ++i) object(rows.items[i], fmt::format("{}.rows[{}]", name, i));
    return rows.items;
  };
  const json::Node& schema = need(root, "schema", "schema", "\"hecate-sim/measured@1\"");
  if (schema.kind != Kind::kString || schema.string != "hecate-sim/measured@1")
    doc.fail(schema, "schema", "expected \"hecate-sim/measured@1\" (written by hecate-validate)");
  Measured m;
  m.file = path;
  auto string_at = [](const json::Node* n) { return n && n->kind == Kind::kString ? n->string : std::string(); };
  if (const json::Node* dev = root.find("device"); dev && dev->kind == Kind::kObject) m.device = string_at(dev->find("name"));
  if (const json::Node* prov = root.find("provenance"); prov && prov->kind == Kind::kObject) {
    // The launch's ranks and nodes (where the alltoallv and sparse suites ran).
    const json::Node* r = prov->find("ranks");
    const json::Node* n = prov->find("nodes");
    if (r && n && r->kind == Kind::kInteger && n->kind == Kind::kInteger && r->integer > 0 && n->integer > 0 &&
        n->integer <= r->integer && r->integer <= (1 << 20))
      m.launch_ranks = static_cast<int>(r->integer), m.launch_nodes = static_cast<int>(n->integer);
  }
  if (const json::Node* prov = root.find("provenance"); m.device.empty() && prov && prov->kind == Kind::kObject)
    if (const json::Node* gpus = prov->find("gpus"); gpus && gpus->kind == Kind::kArray && !gpus->items.empty())
      m.device = string_at(gpus->items[0].find("name"));
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  // A number of `parent` >= 0 (> 0 unless zero_ok).
  auto number = [&](const json::Node& parent, const char* key, const std::string& at, bool zero_ok = false) {
    const std::string field = at + "." + key;
    const json::Node& v = need(parent, key, field, zero_ok ? "a non-negative number" : "a positive number");
    if (!v.is_number() || !std::isfinite(v.number) || v.number < 0 || (v.number == 0 && !zero_ok))
      doc.fail(v, field, zero_ok ? "expected a non-negative number" : "expected a positive number");
    return v.number;
  };
  auto text = [&](const json::Node& parent, const char* key, const std::string& at) -> const std::string& {
    const json::Node& v = need(parent, key, at + "." + key, "a string");
    if (v.kind != Kind::kString || v.string.empty()) doc.fail(v, at + "." + key, "expected a non-empty string");
    return v.string;
  };
  // The median of a timing summary {"median_s": ..., ...} named `key` (measure/measured_json.hpp).
  auto median_of = [&](const json::Node& parent, const char* key, const std::string& at) {
    return number(object(need(parent, key, at + "." + key, "a timing summary"), at + "." + key), "median_s", at + "." + key);
  };
  // rows: [{"tokens": T, "forward_s": S}, ...] under `section`.
  auto read_rows = [&](const json::Node& section, const std::string& name, std::vector<GemmRow>& out) {
    const auto& rows = rows_of(section, name);
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string at = fmt::format("{}.rows[{}]", name, i);
      const double t = static_cast<double>(positive_int(rows[i], "tokens", at + ".tokens", int64_t{1} << 40));
      const json::Node& s = need(rows[i], "forward_s", at + ".forward_s", "a positive time in seconds");
      if (!s.is_number() || !(s.number > 0)) doc.fail(s, at + ".forward_s", "expected a positive time in seconds");
      out.push_back({t, s.number});
    }
    if (out.empty()) doc.fail(section, name + ".rows", "expected at least one row");
  };
  if (const json::Node* ffn = root.find("expert_ffn")) {
    object(*ffn, "expert_ffn");
    m.d_model = positive_int(*ffn, "d_model", "expert_ffn.d_model", kMaxDim);
    m.d_ffn = positive_int(*ffn, "d_ffn", "expert_ffn.d_ffn", kMaxDim);
    const json::Node& mats = need(*ffn, "mats", "expert_ffn.mats", "2 or 3");
    if (mats.kind != Kind::kInteger || (mats.integer != 2 && mats.integer != 3)) doc.fail(mats, "expert_ffn.mats", "expected 2 or 3");
    m.mats = static_cast<int>(mats.integer);
    read_rows(*ffn, "expert_ffn", m.rows);
  }
  if (const json::Node* b = root.find("expert_ffn_batched")) {
    object(*b, "expert_ffn_batched");
    if (!m.has_gemm()) doc.fail(*b, "expert_ffn_batched", "needs the expert_ffn section (its d_model, d_ffn and mats)");
    m.batched_experts = static_cast<int>(positive_int(*b, "experts", "expert_ffn_batched.experts", 1 << 20));
    read_rows(*b, "expert_ffn_batched", m.batched);
  }
  if (const json::Node* coll = root.find("collectives")) {
    object(*coll, "collectives");
    m.ranks = static_cast<int>(positive_int(*coll, "ranks", "collectives.ranks", 1 << 20));
    const json::Node& nodes = need(*coll, "nodes", "collectives.nodes", "an integer in [1, ranks]");
    if (nodes.kind != Kind::kInteger || nodes.integer <= 0 || nodes.integer > m.ranks)
      doc.fail(nodes, "collectives.nodes", "expected an integer in [1, ranks]");
    m.nodes = static_cast<int>(nodes.integer);
    const auto& rows = rows_of(*coll, "collectives");
    for (size_t i = 0; i < rows.size(); ++i) {
      const json::Node& r = rows[i];
      const std::string at = fmt::format("collectives.rows[{}]", i);
      const json::Node& op = need(r, "op", at + ".op", "an operation");
      const auto parsed = op.kind == Kind::kString ? collective::parse_nccl_op(op.string) : std::nullopt;
      if (!parsed)
        doc.fail(op, at + ".op", "expected all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or send_recv");
      CollectiveRow c;
      c.op = *parsed;
      // bytes and time positive; bandwidths non-negative (0 where the time was below the timer's resolution).
      c.bytes = number(r, "bytes", at);
      c.seconds = number(r, "median_s", at);
      c.algbw = number(r, "algbw_Bps", at, true);
      c.busbw = number(r, "busbw_Bps", at, true);
      m.collectives.push_back(c);
    }
    if (m.collectives.empty()) doc.fail(*coll, "collectives.rows", "expected at least one row");
  }
  if (const json::Node* sec = root.find("alltoallv")) {
    AllToAllVSection a;
    a.matrix = text(object(*sec, "alltoallv"), "matrix", "alltoallv");
    a.ranks = static_cast<int>(positive_int(*sec, "ranks", "alltoallv.ranks", 1 << 20));
    const auto& rows = rows_of(*sec, "alltoallv");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string at = fmt::format("alltoallv.rows[{}]", i);
      a.rows.push_back({text(rows[i], "direction", at), number(rows[i], "total_bytes", at, true),
                        number(rows[i], "max_rank_send_bytes", at, true), number(rows[i], "median_s", at)});
    }
    if (a.rows.empty()) doc.fail(*sec, "alltoallv.rows", "expected at least one row");
    m.alltoallv = std::move(a);
  }
  if (const json::Node* sec = root.find("sparse")) {
    SparseSection sp;
    sp.plan = text(object(*sec, "sparse"), "plan", "sparse");
    sp.strategy = text(*sec, "strategy", "sparse");
    sp.scale = number(*sec, "scale", "sparse");
    sp.ranks = static_cast<int>(positive_int(*sec, "ranks", "sparse.ranks", 1 << 20));
    const auto& rows = rows_of(*sec, "sparse");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string at = fmt::format("sparse.rows[{}]", i);
      const json::Node& layer = need(rows[i], "layer", at + ".layer", "a layer index");
      if (layer.kind != Kind::kInteger || layer.integer < 0 || layer.integer > (1 << 20))
        doc.fail(layer, at + ".layer", "expected a layer index (an integer >= 0)");
      sp.rows.push_back({static_cast<int>(layer.integer), number(rows[i], "chunk_bytes", at), median_of(rows[i], "spag", at),
                         median_of(rows[i], "sprs", at)});
    }
    if (sp.rows.empty()) doc.fail(*sec, "sparse.rows", "expected at least one row");
    m.sparse = std::move(sp);
  }
  if (const json::Node* sec = root.find("materialize")) {
    const auto& rows = rows_of(object(*sec, "materialize"), "materialize");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string at = fmt::format("materialize.rows[{}]", i);
      const json::Node& r = rows[i];
      const std::string& kernel = text(r, "kernel", at);
      const double seconds = number(r, "median_s", at);
      if (r.find("flops")) {  // a GEMM row
        GroupedGemmRow g;
        g.kernel = kernel;
        g.d_model = positive_int(r, "d_model", at + ".d_model", kMaxDim);
        g.d_ffn = positive_int(r, "d_ffn", at + ".d_ffn", kMaxDim);
        const json::Node& tpe = need(r, "tokens_per_expert", at + ".tokens_per_expert", "a list of token counts");
        if (tpe.kind != Kind::kArray || tpe.items.empty())
          doc.fail(tpe, at + ".tokens_per_expert", "expected a non-empty list of token counts");
        for (const auto& t : tpe.items) {
          if (t.kind != Kind::kInteger || t.integer < 0 || t.integer > (int64_t{1} << 40))
            doc.fail(t, at + ".tokens_per_expert", "expected token counts (integers >= 0)");
          g.tokens_per_expert.push_back(static_cast<double>(t.integer));
        }
        g.seconds = seconds;
        m.grouped_gemms.push_back(std::move(g));
      } else {
        m.memory_kernels.push_back({kernel, number(r, "bytes", at), seconds});
      }
    }
    if (rows.empty()) doc.fail(*sec, "materialize.rows", "expected at least one row");
  }
  if (const json::Node* sec = root.find("overlap")) {
    m.overlap_ranks = static_cast<int>(positive_int(object(*sec, "overlap"), "ranks", "overlap.ranks", 1 << 20));
    const auto& rows = rows_of(*sec, "overlap");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string at = fmt::format("overlap.rows[{}]", i);
      const json::Node& r = rows[i];
      m.overlap.push_back({text(r, "comm", at), number(r, "comm_bytes", at), median_of(r, "gemm_alone", at),
                           median_of(r, "gemm_overlapped", at), median_of(r, "comm_alone", at),
                           median_of(r, "comm_overlapped", at)});
    }
    if (m.overlap.empty()) doc.fail(*sec, "overlap.rows", "expected at least one row");
  }
  if (const json::Node* hbm = root.find("hbm_copy")) {
    object(*hbm, "hbm_copy");
    if (const json::Node* bw = hbm->find("bandwidth_Bps")) {
      if (!bw->is_number() || !(bw->number > 0)) doc.fail(*bw, "hbm_copy.bandwidth_Bps", "expected a positive rate in bytes per second");
      m.hbm_Bps = bw->number;
    }
  }
  if (!m.has_gemm() && m.collectives.empty() && !m.alltoallv && !m.sparse && m.memory_kernels.empty() &&
      m.grouped_gemms.empty() && m.overlap.empty() && m.hbm_Bps <= 0)
    doc.fail(root, "", "no measurements: expected at least one of expert_ffn, hbm_copy, collectives, alltoallv, sparse, "
                       "materialize, overlap");
  return m;
}

double upper_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

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
  g.held_median_error = upper_median(held);
  g.held_median_error_default = upper_median(held_default);
  return g;
}

}  // namespace hs::calib
