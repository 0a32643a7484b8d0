#include "workload/trace_import.hpp"
#include "workload/trace_io.hpp"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <regex>
#include <simdjson.h>
#include <tuple>

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

// One file: layer -> its line and its micro-batches' expert counts.
struct LayerRow {
  int line = 0;
  std::vector<std::vector<double>> mbs;
};
using RankLog = std::map<int, LayerRow>;

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
    const int line = c.line;
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
        if (ec2 != std::errc() || !(x >= 0 && x <= 9007199254740992.0) || x != std::floor(x))  // 2^53: exact counts only
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
    out[layer] = {line, std::move(mbs)};
  }
  return out;
}

}  // namespace

Trace import_smartmoe(const std::string& folder, const ImportOptions& opt) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError({folder, 0, 0}, "", "expected a folder of table_iter{ITER}_rank{RANK}.log files");
  static const std::regex kName(R"(table_iter(\d{1,15})_rank(\d{1,6})\.log)");
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
      if (log.empty() || log.begin()->second.mbs.empty()) {
        diags.error({path, 0, 0}, "layers", "no layer rows in this file");
        break;
      }
      const int layers = static_cast<int>(log.size());
      const int experts = static_cast<int>(log.begin()->second.mbs.front().size());
      if (t.moe_layers == 0) {
        t.moe_layers = layers, t.experts = experts;
      }
      if (layers != t.moe_layers || log.rbegin()->first != layers - 1) {
        diags.error({path, 0, 0}, "layers", fmt::format("expected layers 0..{} as in the other files", t.moe_layers - 1));
        break;
      }
      const int M = static_cast<int>(log.begin()->second.mbs.size());
      if (t.micro_batches == 0) t.micro_batches = M;
      if (rec.micro.empty()) rec.micro.assign(static_cast<size_t>(t.micro_batches) * t.record_size(), 0);
      for (const auto& [layer, row] : log) {
        const auto& mbs = row.mbs;
        // Every layer of every file records the same micro-batches: a trace record is one iteration
        // of M micro-batches.
        if (static_cast<int>(mbs.size()) != t.micro_batches) {
          diags.error({path, row.line, 1}, fmt::format("layer {}", layer),
                      fmt::format("{} micro-batches, but {} in the first layer of the first file (every layer, rank "
                                  "and iteration must record the same micro-batches)",
                                  mbs.size(), t.micro_batches));
          continue;
        }
        for (size_t b = 0; b < mbs.size(); ++b) {
          if (static_cast<int>(mbs[b].size()) != t.experts) {
            diags.error({path, row.line, 1}, fmt::format("layer {}.micro_batch {}", layer, b),
                        fmt::format("expected {} experts, got {}", t.experts, mbs[b].size()));
            continue;
          }
          uint64_t s = 0;
          for (double x : mbs[b]) s += static_cast<uint64_t>(x);
          if (*std::max_element(mbs[b].begin(), mbs[b].end()) > UINT32_MAX) {
            diags.error({path, row.line, 1}, fmt::format("layer {}.micro_batch {}", layer, b), "a count exceeds 2^32 - 1");
            continue;
          }
          if (mb_sum == 0) mb_sum = s;
          if (s != mb_sum)
            diags.error({path, row.line, 1}, fmt::format("layer {}.micro_batch {}", layer, b),
                        fmt::format("counts sum to {}, other micro-batches to {}", s, mb_sum));
          uint32_t* slice = rec.micro.data() + b * t.record_size();
          for (int e = 0; e < t.experts; ++e)
            slice[(static_cast<size_t>(layer) * ranks + r) * t.experts + e] = static_cast<uint32_t>(mbs[b][e]);
        }
        if (t.tokens_per_source == 0 && !mbs.empty())
          t.tokens_per_source = static_cast<int64_t>(mb_sum * mbs.size() / static_cast<uint64_t>(opt.top_k));
      }
      if (diags.has_errors()) break;
    }
    if (diags.has_errors()) break;
    if (!sum_micro_batches(t, rec)) {  // a micro-batch count fits uint32 (a token picks an expert once)
      diags.error({folder, 0, 0}, fmt::format("iteration {}", iter), "a count summed over micro-batches exceeds 2^32 - 1");
      break;
    }
    t.records.push_back(std::move(rec));
  }
  diags.throw_if_errors();
  t.provenance_json = fmt::format(
      "{{\"kind\": \"imported\", \"importer\": \"smartmoe\", \"source\": \"{}\", \"stride\": {}, "
      "\"micro_batches\": {}, \"micro_batch_assignments\": {}, \"note\": \"every micro-batch of every rank, "
      "layer and iteration summed to micro_batch_assignments\"}}",
      fs::path(folder).filename().string(), opt.stride, t.micro_batches, mb_sum);
  if (mb_sum % static_cast<uint64_t>(opt.top_k) != 0)
    throw InputError({folder, 0, 0}, "--top-k", fmt::format("micro-batch sums ({}) are not a multiple of top_k {}", mb_sum, opt.top_k));
  Diagnostics check;
  validate_trace(t, folder, check);
  check.throw_if_errors();
  return t;
}

}  // namespace hs::workload

namespace hs::workload {

namespace {

// Builds a per-source trace from a sparse map (iter, micro-batch, layer, source, expert) -> count,
// checking completeness and equal per-source sums; `where` names the input in errors, each cell keeps
// the input line it first came from. Without a micro-batch index in the input (`micro` false) every
// key has micro_batch 0 and the trace has no micro-batch axis; with one, micro-batches 0..M-1 must
// all appear for every kept iteration (M = the largest index + 1).
struct Key {
  long long iter;
  int micro_batch, layer, source, expert;
  bool operator<(const Key& o) const {
    return std::tie(iter, micro_batch, layer, source, expert) <
           std::tie(o.iter, o.micro_batch, o.layer, o.source, o.expert);
  }
};
struct Cell {
  uint64_t count = 0;
  int line = 0;                     // first input line that added to it
  int expert_col = 0, count_col = 0;  // on that line, where the input has columns (CSV); 0 = unknown
};
using CellMap = std::map<Key, Cell>;

void add_cell(CellMap& m, const Key& k, uint64_t count, int line, int expert_col = 0, int count_col = 0) {
  Cell& c = m[k];
  if (c.line == 0) c.line = line, c.expert_col = expert_col, c.count_col = count_col;
  c.count += count;
}

// The top-k values a per-source sum of `want` assignments allows when one cell holds `most`: k
// divides the sum and no expert gets more than the tokens (a token picks an expert at most once).
std::vector<int> allowed_top_k(uint64_t want, uint64_t most) {
  std::vector<int> ks;
  for (uint64_t k = 1; k <= std::min<uint64_t>(want, 1024); ++k)
    if (want % k == 0 && most <= want / k) ks.push_back(static_cast<int>(k));
  return ks;
}

std::string list_top_k(const std::vector<int>& ks) {
  std::string s;
  for (size_t i = 0; i < ks.size() && i < 12; ++i) s += fmt::format("{}{}", i ? ", " : "", ks[i]);
  if (ks.size() > 12) s += ", ...";
  return s;
}

Trace assemble(const CellMap& counts, bool micro, int experts, const ImportOptions& opt, const std::string& where,
               const std::string& importer) {
  if (counts.empty()) throw InputError({where, 0, 0}, "", "no counts found");
  int L = 0, S = 0, E = experts, M = 1;
  std::vector<long long> iters;
  std::map<long long, int> first_line;  // of each iteration
  for (const auto& [k, c] : counts) {
    L = std::max(L, k.layer + 1);
    S = std::max(S, k.source + 1);
    M = std::max(M, k.micro_batch + 1);
    if (experts == 0) E = std::max(E, k.expert + 1);
    else if (k.expert >= experts)
      throw InputError({where, c.line, c.expert_col}, "expert", fmt::format("expert id {} but --experts is {}", k.expert, experts));
    if (iters.empty() || iters.back() != k.iter) iters.push_back(k.iter);
    auto [it, fresh] = first_line.emplace(k.iter, c.line);
    if (!fresh) it->second = std::min(it->second, c.line);
  }
  Trace t;
  t.model_preset = opt.model_preset;
  t.moe_layers = L;
  t.experts = E;
  t.top_k = opt.top_k;  // 0 (from the data) is settled below, from the per-source sums
  t.sources = S;
  t.micro_batches = micro ? M : 0;
  t.axes = TraceAxes::kLayerSourceExpert;
  t.provenance_json = fmt::format("{{\"kind\": \"imported\", \"importer\": \"{}\", \"source\": \"{}\", \"stride\": {}}}",
                                  importer, std::filesystem::path(where).filename().string(), opt.stride);
  const size_t size = t.record_size();
  std::map<long long, size_t> rec_of;
  for (size_t i = 0; i < iters.size(); i += static_cast<size_t>(opt.stride)) {
    rec_of[iters[i]] = t.records.size();
    t.records.push_back({iters[i], std::vector<uint32_t>(size * static_cast<size_t>(M), 0)});
  }
  // Per (iter, micro-batch, layer, source): the line its first row came from, for errors.
  std::map<std::tuple<long long, int, int, int>, const Cell*> group_cell;
  const Cell* most = nullptr;  // the largest cell kept, with its key
  Key most_key{};
  for (const auto& [k, c] : counts) {
    auto it = rec_of.find(k.iter);
    if (it == rec_of.end()) continue;
    if (c.count > UINT32_MAX)
      throw InputError({where, c.line, c.count_col}, fmt::format("iter {}, layer {}, source {}, expert {}", k.iter, k.layer, k.source, k.expert),
                       "a count exceeds 2^32 - 1");
    if (!most || c.count > most->count) most = &c, most_key = k;
    t.records[it->second].counts[static_cast<size_t>(k.micro_batch) * size + (static_cast<size_t>(k.layer) * S + k.source) * E +
                                 k.expert] += static_cast<uint32_t>(c.count);
    auto [g, fresh] = group_cell.emplace(std::tuple{k.iter, k.micro_batch, k.layer, k.source}, &c);
    if (!fresh && c.line < g->second->line) g->second = &c;
  }
  uint64_t want = 0;
  for (const auto& r : t.records)
    for (int mb = 0; mb < M; ++mb)
      for (int l = 0; l < L; ++l)
        for (int s = 0; s < S; ++s) {
          uint64_t sum = 0;
          for (int e = 0; e < E; ++e) sum += r.counts[static_cast<size_t>(mb) * size + (static_cast<size_t>(l) * S + s) * E + e];
          if (want == 0) want = sum;
          const std::string field = micro ? fmt::format("iter {}, micro_batch {}, layer {}, source {}", r.iter, mb, l, s)
                                          : fmt::format("iter {}, layer {}, source {}", r.iter, l, s);
          if (sum == 0)  // absent: located at the iteration's first row
            throw InputError({where, first_line.at(r.iter), 1}, field,
                             micro ? fmt::format("no counts for this (iter, micro_batch, layer, source): every one of the "
                                                 "{} micro-batches x {} layers x {} sources must appear for every kept "
                                                 "iteration (the iteration starts on this line)",
                                                 M, L, S)
                                   : fmt::format("no counts for this (iter, layer, source): every one of the {} layers x {} "
                                                 "sources must appear for every kept iteration (the iteration starts on this line)",
                                                 L, S));
          if (sum != want) {
            const Cell& g = *group_cell.at({r.iter, mb, l, s});
            throw InputError({where, g.line, g.count_col}, field,
                             fmt::format("counts sum to {} but other (iter, {}layer, source) to {}", sum,
                                         micro ? "micro_batch, " : "", want));
          }
        }
  // Top-k: the sums are tokens x top_k and no expert gets more than the tokens. Given, it must fit
  // the counts; not given (0), the counts must allow one value only, else the user is asked for it.
  const std::vector<int> ks = allowed_top_k(want, most ? most->count : 0);
  const std::string group = micro ? "(iter, micro_batch, layer, source)" : "(iter, layer, source)";
  if (opt.top_k == 0) {
    if (ks.size() != 1)
      throw InputError({where, most ? most->line : 0, most ? most->count_col : 0}, "--top-k",
                       fmt::format("the counts (each {} sums to {}) do not say how many experts each token picked: "
                                   "pass --top-k K, the recorded model's experts per token (these counts allow K = {})",
                                   group, want, list_top_k(ks)));
    t.top_k = ks.front();
  } else if (want % static_cast<uint64_t>(opt.top_k) != 0) {
    const Cell& g = *group_cell.begin()->second;
    throw InputError({where, g.line, g.count_col}, "--top-k",
                     fmt::format("each {} sums to {}, not a multiple of --top-k {} (the sums are tokens x top-k); "
                                 "pass the recorded model's --top-k (these counts allow K = {})",
                                 group, want, opt.top_k, list_top_k(ks)));
  } else if (most && most->count > want / static_cast<uint64_t>(opt.top_k)) {
    const Key& k = most_key;
    throw InputError({where, most->line, most->count_col},
                     micro ? fmt::format("count of iter {}, micro_batch {}, layer {}, source {}, expert {}", k.iter, k.micro_batch,
                                         k.layer, k.source, k.expert)
                           : fmt::format("count of iter {}, layer {}, source {}, expert {}", k.iter, k.layer, k.source, k.expert),
                     fmt::format("{} tokens picked this expert but the source has only {} tokens (its sum {} / --top-k {}), "
                                 "and a token picks an expert at most once; pass the recorded model's --top-k (these "
                                 "counts allow K = {})",
                                 most->count, want / static_cast<uint64_t>(opt.top_k), want, opt.top_k, list_top_k(ks)));
  }
  t.tokens_per_source = static_cast<int64_t>(want / static_cast<uint64_t>(t.top_k) * static_cast<uint64_t>(M));
  if (micro)
    for (auto& r : t.records) {
      r.micro = std::move(r.counts);
      if (!sum_micro_batches(t, r))
        throw InputError({where, first_line.at(r.iter), 1}, fmt::format("iter {}", r.iter),
                         "a count summed over the micro-batches exceeds 2^32 - 1");
    }
  Diagnostics d;
  validate_trace(t, where, d);
  d.throw_if_errors();
  return t;
}

SourceLocation locate(const std::string& text, size_t offset, const std::string& file) {
  int line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {file, line, col};
}

}  // namespace

Trace import_megatron(const std::string& path, const ImportOptions& opt, int experts) {
  const std::string text = read_file(path);
  CellMap counts;
  int top_k = 0;
  int micro_first_line = 0;  // first line, and whether it had "micro_batch": every line must agree
  bool micro = false;
  size_t line_start = 0;
  int line_no = 0;
  namespace od = simdjson::ondemand;
  od::parser parser;
  std::vector<int> ids;
  while (line_start < text.size()) {
    size_t end = text.find('\n', line_start);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    const std::string_view line(text.data() + line_start, end - line_start);
    line_start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    simdjson::padded_string buf(line);
    // Column of a position inside this line's copy (1-based); 1 when simdjson cannot say.
    auto col_of = [&](const char* p) {
      return p && p >= buf.data() && p <= buf.data() + buf.size() ? static_cast<int>(p - buf.data()) + 1 : 1;
    };
    auto fail_at = [&](const char* p, const std::string& field, const std::string& msg) {
      throw InputError(SourceLocation{path, line_no, col_of(p)}, field, msg);
    };
    auto where = [](od::value& v) {
      const char* p = nullptr;
      return v.current_location().get(p) ? nullptr : p;
    };
    od::document doc;
    od::object obj;
    if (parser.iterate(buf).get(doc) || doc.get_object().get(obj))
      fail_at(nullptr, "", "expected one JSON object per line: {\"step\", \"layer\", \"rank\", \"top_indices\"}");
    long long step = -1;
    int layer = -1, rank = -1, micro_batch = -1;
    std::vector<std::pair<int, uint64_t>> local;
    bool have_idx = false;
    std::vector<std::string> seen_keys;
    for (auto field : obj) {
      od::raw_json_string raw;
      if (field.key().get(raw)) fail_at(nullptr, "", "malformed JSON");
      const char* key_at = raw.raw() - 1;  // the opening quote
      std::string_view key;
      if (field.unescaped_key().get(key)) fail_at(key_at, "", "malformed JSON key");
      if (std::find(seen_keys.begin(), seen_keys.end(), key) != seen_keys.end())
        fail_at(key_at, std::string(key), "key given twice in this object");
      seen_keys.emplace_back(key);
      od::value v;
      if (field.value().get(v)) fail_at(key_at, std::string(key), "malformed JSON");
      const char* at = where(v);
      int64_t x = 0;
      if (key == "step" || key == "layer" || key == "rank" || key == "micro_batch") {
        if (v.get_int64().get(x) || x < 0 || (key != "step" && x > (1 << 20)))
          fail_at(at, std::string(key), "expected a non-negative integer");
        if (key == "step") step = x;
        else if (key == "layer") layer = static_cast<int>(x);
        else if (key == "rank") rank = static_cast<int>(x);
        else micro_batch = static_cast<int>(x);
      } else if (key == "top_indices") {
        have_idx = true;
        od::array tokens;
        if (v.get_array().get(tokens)) fail_at(at, "top_indices", "expected a list of per-token expert-id lists");
        size_t tok = 0;
        for (auto tv : tokens) {
          od::value t;
          if (tv.get(t)) fail_at(at, "top_indices", "malformed JSON");
          const char* tat = where(t);
          od::array arr;
          if (t.get_array().get(arr)) fail_at(tat, fmt::format("top_indices[{}]", tok), "expected a list of expert ids");
          ids.clear();
          for (auto idv : arr) {
            od::value idval;
            if (idv.get(idval)) fail_at(tat, fmt::format("top_indices[{}]", tok), "malformed JSON");
            const char* iat = where(idval);
            int64_t e = 0;
            if (idval.get_int64().get(e) || e < 0 || e >= (experts > 0 ? experts : (1 << 20)))
              fail_at(iat, fmt::format("top_indices[{}][{}]", tok, ids.size()),
                      experts > 0 ? fmt::format("expected an expert id in [0, {}) (--experts)", experts)
                                  : std::string("expected a non-negative expert id"));
            if (std::find(ids.begin(), ids.end(), static_cast<int>(e)) != ids.end())
              fail_at(iat, fmt::format("top_indices[{}][{}]", tok, ids.size()),
                      fmt::format("expert {} appears twice for one token (top-k picks distinct experts)", e));
            ids.push_back(static_cast<int>(e));
          }
          const int k = static_cast<int>(ids.size());
          if (top_k == 0) top_k = k;
          if (k != top_k || k == 0)
            fail_at(tat, fmt::format("top_indices[{}]", tok),
                    fmt::format("expected {} expert ids per token (as the first token), got {}", top_k, k));
          for (int e : ids) local.push_back({e, 1});
          ++tok;
        }
      } else {
        fail_at(key_at, std::string(key), "unknown key (known: step, layer, rank, micro_batch, top_indices)");
      }
    }
    // A location left after the object means another value follows it on the line.
    if (const char* rest = nullptr; !doc.current_location().get(rest))
      fail_at(rest, "", "expected one JSON object per line: something follows it");
    if (step < 0 || layer < 0 || rank < 0 || !have_idx)
      fail_at(nullptr, "", "expected the keys step, layer, rank and top_indices");
    if (micro_first_line == 0) micro_first_line = line_no, micro = micro_batch >= 0;
    if (micro != (micro_batch >= 0))
      fail_at(nullptr, "micro_batch",
              fmt::format("line {} {} a micro_batch index and this one {}: give it on every line or on none",
                          micro_first_line, micro ? "has" : "has no", micro ? "has none" : "has one"));
    for (auto [e, c] : local) add_cell(counts, {step, std::max(micro_batch, 0), layer, rank, e}, c, line_no);
  }
  // The data says how many experts each token picks; --top-k only matters for an empty file.
  ImportOptions o = opt;
  if (top_k > 0) o.top_k = top_k;
  return assemble(counts, micro, experts, o, path, "megatron-router-trace");
}

Trace import_csv(const std::string& path, const ImportOptions& opt, int experts) {
  const std::string text = read_file(path);
  CellMap counts;
  size_t pos = 0;
  int line_no = 0;
  bool header = false, micro = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    std::string line = text.substr(pos, end - pos);
    const size_t base = pos;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (!header) {
      micro = line == "iter,micro_batch,layer,source,expert,count";
      if (line != "iter,layer,source,expert,count" && !micro)
        throw InputError(locate(text, base, path), "header",
                         "expected the header iter,layer,source,expert,count (or iter,micro_batch,layer,source,expert,count)");
      header = true;
      continue;
    }
    // Fields in file order: iter, [micro_batch,] layer, source, expert, count.
    const int n = micro ? 6 : 5;
    const char* names5[] = {"iter", "layer", "source", "expert", "count"};
    const char* names6[] = {"iter", "micro_batch", "layer", "source", "expert", "count"};
    const char** names = micro ? names6 : names5;
    long long v[6];
    int col[6] = {};  // 1-based column where each field starts
    const char* p = line.data();
    const char* e = line.data() + line.size();
    for (int i = 0; i < n; ++i) {
      col[i] = static_cast<int>(p - line.data()) + 1;
      auto [q, ec] = std::from_chars(p, e, v[i]);
      const bool index = i >= 1 && i <= n - 2;  // micro_batch, layer, source, expert
      if (ec != std::errc() || v[i] < 0 || (index && v[i] > (1 << 20)))
        throw InputError({path, line_no, static_cast<int>(p - line.data()) + 1}, names[i],
                         index ? "expected a non-negative integer up to 2^20" : "expected a non-negative integer");
      p = q;
      if (i < n - 1) {
        if (p == e || *p != ',')
          throw InputError({path, line_no, static_cast<int>(p - line.data()) + 1}, names[i],
                           fmt::format("expected {} comma-separated fields", n));
        ++p;
      } else if (p != e) {
        throw InputError({path, line_no, static_cast<int>(p - line.data()) + 1}, "count", "trailing characters after the count");
      }
    }
    const int o = micro ? 1 : 0;
    add_cell(counts,
             {v[0], micro ? static_cast<int>(v[1]) : 0, static_cast<int>(v[1 + o]), static_cast<int>(v[2 + o]),
              static_cast<int>(v[3 + o])},
             static_cast<uint64_t>(v[4 + o]), line_no, col[3 + o], col[4 + o]);
  }
  if (!header) throw InputError({path, 1, 1}, "header", "empty file: expected the header iter,layer,source,expert,count");
  return assemble(counts, micro, experts, opt, path, "csv");
}

}  // namespace hs::workload

namespace hs::workload {

namespace {

// Re-bins one slice of counts ([layer][source][expert], S sources of T tokens) to n sources of
// S x T / n tokens; see rebin_sources below for the method and why it keeps every invariant.
std::vector<uint32_t> rebin_slice(const uint32_t* in, int L, int S, int E, uint64_t T, uint64_t K, int n) {
  const uint64_t Tn = T * static_cast<uint64_t>(S) / static_cast<uint64_t>(n);
  std::vector<uint64_t> left(E), piece(E);
  std::vector<std::pair<uint64_t, int>> rem(E);
  std::vector<uint32_t> out(static_cast<size_t>(L) * n * E, 0);
  for (int l = 0; l < L; ++l) {
    for (int s = 0; s < S; ++s) {
      const uint32_t* c = in + (static_cast<size_t>(l) * S + s) * E;
      for (int e = 0; e < E; ++e) left[e] = c[e];
      uint64_t tokens_left = T;
      const uint64_t lo = static_cast<uint64_t>(s) * T, hi = lo + T;
      for (uint64_t j = lo / Tn; j * Tn < hi; ++j) {
        const uint64_t o = std::min(hi, (j + 1) * Tn) - std::max(lo, j * Tn);
        if (o == 0) continue;
        // Integer arithmetic (counts < 2^32, o <= T): piece = floor(left x o / tokens_left), the
        // shortfall goes to the largest remainders; the remainders sum to shortfall x tokens_left,
        // each below tokens_left, so at least `shortfall` of them are non-zero.
        uint64_t assigned = 0;
        for (int e = 0; e < E; ++e) {
          piece[e] = left[e] * o / tokens_left;
          rem[e] = {left[e] * o % tokens_left, e};
          assigned += piece[e];
        }
        std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (size_t i = 0; assigned < o * K; ++i) ++piece[rem[i].second], ++assigned;
        uint32_t* dst = out.data() + (static_cast<size_t>(l) * n + j) * E;
        for (int e = 0; e < E; ++e) {
          dst[e] += static_cast<uint32_t>(piece[e]);
          left[e] -= piece[e];
        }
        tokens_left -= o;
      }
    }
  }
  return out;
}

}  // namespace

void rebin_sources(Trace& t, int n, const std::string& where) {
  if (!t.per_source()) throw InputError({where, 0, 0}, "--sources", "a trace with global counts has no sources to re-bin");
  const int S = t.sources, L = t.moe_layers, E = t.experts;
  if (n == S) return;
  // With micro-batches each micro-batch slice is re-binned on its own (its tokens must split evenly)
  // and the iteration is their sum.
  const int M = std::max(1, t.micro_batches);
  const uint64_t T = static_cast<uint64_t>(t.tokens_per_source_micro_batch()), K = static_cast<uint64_t>(t.top_k);
  const uint64_t total = T * static_cast<uint64_t>(S);
  if (n <= 0 || total % static_cast<uint64_t>(n) != 0)
    throw InputError({where, 0, 0}, "--sources",
                     fmt::format("{} sources x {} tokens{} = {} tokens do not split evenly over {} sources; "
                                 "choose a count that divides {} (`hecate-sim run` re-bins other ratios in fractions)",
                                 S, T, t.per_micro_batch() ? " per micro-batch" : " per iteration", total, n, total));
  // Lay the old sources' tokens end to end: old source s owns [s*T, (s+1)*T), new source j owns
  // [j*Tn, (j+1)*Tn). Each overlap (s, j) is a piece of `o` tokens; old source s's counts are dealt
  // to its pieces in order, each piece getting the share o / (tokens left) of what is left of every
  // expert, rounded by largest remainder (ties to the lower expert id) so the piece sums to exactly
  // o x top_k. With r_e <= R (left counts never exceed left tokens) the piece's count is at most
  // ceil(r_e o / R) <= o and what stays is at most R - o: the cap holds for every piece, hence for
  // every new source, and per-expert totals are conserved. Deterministic: no randomness, fixed order.
  const size_t old_size = t.record_size();
  t.sources = n;
  for (auto& r : t.records) {
    if (!t.per_micro_batch()) {
      r.counts = rebin_slice(r.counts.data(), L, S, E, T, K, n);
      continue;
    }
    std::vector<uint32_t> micro;
    micro.reserve(static_cast<size_t>(M) * t.record_size());
    for (int mb = 0; mb < M; ++mb) {
      const auto slice = rebin_slice(r.micro.data() + static_cast<size_t>(mb) * old_size, L, S, E, T, K, n);
      micro.insert(micro.end(), slice.begin(), slice.end());
    }
    r.micro = std::move(micro);
    sum_micro_batches(t, r);  // per-expert totals are conserved, so the old sums fit
  }
  t.tokens_per_source = static_cast<int64_t>(total / static_cast<uint64_t>(n) * static_cast<uint64_t>(M));
  append_provenance(t, "rebinned_sources",
                    fmt::format("{{\"from\": {}, \"to\": {}, \"method\": \"proportional, largest remainder\"}}", S, n));
  Diagnostics d;
  validate_trace(t, where, d);
  d.throw_if_errors();
}

void append_provenance(Trace& t, const std::string& key, const std::string& json) {
  if (t.provenance_json.empty() || t.provenance_json.back() != '}') return;
  t.provenance_json = t.provenance_json.substr(0, t.provenance_json.size() - 1) +
                      fmt::format("{}\"{}\": {}}}", t.provenance_json.size() > 2 ? ", " : "", key, json);
}

}  // namespace hs::workload
