#include "sweep/sweep_results.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <simdjson.h>
#include <sstream>

#include "util/text_escape.hpp"

namespace hs::sweep {

Row row_of(const SweepPoint& p) {
  Row r;
  r.index = p.index;
  r.role = p.index < 0 ? "defaults" : "point";
  r.key = p.key;
  r.topology = p.topology;
  r.trace = p.trace;
  r.network = p.network;
  r.model_file = p.model_file;
  r.calibration = p.calibration;
  r.layout = p.layout;
  r.model = p.model_sets();
  r.strategy = p.strategy;
  r.spec = p.spec();
  r.knobs = p.knobs;
  return r;
}

double objective_value(const Row& r, Objective o) {
  switch (o) {
    case Objective::kMeanTime: return r.mean_ms;
    case Objective::kP99Time: return r.p99_ms;
    case Objective::kTokensPerSecond: return -r.tokens_per_s;
  }
  return r.mean_ms;
}

double objective_display(const Row& r, Objective o) {
  return o == Objective::kTokensPerSecond ? r.tokens_per_s : objective_value(r, o);
}

const char* objective_unit(Objective o) { return o == Objective::kTokensPerSecond ? "tokens/s" : "ms"; }

namespace {
std::string num(double v) { return fmt::format("{:.9g}", v); }
}  // namespace

std::string to_json_line(const Row& r) {
  std::string knobs;
  for (const auto& [k, v] : r.knobs) knobs += fmt::format("{}\"{}\": \"{}\"", knobs.empty() ? "" : ", ", json_escape(k), json_escape(v));
  return fmt::format(
      "{{\"index\": {}, \"role\": \"{}\", \"key\": \"{}\", \"topology\": \"{}\", \"trace\": \"{}\", \"network\": \"{}\", "
      "\"model_file\": \"{}\", \"model\": \"{}\", \"calibration\": \"{}\", \"layout\": \"{}\", \"strategy\": \"{}\", \"spec\": \"{}\", \"knobs\": {{{}}}, \"status\": \"{}\", \"error\": \"{}\", "
      "\"mean_ms\": {}, \"p50_ms\": {}, \"p99_ms\": {}, \"tokens_per_s\": {}, \"peak_memory_gib\": {}, \"dropped_fraction\": {}, \"fits\": {}, "
      "\"feasible\": {}}}\n",
      r.index, r.role, r.key, json_escape(r.topology), json_escape(r.trace), r.network, json_escape(r.model_file), json_escape(r.model), json_escape(r.calibration),
      json_escape(r.layout), r.strategy, json_escape(r.spec), knobs, r.status, json_escape(r.error), num(r.mean_ms), num(r.p50_ms),
      num(r.p99_ms), num(r.tokens_per_s), num(r.peak_memory_gib), num(r.dropped_fraction), r.fits, r.feasible);
}

std::optional<Row> parse_json_line(std::string_view line) {
  if (line.empty() || line.back() != '}') return std::nullopt;
  simdjson::ondemand::parser parser;
  simdjson::padded_string buf(line);
  try {
    auto doc = parser.iterate(buf);
    Row r;
    r.index = static_cast<int>(int64_t(doc["index"]));
    r.role = std::string(std::string_view(doc["role"]));
    r.key = std::string(std::string_view(doc["key"]));
    r.topology = std::string(std::string_view(doc["topology"]));
    r.trace = std::string(std::string_view(doc["trace"]));
    r.network = std::string(std::string_view(doc["network"]));
    r.model_file = std::string(std::string_view(doc["model_file"]));
    r.model = std::string(std::string_view(doc["model"]));
    r.calibration = std::string(std::string_view(doc["calibration"]));
    if (std::string_view v; !doc["layout"].get_string().get(v)) r.layout = std::string(v);  // absent before layouts
    r.strategy = std::string(std::string_view(doc["strategy"]));
    r.spec = std::string(std::string_view(doc["spec"]));
    for (auto f : doc["knobs"].get_object()) {
      std::string k(std::string_view(f.unescaped_key()));
      r.knobs.emplace_back(k, std::string(std::string_view(f.value())));
    }
    r.status = std::string(std::string_view(doc["status"]));
    r.error = std::string(std::string_view(doc["error"]));
    r.mean_ms = double(doc["mean_ms"]);
    r.p50_ms = double(doc["p50_ms"]);
    r.p99_ms = double(doc["p99_ms"]);
    r.tokens_per_s = double(doc["tokens_per_s"]);
    r.peak_memory_gib = double(doc["peak_memory_gib"]);
    if (double v; !doc["dropped_fraction"].get_double().get(v)) r.dropped_fraction = v;  // absent in older rows
    r.fits = bool(doc["fits"]);
    r.feasible = bool(doc["feasible"]);
    if (r.key.size() != 16) return std::nullopt;
    return r;
  } catch (const simdjson::simdjson_error&) {
    return std::nullopt;
  }
}

std::vector<Row> read_rows(const std::string& path, int* torn) {
  std::vector<Row> rows;
  std::ifstream in(path, std::ios::binary);
  if (!in) return rows;
  std::string line;
  int bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (auto r = parse_json_line(line)) rows.push_back(std::move(*r));
    else ++bad;
  }
  if (torn) *torn = bad;
  return rows;
}

std::vector<std::string> knob_columns(const SweepSpec& s) {
  std::vector<std::string> cols;
  for (const auto& st : s.strategies)
    for (const auto& k : st.knobs)
      if (std::find(cols.begin(), cols.end(), k.name) == cols.end()) cols.push_back(k.name);
  return cols;
}

std::string csv_header(const std::vector<std::string>& cols) {
  std::string h = "index,role,key,topology,trace,network,model_file,model,calibration,layout,strategy,spec";
  for (const auto& c : cols) h += "," + csv_field(c);
  return h + ",status,mean_ms,p50_ms,p99_ms,tokens_per_s,peak_memory_gib,dropped_fraction,fits,feasible,error\n";
}

std::string to_csv_line(const Row& r, const std::vector<std::string>& cols) {
  std::string l = fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", r.index, r.role, r.key, csv_field(r.topology),
                              csv_field(r.trace), r.network, csv_field(r.model_file), csv_field(r.model),
                              csv_field(r.calibration), csv_field(r.layout), r.strategy, csv_field(r.spec));
  for (const auto& c : cols) {
    std::string v;
    for (const auto& [k, x] : r.knobs)
      if (k == c) v = x;
    l += "," + csv_field(v);
  }
  return l + fmt::format(",{},{},{},{},{},{},{},{},{},{}\n", r.status, num(r.mean_ms), num(r.p50_ms), num(r.p99_ms),
                         num(r.tokens_per_s), num(r.peak_memory_gib), num(r.dropped_fraction), r.fits, r.feasible,
                         csv_field(r.error));
}

void sort_rows(std::vector<Row>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const bool da = a.index < 0, db = b.index < 0;
    if (da != db) return db;
    if (!da) return a.index < b.index;
    return a.key < b.key;
  });
}

Summary summarize(const std::vector<Row>& rows, const SweepSpec& s) {
  Summary sum;
  for (const auto& st : s.strategies) {
    const Row* best = nullptr;
    for (const auto& r : rows)
      if (r.role == "point" && r.feasible && r.strategy == st.name &&
          (!best || objective_value(r, s.objective) < objective_value(*best, s.objective)))
        best = &r;
    if (best && std::none_of(sum.best.begin(), sum.best.end(), [&](const Row& b) { return b.key == best->key; }))
      sum.best.push_back(*best);
  }
  std::vector<const Row*> f;
  for (const auto& r : rows)
    if (r.role == "point" && r.feasible) f.push_back(&r);
  std::stable_sort(f.begin(), f.end(), [&](const Row* a, const Row* b) {
    if (a->peak_memory_gib != b->peak_memory_gib) return a->peak_memory_gib < b->peak_memory_gib;
    return objective_value(*a, s.objective) < objective_value(*b, s.objective);
  });
  double best_so_far = 0;
  for (const Row* r : f) {
    const double v = objective_value(*r, s.objective);
    if (sum.pareto.empty() || v < best_so_far) {
      sum.pareto.push_back(*r);
      best_so_far = v;
    }
  }
  return sum;
}

}  // namespace hs::sweep
