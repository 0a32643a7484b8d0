#include "workload/trace_import.hpp"
#include "workload/trace_io.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <regex>

#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"

namespace hs::workload {

namespace {

struct Cursor {
  const std::string& text;
  size_t pos = 0;
  int line = 1, col = 1;
  void skip_ws() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\r')) advance();
  }
  void advance() {
    if (text[pos] == '\n') ++line, col = 1;
    else ++col;
    ++pos;
  }
  bool eat(char c) {
    skip_ws();
    if (pos < text.size() && text[pos] == c) {
      advance();
      return true;
    }
    return false;
  }
};

// One file: layer -> micro-batches -> expert counts.
using RankLog = std::map<int, std::vector<std::vector<double>>>;

RankLog parse_rank_file(const std::string& path, Diagnostics& diags) {
  RankLog out;
  std::string text = read_file(path);
  Cursor c{text};
  auto fail = [&](const std::string& field, const std::string& msg) {
    diags.error({path, c.line, c.col}, field, msg);
  };
  while (true) {
    while (c.pos < text.size() && (text[c.pos] == '\n' || text[c.pos] == ' ' || text[c.pos] == '\r')) c.advance();
    if (c.pos >= text.size()) break;
    int layer = 0;
    auto [p, ec] = std::from_chars(text.data() + c.pos, text.data() + text.size(), layer);
    if (ec != std::errc() || layer < 0) return fail("layer", "expected `LAYER:[[counts], ...]` with a non-negative layer index"), out;
    while (text.data() + c.pos < p) c.advance();
    if (!c.eat(':') || !c.eat('[')) return fail(fmt::format("layer {}", layer), "expected ':[' after the layer index"), out;
    std::vector<std::vector<double>> mbs;
    while (true) {
      if (!c.eat('[')) return fail(fmt::format("layer {}", layer), "expected '[' opening a micro-batch's counts"), out;
      std::vector<double> v;
      while (true) {
        c.skip_ws();
        double x = 0;
        auto [q, ec2] = std::from_chars(text.data() + c.pos, text.data() + text.size(), x);
        if (ec2 != std::errc() || x < 0 || x != static_cast<double>(static_cast<uint64_t>(x)))
          return fail(fmt::format("layer {}.micro_batch {}.expert {}", layer, mbs.size(), v.size()),
                      "expected a non-negative integral count"), out;
        while (text.data() + c.pos < q) c.advance();
        v.push_back(x);
        if (c.eat(',')) continue;
        if (c.eat(']')) break;
        return fail(fmt::format("layer {}", layer), "expected ',' or ']' in a micro-batch's counts"), out;
      }
      mbs.push_back(std::move(v));
      if (c.eat(',')) continue;
      if (c.eat(']')) break;
      return fail(fmt::format("layer {}", layer), "expected ',' or ']' after a micro-batch"), out;
    }
    if (out.count(layer)) return fail(fmt::format("layer {}", layer), "layer appears twice"), out;
    out[layer] = std::move(mbs);
  }
  return out;
}

}  // namespace

Trace import_smartmoe(const std::string& folder, const ImportOptions& opt) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError({folder, 0, 0}, "", "expected a folder of table_iter{ITER}_rank{RANK}.log files");
  static const std::regex kName(R"(table_iter(\d+)_rank(\d+)\.log)");
  std::map<long long, std::map<int, std::string>> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, kName)) files[std::stoll(m[1])][std::stoi(m[2])] = entry.path().string();
  }
  if (files.empty()) throw InputError({folder, 0, 0}, "", "no table_iter{ITER}_rank{RANK}.log files in this folder");
  Diagnostics diags;
  int ranks = 0;
  for (const auto& [it, r] : files) ranks = std::max(ranks, r.rbegin()->first + 1);
  Trace t;
  t.model_preset = opt.model_preset;
  t.top_k = opt.top_k;
  t.sources = ranks;
  t.axes = TraceAxes::kLayerSourceExpert;
  t.provenance_json = fmt::format(
      "{{\"kind\": \"imported\", \"importer\": \"smartmoe\", \"source\": \"{}\", \"stride\": {}, "
      "\"note\": \"micro-batches summed per rank\"}}",
      fs::path(folder).filename().string(), opt.stride);
  uint64_t mb_sum = 0;
  size_t index = 0;
  for (const auto& [iter, by_rank] : files) {
    if (index++ % static_cast<size_t>(opt.stride) != 0) continue;
    for (int r = 0; r < ranks; ++r)
      if (!by_rank.count(r))
        diags.error({folder, 0, 0}, fmt::format("iteration {}", iter), fmt::format("rank {} has no log file", r));
    if (diags.has_errors()) break;
    TraceRecord rec;
    rec.iter = iter;
    for (int r = 0; r < ranks; ++r) {
      const std::string& path = by_rank.at(r);
      RankLog log = parse_rank_file(path, diags);
      if (diags.has_errors()) break;
      const int layers = static_cast<int>(log.size());
      const int experts = log.empty() ? 0 : static_cast<int>(log.begin()->second.at(0).size());
      if (t.moe_layers == 0) {
        t.moe_layers = layers, t.experts = experts;
      }
      if (layers != t.moe_layers || log.rbegin()->first != layers - 1) {
        diags.error({path, 0, 0}, "layers", fmt::format("expected layers 0..{} as in the other files", t.moe_layers - 1));
        break;
      }
      if (rec.counts.empty()) rec.counts.assign(static_cast<size_t>(t.moe_layers) * ranks * t.experts, 0);
      for (const auto& [layer, mbs] : log) {
        for (size_t b = 0; b < mbs.size(); ++b) {
          if (static_cast<int>(mbs[b].size()) != t.experts) {
            diags.error({path, layer + 1, 0}, fmt::format("layer {}.micro_batch {}", layer, b),
                        fmt::format("expected {} experts, got {}", t.experts, mbs[b].size()));
            continue;
          }
          uint64_t s = 0;
          for (double x : mbs[b]) s += static_cast<uint64_t>(x);
          if (mb_sum == 0) mb_sum = s;
          if (s != mb_sum)
            diags.error({path, layer + 1, 0}, fmt::format("layer {}.micro_batch {}", layer, b),
                        fmt::format("counts sum to {}, other micro-batches to {}", s, mb_sum));
          for (int e = 0; e < t.experts; ++e)
            rec.counts[(static_cast<size_t>(layer) * ranks + r) * t.experts + e] += static_cast<uint32_t>(mbs[b][e]);
        }
        if (t.tokens_per_source == 0 && !mbs.empty())
          t.tokens_per_source = static_cast<int64_t>(mb_sum * mbs.size() / static_cast<uint64_t>(opt.top_k));
      }
      if (diags.has_errors()) break;
    }
    if (diags.has_errors()) break;
    t.records.push_back(std::move(rec));
  }
  diags.throw_if_errors();
  if (mb_sum % static_cast<uint64_t>(opt.top_k) != 0)
    throw InputError({folder, 0, 0}, "--top-k", fmt::format("micro-batch sums ({}) are not a multiple of top_k {}", mb_sum, opt.top_k));
  Diagnostics check;
  validate_trace(t, folder, check);
  check.throw_if_errors();
  return t;
}

}  // namespace hs::workload
