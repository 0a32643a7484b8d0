#include "transport/plan_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <fmt/format.h>
#include <simdjson.h>

#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"
#include "util/text_escape.hpp"

namespace hs::transport {

namespace od = simdjson::ondemand;

const char* broadcast_name(Broadcast b) { return b == Broadcast::kDirect ? "direct" : "chain"; }

// ---- writer ---------------------------------------------------------------------------------------

namespace {

std::string int_list(const std::vector<int>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += fmt::format("{}{}", i ? ", " : "", v[i]);
  return o + "]";
}

// Shortest text that reads back as the same double ("524288", "1536.5").
std::string number(double x) { return fmt::format("{}", x); }

std::string transfers(const std::vector<ChunkTransfer>& ts) {
  if (ts.empty()) return "[]";
  std::string o = "[\n";
  for (size_t i = 0; i < ts.size(); ++i)
    o += fmt::format("        {{\"chunk\": {}, \"src\": {}, \"dst\": {}}}{}\n", ts[i].chunk, ts[i].src, ts[i].dst,
                     i + 1 < ts.size() ? "," : "");
  return o + "      ]";
}

}  // namespace

std::string render_plan(const Plan& plan) {
  const PlanProvenance& p = plan.provenance;
  std::string sets = "[";
  for (size_t i = 0; i < p.sets.size(); ++i) sets += fmt::format("{}\"{}\"", i ? ", " : "", json_escape(p.sets[i]));
  sets += "]";
  std::string o = "{\n";
  o += fmt::format("  \"schema\": \"{}\",\n", kPlanSchema);
  o += "  \"provenance\": {\n";
  o += fmt::format("    \"tool\": \"{}\",\n", json_escape(p.tool));
  o += fmt::format("    \"topology\": \"{}\",\n", json_escape(p.topology_file));
  o += fmt::format("    \"topology_hash\": \"{}\",\n", json_escape(p.topology_hash));
  o += fmt::format("    \"trace\": \"{}\",\n", json_escape(p.trace_file));
  o += fmt::format("    \"trace_hash\": \"{}\",\n", json_escape(p.trace_hash));
  o += fmt::format("    \"model\": \"{}\",\n", json_escape(p.model));
  o += fmt::format("    \"model_source\": \"{}\",\n", json_escape(p.model_source));
  o += fmt::format("    \"sets\": {},\n", sets);
  o += fmt::format("    \"strategy\": \"{}\",\n", json_escape(p.strategy));
  o += fmt::format("    \"iteration\": {},\n", p.iteration);
  o += fmt::format("    \"trace_record\": {},\n", p.trace_record);
  o += fmt::format("    \"seed\": {},\n", p.seed);
  o += fmt::format("    \"gpus\": {},\n", p.gpus);
  o += fmt::format("    \"nodes\": {}\n", p.nodes);
  o += "  },\n";
  o += fmt::format("  \"gpus\": {},\n", plan.gpus);
  o += fmt::format("  \"node_of\": {},\n", int_list(plan.node_of));
  o += "  \"layers\": [\n";
  for (size_t li = 0; li < plan.layers.size(); ++li) {
    const PlanLayer& l = plan.layers[li];
    o += "    {\n";
    o += fmt::format("      \"layer\": {},\n", l.layer);
    o += fmt::format("      \"chunk_bytes\": {},\n", number(l.chunk_bytes));
    o += fmt::format("      \"broadcast\": \"{}\",\n", broadcast_name(l.broadcast));
    o += fmt::format("      \"owner\": {},\n", int_list(l.owner));
    o += "      \"replicas\": [\n";
    for (size_t c = 0; c < l.replicas.size(); ++c)
      o += fmt::format("        {}{}\n", int_list(l.replicas[c]), c + 1 < l.replicas.size() ? "," : "");
    o += "      ],\n";
    o += fmt::format("      \"spag\": {},\n", transfers(l.spag));
    o += fmt::format("      \"sprs\": {},\n", transfers(l.sprs));
    o += "      \"dispatch_bytes\": [\n";
    for (size_t r = 0; r < l.dispatch_bytes.size(); ++r) {
      std::string row = "[";
      for (size_t c = 0; c < l.dispatch_bytes[r].size(); ++c)
        row += fmt::format("{}{}", c ? ", " : "", number(l.dispatch_bytes[r][c]));
      o += fmt::format("        {}]{}\n", row, r + 1 < l.dispatch_bytes.size() ? "," : "");
    }
    o += "      ]\n";
    o += fmt::format("    }}{}\n", li + 1 < plan.layers.size() ? "," : "");
  }
  o += "  ]\n}\n";
  return o;
}

// ---- reader ---------------------------------------------------------------------------------------

namespace {

constexpr int kMaxErrors = 50;
constexpr int kMaxGpus = 4096;        // as the topology loader
constexpr int kMaxChunks = 1 << 20;   // experts per layer, as the model loader

// Thrown after a malformed-JSON diagnostic: nothing after it can be read reliably.
struct Malformed {};

// Where each element of a layer was in the file, for the semantic checks' diagnostics.
struct LayerWhere {
  const char* layer = nullptr;
  const char* owner = nullptr;
  std::vector<const char*> owner_elem;
  const char* replicas = nullptr;
  std::vector<const char*> replica_list;  // [chunk]
  const char* spag = nullptr;
  const char* sprs = nullptr;
  std::vector<const char*> spag_elem, sprs_elem;
  const char* dispatch = nullptr;
  std::vector<const char*> dispatch_row;
  bool complete = true;  // every field present and well-formed: the semantic checks can run
};

class Reader {
 public:
  Reader(const simdjson::padded_string& buf, std::string file) : buf_(buf), file_(std::move(file)) {}

  Plan run() {
    Plan plan;
    od::parser parser;
    od::document doc;
    try {
      if (auto e = parser.iterate(buf_).get(doc)) malformed(nullptr, e);
      parse_root(doc, plan);
      const char* rest = nullptr;  // simdjson 3.0's document has no at_end(): no location = at the end
      if (!doc.current_location().get(rest)) error(rest, "", "unexpected content after the plan object");
    } catch (const Malformed&) {
      diags_.throw_if_errors();
    }
    if (!diags_.has_errors()) check(plan);
    diags_.throw_if_errors();
    return plan;
  }

 private:
  // ---- diagnostics
  SourceLocation at(const char* p) const { return locate_in_text(buf_.data(), buf_.size(), p, file_); }
  void error(const char* where, std::string field, std::string msg) {
    if (static_cast<int>(diags_.all().size()) >= kMaxErrors) return;
    diags_.error(at(where), std::move(field), std::move(msg));
  }
  [[noreturn]] void malformed(const char* where, simdjson::error_code e) {
    if (e == simdjson::UTF8_ERROR)
      error(first_non_utf8(buf_.data(), buf_.size()), "", "not UTF-8 text (JSON must be UTF-8)");
    else
      error(where ? where : buf_.data(), "", fmt::format("malformed JSON: {}", simdjson::error_message(e)));
    throw Malformed{};
  }
  static const char* where(od::value& v) {
    const char* p = nullptr;
    if (v.current_location().get(p)) return nullptr;
    return p;
  }

  // ---- typed values (a wrong type is reported, the value skipped)
  std::optional<int64_t> integer(od::value v, const std::string& field, int64_t min, int64_t max) {
    const char* w = where(v);
    int64_t x = 0;
    if (v.get_int64().get(x) || x < min || x > max) {
      error(w, field, fmt::format("expected an integer in [{}, {}]", min, max));
      return std::nullopt;
    }
    return x;
  }
  std::optional<double> non_negative(od::value v, const std::string& field) {
    const char* w = where(v);
    double x = 0;
    if (v.get_double().get(x) || !std::isfinite(x) || x < 0) {
      error(w, field, "expected a non-negative number");
      return std::nullopt;
    }
    return x;
  }
  std::optional<std::string> string(od::value v, const std::string& field) {
    const char* w = where(v);
    std::string_view s;
    if (v.get_string().get(s)) {
      error(w, field, "expected a string");
      return std::nullopt;
    }
    return std::string(s);
  }
  // Calls f(element, index) for each element of an array; false (reported) if v is not an array.
  template <class F>
  bool array(od::value v, const std::string& field, const char* what, F&& f) {
    const char* w = where(v);
    od::array a;
    if (v.get_array().get(a)) {
      error(w, field, fmt::format("expected an array of {}", what));
      return false;
    }
    size_t i = 0;
    for (auto el : a) {
      od::value e;
      if (auto err = el.get(e)) malformed(w, err);
      f(e, i++);
    }
    return true;
  }
  // Calls f(key, value) for each field of an object, reporting repeated keys; false if not an object.
  template <class F>
  bool object(od::value v, const std::string& field, F&& f) {
    const char* w = where(v);
    od::object o;
    if (v.get_object().get(o)) {
      error(w, field, "expected an object");
      return false;
    }
    return fields(o, w, field, f);
  }
  template <class F>
  bool fields(od::object& o, const char* w, const std::string& field, F&& f) {
    std::vector<std::string> seen;
    for (auto fld : o) {
      std::string_view key;
      if (auto e = fld.unescaped_key().get(key)) malformed(w, e);
      od::value v;
      if (auto e = fld.value().get(v)) malformed(w, e);
      const std::string k(key);
      const std::string path = field.empty() ? k : field + "." + k;
      bool repeated = false;
      for (const auto& s : seen) repeated = repeated || s == k;
      if (repeated) {
        error(where(v), path, "key given twice in this object");
        continue;
      }
      seen.push_back(k);
      f(k, v, path);
    }
    return true;
  }
  std::vector<int> ints(od::value v, const std::string& field, int64_t min, int64_t max, bool& ok,
                        std::vector<const char*>* locs = nullptr) {
    std::vector<int> out;
    ok = array(v, field, "integers", [&](od::value e, size_t i) {
      if (locs) locs->push_back(where(e));
      auto x = integer(e, fmt::format("{}[{}]", field, i), min, max);
      if (!x) ok = false;
      out.push_back(x ? static_cast<int>(*x) : -1);
    }) && ok;
    return out;
  }
  void missing(const char* w, const std::string& field, const std::vector<std::string>& seen,
               std::initializer_list<const char*> required, bool& complete) {
    for (const char* r : required) {
      bool found = false;
      for (const auto& s : seen) found = found || s == r;
      if (!found) {
        error(w, field.empty() ? r : field + "." + r, "missing");
        complete = false;
      }
    }
  }

  // ---- structure
  void parse_root(od::document& doc, Plan& plan) {
    od::object root;
    if (auto e = doc.get_object().get(root)) {
      if (e == simdjson::INCORRECT_TYPE) {
        error(buf_.data(), "", "expected a JSON object with schema, provenance, gpus, node_of, layers");
        throw Malformed{};
      }
      malformed(nullptr, e);
    }
    std::vector<std::string> seen;
    bool complete = true;
    fields(root, buf_.data(), "", [&](const std::string& k, od::value v, const std::string& path) {
      seen.push_back(k);
      const char* w = where(v);
      if (k == "schema") {
        auto s = string(v, path);
        if (s && *s != kPlanSchema) {
          error(w, path, fmt::format("expected \"{}\", got \"{}\"", kPlanSchema, *s));
          complete = false;
        }
      } else if (k == "provenance") {
        parse_provenance(v, path, plan.provenance);
      } else if (k == "gpus") {
        auto x = integer(v, path, 1, kMaxGpus);
        if (x) plan.gpus = static_cast<int>(*x);
        else complete = false;
      } else if (k == "node_of") {
        bool ok = true;
        node_of_at_ = w;
        plan.node_of = ints(v, path, 0, kMaxGpus - 1, ok);
        complete = complete && ok;
      } else if (k == "layers") {
        layers_at_ = w;
        if (!array(v, path, "layer objects", [&](od::value e, size_t i) {
              plan.layers.emplace_back();
              where_.emplace_back();
              parse_layer(e, fmt::format("layers[{}]", i), plan.layers.back(), where_.back());
            }))
          complete = false;
      } else {
        error(w, path, "unknown key (known: schema, provenance, gpus, node_of, layers)");
      }
    });
    missing(buf_.data(), "", seen, {"schema", "gpus", "node_of", "layers"}, complete);
    root_complete_ = complete;
  }

  void parse_provenance(od::value v, const std::string& field, PlanProvenance& p) {
    provenance_at_ = where(v);
    object(v, field, [&](const std::string& k, od::value x, const std::string& path) {
      auto str = [&](std::string& out) {
        if (auto s = string(x, path)) out = *s;
      };
      auto num = [&](int& out, int64_t min, int64_t max) {
        if (auto n = integer(x, path, min, max)) out = static_cast<int>(*n);
      };
      if (k == "tool") str(p.tool);
      else if (k == "topology") str(p.topology_file);
      else if (k == "topology_hash") str(p.topology_hash);
      else if (k == "trace") str(p.trace_file);
      else if (k == "trace_hash") str(p.trace_hash);
      else if (k == "model") str(p.model);
      else if (k == "model_source") str(p.model_source);
      else if (k == "strategy") str(p.strategy);
      else if (k == "iteration") num(p.iteration, 0, INT32_MAX);
      else if (k == "trace_record") num(p.trace_record, 0, INT32_MAX);
      else if (k == "gpus") num(p.gpus, 1, kMaxGpus);
      else if (k == "nodes") num(p.nodes, 1, kMaxGpus);
      else if (k == "seed") {
        uint64_t s = 0;
        if (x.get_uint64().get(s)) error(where(x), path, "expected a non-negative integer");
        else p.seed = s;
      } else if (k == "sets") {
        array(x, path, "strings", [&](od::value e, size_t i) {
          if (auto s = string(e, fmt::format("{}[{}]", path, i))) p.sets.push_back(*s);
        });
      } else {
        error(where(x), path,
              "unknown key (known: tool, topology, topology_hash, trace, trace_hash, model, model_source, sets, "
              "strategy, iteration, trace_record, seed, gpus, nodes)");
      }
    });
  }

  std::vector<ChunkTransfer> parse_transfers(od::value v, const std::string& field, bool& ok,
                                             std::vector<const char*>& locs) {
    std::vector<ChunkTransfer> out;
    ok = array(v, field, "{\"chunk\", \"src\", \"dst\"} objects", [&](od::value e, size_t i) {
      const std::string elem = fmt::format("{}[{}]", field, i);
      const char* w = where(e);
      locs.push_back(w);
      ChunkTransfer t{-1, -1, -1};
      std::vector<std::string> seen;
      bool complete = true;
      const bool is_object = object(e, elem, [&](const std::string& k, od::value x, const std::string& path) {
        seen.push_back(k);
        int* slot = k == "chunk" ? &t.chunk : k == "src" ? &t.src : k == "dst" ? &t.dst : nullptr;
        if (!slot) {
          error(where(x), path, "unknown key (known: chunk, src, dst)");
          return;
        }
        auto n = integer(x, path, 0, INT32_MAX);
        if (n) *slot = static_cast<int>(*n);
        else complete = false;
      });
      if (!is_object) {
        ok = false;
      } else {
        missing(w, elem, seen, {"chunk", "src", "dst"}, complete);
        ok = ok && complete;
      }
      out.push_back(t);
    }) && ok;
    return out;
  }

  void parse_layer(od::value v, const std::string& field, PlanLayer& l, LayerWhere& lw) {
    lw.layer = where(v);
    std::vector<std::string> seen;
    const bool is_object = object(v, field, [&](const std::string& k, od::value x, const std::string& path) {
      seen.push_back(k);
      const char* w = where(x);
      bool ok = true;
      if (k == "layer") {
        auto n = integer(x, path, 0, INT32_MAX);
        if (n) l.layer = static_cast<int>(*n);
        else ok = false;
      } else if (k == "chunk_bytes") {
        auto b = non_negative(x, path);
        if (b && *b <= 0) error(w, path, "expected a positive number of bytes");
        if (b && *b > 0) l.chunk_bytes = *b;
        else ok = false;
      } else if (k == "broadcast") {
        auto s = string(x, path);
        if (s && (*s == "chain" || *s == "direct")) {
          l.broadcast = *s == "direct" ? Broadcast::kDirect : Broadcast::kChain;
        } else {
          if (s) error(w, path, fmt::format("expected \"chain\" or \"direct\", got \"{}\"", *s));
          ok = false;
        }
      } else if (k == "owner") {
        lw.owner = w;
        l.owner = ints(x, path, 0, INT32_MAX, ok, &lw.owner_elem);
      } else if (k == "replicas") {
        lw.replicas = w;
        ok = array(x, path, "integer arrays (one per chunk)", [&](od::value e, size_t c) {
          lw.replica_list.push_back(where(e));
          bool ok_c = true;
          l.replicas.push_back(ints(e, fmt::format("{}[{}]", path, c), 0, INT32_MAX, ok_c));
          ok = ok && ok_c;
        }) && ok;
      } else if (k == "spag") {
        lw.spag = w;
        l.spag = parse_transfers(x, path, ok, lw.spag_elem);
      } else if (k == "sprs") {
        lw.sprs = w;
        l.sprs = parse_transfers(x, path, ok, lw.sprs_elem);
      } else if (k == "dispatch_bytes") {
        lw.dispatch = w;
        ok = array(x, path, "rows of byte counts", [&](od::value row, size_t r) {
          lw.dispatch_row.push_back(where(row));
          std::vector<double> values;
          const std::string rf = fmt::format("{}[{}]", path, r);
          ok = array(row, rf, "byte counts", [&](od::value e, size_t c) {
                 auto b = non_negative(e, fmt::format("{}[{}]", rf, c));
                 if (!b) ok = false;
                 values.push_back(b.value_or(0));
               }) && ok;
          l.dispatch_bytes.push_back(std::move(values));
        }) && ok;
      } else {
        error(w, path, "unknown key (known: layer, chunk_bytes, broadcast, owner, replicas, spag, sprs, dispatch_bytes)");
      }
      lw.complete = lw.complete && ok;
    });
    if (!is_object) {
      lw.complete = false;
      return;
    }
    missing(lw.layer, field, seen, {"layer", "chunk_bytes", "broadcast", "owner", "replicas", "spag", "sprs", "dispatch_bytes"},
            lw.complete);
  }

  // ---- meaning: indices in range, spAG delivers every copy, spRS reduces every copy into its owner
  void check(const Plan& plan) {
    if (!root_complete_) return;
    const int n = plan.gpus;
    if (static_cast<int>(plan.node_of.size()) != n)
      error(node_of_at_, "node_of", fmt::format("expected {} entries (one node per GPU), got {}", n, plan.node_of.size()));
    int nodes = 0;
    for (size_t g = 0; g < plan.node_of.size(); ++g) {
      if (plan.node_of[g] >= n) error(node_of_at_, fmt::format("node_of[{}]", g), fmt::format("node {} with only {} GPUs", plan.node_of[g], n));
      nodes = std::max(nodes, plan.node_of[g] + 1);
    }
    const PlanProvenance& p = plan.provenance;
    if (p.gpus != 0 && p.gpus != n)
      error(provenance_at_, "provenance.gpus", fmt::format("{} GPUs, but the plan has gpus: {}", p.gpus, n));
    if (p.nodes != 0 && p.nodes != nodes)
      error(provenance_at_, "provenance.nodes", fmt::format("{} nodes, but node_of names {}", p.nodes, nodes));
    if (plan.layers.empty()) error(layers_at_, "layers", "expected at least one layer");
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      const std::string field = fmt::format("layers[{}]", i);
      if (!where_[i].complete) continue;
      if (i > 0 && where_[i - 1].complete && plan.layers[i].layer <= plan.layers[i - 1].layer)
        error(where_[i].layer, field + ".layer",
              fmt::format("layers must be listed in increasing order: {} after {}", plan.layers[i].layer,
                          plan.layers[i - 1].layer));
      check_layer(plan.layers[i], where_[i], field, n);
    }
  }

  void check_layer(const PlanLayer& l, const LayerWhere& lw, const std::string& field, int n) {
    const int chunks = l.chunks();
    const size_t before = diags_.all().size();
    if (chunks == 0 || chunks > kMaxChunks) {
      error(lw.owner, field + ".owner", fmt::format("expected 1 to {} chunks, got {}", kMaxChunks, chunks));
      return;
    }
    for (int c = 0; c < chunks; ++c)
      if (l.owner[c] >= n)
        error(lw.owner_elem[c], fmt::format("{}.owner[{}]", field, c), fmt::format("GPU {} out of range (gpus: {})", l.owner[c], n));
    if (static_cast<int>(l.replicas.size()) != chunks)
      error(lw.replicas, field + ".replicas",
            fmt::format("expected {} lists (one per chunk, as owner), got {}", chunks, l.replicas.size()));
    if (diags_.all().size() != before) return;
    for (int c = 0; c < chunks; ++c) {
      const auto& r = l.replicas[c];
      const std::string rf = fmt::format("{}.replicas[{}]", field, c);
      for (size_t i = 0; i < r.size(); ++i) {
        if (r[i] >= n) error(lw.replica_list[c], rf, fmt::format("GPU {} out of range (gpus: {})", r[i], n));
        else if (r[i] == l.owner[c]) error(lw.replica_list[c], rf, fmt::format("lists the owner, GPU {}", r[i]));
        else if (i > 0 && r[i] <= r[i - 1]) error(lw.replica_list[c], rf, "expected GPUs in increasing order, each once");
      }
    }
    if (static_cast<int>(l.dispatch_bytes.size()) != n)
      error(lw.dispatch, field + ".dispatch_bytes", fmt::format("expected {} rows (gpus), got {}", n, l.dispatch_bytes.size()));
    for (size_t r = 0; r < l.dispatch_bytes.size(); ++r)
      if (static_cast<int>(l.dispatch_bytes[r].size()) != n)
        error(lw.dispatch_row[r], fmt::format("{}.dispatch_bytes[{}]", field, r),
              fmt::format("expected {} entries (gpus), got {}", n, l.dispatch_bytes[r].size()));
    if (diags_.all().size() != before) return;
    auto is_replica = [&](int c, int g) { return std::binary_search(l.replicas[c].begin(), l.replicas[c].end(), g); };
    auto in_range = [&](const ChunkTransfer& t, const char* w, const std::string& tf) {
      bool ok = true;
      if (t.chunk >= chunks) error(w, tf + ".chunk", fmt::format("chunk {} out of range ({} chunks)", t.chunk, chunks)), ok = false;
      if (t.src >= n) error(w, tf + ".src", fmt::format("GPU {} out of range (gpus: {})", t.src, n)), ok = false;
      if (t.dst >= n) error(w, tf + ".dst", fmt::format("GPU {} out of range (gpus: {})", t.dst, n)), ok = false;
      if (ok && t.src == t.dst) error(w, tf, fmt::format("GPU {} sends to itself", t.src)), ok = false;
      return ok;
    };
    // spAG, in order: who holds what after each transfer.
    std::map<std::pair<int, int>, int> received;  // (chunk, gpu) -> copies delivered
    for (size_t i = 0; i < l.spag.size(); ++i) {
      const ChunkTransfer& t = l.spag[i];
      const std::string tf = fmt::format("{}.spag[{}]", field, i);
      const char* w = lw.spag_elem[i];
      if (!in_range(t, w, tf)) continue;
      const bool src_holds = t.src == l.owner[t.chunk] || received.count({t.chunk, t.src}) > 0;
      if (!src_holds)
        error(w, tf, fmt::format("GPU {} sends chunk {} before it holds it (owner {}; no earlier transfer delivers it)", t.src,
                                 t.chunk, l.owner[t.chunk]));
      else if (l.broadcast == Broadcast::kDirect && t.src != l.owner[t.chunk])
        error(w, tf, fmt::format("a direct broadcast sends from the owner, GPU {}, not GPU {}", l.owner[t.chunk], t.src));
      if (!is_replica(t.chunk, t.dst))
        error(w, tf, fmt::format("GPU {} is not a replica of chunk {} (replicas: {})", t.dst, t.chunk, int_list(l.replicas[t.chunk])));
      else if (received[{t.chunk, t.dst}]++ > 0)
        error(w, tf, fmt::format("GPU {} receives chunk {} a second time", t.dst, t.chunk));
    }
    for (int c = 0; c < chunks; ++c)
      for (int g : l.replicas[c])
        if (received.count({c, g}) == 0)
          error(lw.replica_list[c], fmt::format("{}.replicas[{}]", field, c), fmt::format("GPU {} never receives chunk {} in spag", g, c));
    // spRS: a tree into the owner. parent[(chunk, gpu)] = where that copy's partial sum goes.
    std::map<std::pair<int, int>, int> parent;
    for (size_t i = 0; i < l.sprs.size(); ++i) {
      const ChunkTransfer& t = l.sprs[i];
      const std::string tf = fmt::format("{}.sprs[{}]", field, i);
      const char* w = lw.sprs_elem[i];
      if (!in_range(t, w, tf)) continue;
      const int owner = l.owner[t.chunk];
      if (!is_replica(t.chunk, t.src)) {
        error(w, tf, fmt::format("GPU {} holds no copy of chunk {} to return (replicas: {}{})", t.src, t.chunk,
                                 int_list(l.replicas[t.chunk]), t.src == owner ? "; it is the owner" : ""));
        continue;
      }
      if (t.dst != owner && !is_replica(t.chunk, t.dst)) {
        error(w, tf, fmt::format("GPU {} neither owns nor holds chunk {}", t.dst, t.chunk));
        continue;
      }
      if (l.broadcast == Broadcast::kDirect && t.dst != owner)
        error(w, tf, fmt::format("a direct reduce sends to the owner, GPU {}, not GPU {}", owner, t.dst));
      if (!parent.emplace(std::pair{t.chunk, t.src}, t.dst).second)
        error(w, tf, fmt::format("GPU {} returns its gradient of chunk {} a second time", t.src, t.chunk));
    }
    for (int c = 0; c < chunks; ++c)
      for (int g : l.replicas[c]) {
        const std::string rf = fmt::format("{}.replicas[{}]", field, c);
        if (parent.count({c, g}) == 0) {
          error(lw.replica_list[c], rf, fmt::format("GPU {} never returns its gradient of chunk {} in sprs", g, c));
          continue;
        }
        int at = g;
        size_t steps = 0;
        while (at != l.owner[c] && steps <= l.replicas[c].size()) {
          auto it = parent.find({c, at});
          if (it == parent.end()) break;  // reported above for that GPU
          at = it->second;
          ++steps;
        }
        if (steps > l.replicas[c].size())
          error(lw.replica_list[c], rf, fmt::format("the gradient of GPU {} for chunk {} goes round a cycle in sprs, never "
                                                    "reaching the owner, GPU {}", g, c, l.owner[c]));
      }
  }

  const simdjson::padded_string& buf_;
  std::string file_;
  Diagnostics diags_;
  std::vector<LayerWhere> where_;
  const char *node_of_at_ = nullptr, *layers_at_ = nullptr, *provenance_at_ = nullptr;
  bool root_complete_ = false;
};

}  // namespace

// A UTF-8 byte-order mark is skipped, as in traces.
Plan parse_plan(const std::string& text, const std::string& file) {
  const bool bom = text.rfind("\xEF\xBB\xBF", 0) == 0;
  const simdjson::padded_string buf(bom ? std::string_view(text).substr(3) : std::string_view(text));
  return Reader(buf, file).run();
}

Plan read_plan(const std::string& path) { return parse_plan(read_file(path), path); }

}  // namespace hs::transport
