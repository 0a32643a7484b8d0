#include "workload/trace_io.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <simdjson.h>

#include "util/atomic_file.hpp"

#include <cstdio>
#include <stdexcept>
#include <unistd.h>
#include <zlib.h>

namespace hs::workload {

namespace od = simdjson::ondemand;

// JSON allows a key twice in an object and readers keep whichever comes last or first: here it is
// an error, never a silent choice.
struct DuplicateKeys {
  std::vector<std::string> seen;
  bool repeated(std::string_view k) {
    for (const auto& s : seen)
      if (s == k) return true;
    seen.emplace_back(k);
    return false;
  }
};

namespace {

constexpr int kMaxErrors = 50;
constexpr int kMaxCountDepth = 4;  // nesting of counts: [micro_batch][layer][source][expert]

// Maps a pointer into the parsed buffer back to 1-based line:column (only on errors).
struct Locator {
  const char* base;
  size_t size;
  std::string file;
  SourceLocation at(const char* p) const { return locate_in_text(base, size, p, file); }
};

class Parser {
 public:
  Parser(const simdjson::padded_string& buf, const std::string& file, Diagnostics& diags)
      : buf_(buf), loc_{buf.data(), buf.size(), file}, diags_(diags) {}

  bool too_many() const { return static_cast<int>(diags_.all().size()) >= kMaxErrors; }

  void error(const char* where, std::string field, std::string msg) {
    if (too_many()) return;
    diags_.error(loc_.at(where), std::move(field), std::move(msg));
  }

  const char* where(od::value& v) {
    const char* p = nullptr;
    if (v.current_location().get(p)) return nullptr;
    return p;
  }

  std::optional<int64_t> uint_field(od::value v, const std::string& field, int64_t min, int64_t max) {
    const char* w = where(v);
    uint64_t x = 0;
    if (v.get_uint64().get(x) || static_cast<int64_t>(x) < min || x > static_cast<uint64_t>(max)) {
      error(w, field, fmt::format("expected an integer in [{}, {}]", min, max));
      return std::nullopt;
    }
    return static_cast<int64_t>(x);
  }

  std::optional<std::string> string_field(od::value v, const std::string& field) {
    const char* w = where(v);
    std::string_view s;
    if (v.get_string().get(s)) {
      error(w, field, "expected a string");
      return std::nullopt;
    }
    return std::string(s);
  }

  // Parses nested arrays of non-negative integers into `flat`, recording the shape; returns false
  // on a structural problem (already reported).
  bool parse_counts(od::value v, const std::string& field, int depth, std::vector<size_t>& shape,
                    std::vector<uint32_t>& flat) {
    const char* w = where(v);
    od::array arr;
    if (v.get_array().get(arr)) {
      error(w, field, "expected an array (counts are nested arrays of integers)");
      return false;
    }
    size_t n = 0;
    // Field paths ("records[3].counts[1][2]") are built only when reporting an error: this loop
    // runs once per count and dominates reading large traces.
    auto sub = [&] { return fmt::format("{}[{}]", field, n); };
    for (auto elem : arr) {
      od::value e;
      if (elem.get(e)) {
        error(w, field, "malformed JSON inside counts");
        return false;
      }
      od::json_type jt;
      if (e.type().get(jt)) {
        error(where(e), sub(), "malformed JSON value");
        return false;
      }
      if (jt == od::json_type::array) {
        if (static_cast<int>(shape.size()) == depth + 1) {
          error(where(e), sub(), "counts nested too deeply: expected integers at this level");
          return false;
        }
        // Before the first integer fixes the shape, depth is bounded by the deepest axes only
        // ([micro_batch][layer][source][expert]): unbounded, 200,000 '[' overflowed the stack
        // (found by fuzzing).
        if (depth + 1 >= kMaxCountDepth) {
          error(where(e), sub(), fmt::format("counts nested too deeply: at most {} levels ([micro_batch][layer][source][expert])", kMaxCountDepth));
          return false;
        }
        if (!parse_counts(e, sub(), depth + 1, shape, flat)) return false;
      } else {
        if (static_cast<int>(shape.size()) > depth + 1) {
          error(where(e), sub(), "expected an array here (counts are not rectangular)");
          return false;
        }
        uint64_t x = 0;
        if (jt != od::json_type::number || e.get_uint64().get(x) || x > UINT32_MAX) {
          // Accept integral floats such as 12.0 (some tools write them).
          double d = 0;
          if (jt == od::json_type::number && !e.get_double().get(d) && d >= 0 && d <= UINT32_MAX &&
              d == static_cast<double>(static_cast<uint64_t>(d))) {
            x = static_cast<uint64_t>(d);
          } else {
            error(where(e), sub(), "expected a non-negative integer count (< 2^32)");
            return false;
          }
        }
        if (static_cast<int>(shape.size()) <= depth) shape.resize(depth + 1, 0);
        flat.push_back(static_cast<uint32_t>(x));
      }
      ++n;
    }
    if (static_cast<int>(shape.size()) <= depth) shape.resize(depth + 1, 0);
    if (shape[depth] == 0) {
      shape[depth] = n;
    } else if (shape[depth] != n) {
      const std::string axis = depth < static_cast<int>(axis_names_.size()) ? fmt::format(" along axis {}", axis_names_[depth]) : "";
      error(w, field, fmt::format("expected {} entries{} (as in the rest of the trace), got {}", shape[depth], axis, n));
      return false;
    }
    return true;
  }

  Trace run() {
    Trace t;
    od::parser parser;
    od::document doc;
    auto fail_json = [&](simdjson::error_code e, const char* w) {
      if (e == simdjson::UTF8_ERROR)
        error(first_non_utf8(buf_.data(), buf_.size()), "", "not UTF-8 text (JSON must be UTF-8)");
      else
        error(w ? w : buf_.data(), "", fmt::format("malformed JSON: {}", simdjson::error_message(e)));
    };
    if (auto e = parser.iterate(buf_).get(doc)) {
      fail_json(e, nullptr);
      return t;
    }
    od::object root;
    if (auto e = doc.get_object().get(root)) {
      error(buf_.data(), "", "expected a JSON object with format, version, model, workload, axes, records");
      (void)e;
      return t;
    }
    bool have_format = false, have_version = false, have_model = false, have_workload = false,
         have_axes = false, have_records = false;
    int minor_version = 0;               // 1.x; the micro-batch axis needs x >= 1
    bool micro_axis = false;             // axes start with "micro_batch"
    const char* version_at = nullptr;
    const char* micro_batches_at = nullptr;
    std::vector<size_t> shape;
    const char* records_at = nullptr;
    const char* model_at = nullptr;
    const char* workload_at = nullptr;
    std::vector<const char*> record_at;
    DuplicateKeys root_keys;
    for (auto fld : root) {
      std::string_view key;
      if (auto e = fld.unescaped_key().get(key)) { fail_json(e, nullptr); return t; }
      od::value v;
      if (auto e = fld.value().get(v)) { fail_json(e, nullptr); return t; }
      const char* w = where(v);
      if (root_keys.repeated(key)) { error(w, std::string(key), "key given twice in this object"); continue; }
      if (key == "format") {
        have_format = true;
        auto s = string_field(v, "format");
        if (s && *s != "hecate-sim/expert-load-trace")
          error(w, "format", fmt::format("expected \"hecate-sim/expert-load-trace\", got \"{}\"", *s));
      } else if (key == "version") {
        have_version = true;
        version_at = w;
        auto s = string_field(v, "version");
        if (s && !(s->rfind("1.", 0) == 0 || *s == "1"))
          error(w, "version", fmt::format("this reader reads version 1.x (1.0, and 1.1 with micro-batches), got \"{}\"", *s));
        else if (s && s->size() > 2)
          std::from_chars(s->data() + 2, s->data() + s->size(), minor_version);
      } else if (key == "model") {
        have_model = true;
        model_at = w;
        od::object m;
        if (v.get_object().get(m)) { error(w, "model", "expected an object"); continue; }
        DuplicateKeys model_keys;
        for (auto mf : m) {
          std::string_view k;
          if (auto e = mf.unescaped_key().get(k)) { fail_json(e, w); return t; }
          od::value mv;
          if (auto e = mf.value().get(mv)) { fail_json(e, w); return t; }
          if (model_keys.repeated(k)) { error(where(mv), fmt::format("model.{}", k), "key given twice in this object"); continue; }
          if (k == "preset") {
            if (auto s = string_field(mv, "model.preset")) t.model_preset = *s;
          } else if (k == "moe_layers") {
            if (auto x = uint_field(mv, "model.moe_layers", 1, 100000)) t.moe_layers = static_cast<int>(*x);
          } else if (k == "experts") {
            if (auto x = uint_field(mv, "model.experts", 1, 1000000)) t.experts = static_cast<int>(*x);
          } else if (k == "top_k") {
            if (auto x = uint_field(mv, "model.top_k", 1, 1024)) t.top_k = static_cast<int>(*x);
          } else {
            error(where(mv), fmt::format("model.{}", k), "unknown key (known: preset, moe_layers, experts, top_k)");
          }
        }
      } else if (key == "workload") {
        have_workload = true;
        workload_at = w;
        od::object m;
        if (v.get_object().get(m)) { error(w, "workload", "expected an object"); continue; }
        DuplicateKeys workload_keys;
        for (auto mf : m) {
          std::string_view k;
          if (auto e = mf.unescaped_key().get(k)) { fail_json(e, w); return t; }
          od::value mv;
          if (auto e = mf.value().get(mv)) { fail_json(e, w); return t; }
          if (workload_keys.repeated(k)) { error(where(mv), fmt::format("workload.{}", k), "key given twice in this object"); continue; }
          if (k == "sources") {
            if (auto x = uint_field(mv, "workload.sources", 1, 1000000)) t.sources = static_cast<int>(*x);
          } else if (k == "tokens_per_source") {
            if (auto x = uint_field(mv, "workload.tokens_per_source", 1, int64_t{1} << 40)) t.tokens_per_source = *x;
          } else if (k == "micro_batches") {
            micro_batches_at = where(mv);
            if (auto x = uint_field(mv, "workload.micro_batches", 1, 1 << 20)) t.micro_batches = static_cast<int>(*x);
          } else {
            error(where(mv), fmt::format("workload.{}", k), "unknown key (known: sources, tokens_per_source, micro_batches)");
          }
        }
      } else if (key == "axes") {
        have_axes = true;
        static constexpr const char* kAxesHelp =
            "expected [\"layer\", \"expert\"] or [\"layer\", \"source\", \"expert\"], optionally with \"micro_batch\" first";
        od::array a;
        std::vector<std::string> names;
        if (v.get_array().get(a)) { error(w, "axes", kAxesHelp); continue; }
        for (auto el : a) {
          std::string_view s;
          if (el.get_string().get(s)) { names.push_back("?"); continue; }
          names.emplace_back(s);
        }
        axis_names_ = names;  // for errors in the counts that follow
        micro_axis = !names.empty() && names.front() == "micro_batch";
        if (micro_axis) names.erase(names.begin());
        if (names == std::vector<std::string>{"layer", "expert"}) t.axes = TraceAxes::kLayerExpert;
        else if (names == std::vector<std::string>{"layer", "source", "expert"}) t.axes = TraceAxes::kLayerSourceExpert;
        else error(w, "axes", kAxesHelp);
      } else if (key == "provenance") {
        std::string_view raw;
        if (simdjson::to_json_string(v).get(raw)) { error(w, "provenance", "malformed JSON"); continue; }
        t.provenance_json = std::string(raw);
        while (!t.provenance_json.empty() && (t.provenance_json.back() == ' ' || t.provenance_json.back() == '\n'))
          t.provenance_json.pop_back();
      } else if (key == "records") {
        have_records = true;
        records_at = w;
        od::array recs;
        if (v.get_array().get(recs)) { error(w, "records", "expected an array of {\"iter\", \"counts\"} objects"); continue; }
        size_t i = 0;
        for (auto relem : recs) {
          od::value rv;
          if (auto e = relem.get(rv)) { fail_json(e, w); return t; }
          const char* rw = where(rv);
          std::string rf = fmt::format("records[{}]", i);
          od::object ro;
          if (rv.get_object().get(ro)) { error(rw, rf, "expected an object {\"iter\": N, \"counts\": [...]}"); return t; }
          TraceRecord rec;
          bool have_iter = false, have_counts = false;
          DuplicateKeys record_keys;
          for (auto rfld : ro) {
            std::string_view k;
            if (auto e = rfld.unescaped_key().get(k)) { fail_json(e, rw); return t; }
            od::value x;
            if (auto e = rfld.value().get(x)) { fail_json(e, rw); return t; }
            if (record_keys.repeated(k)) { error(where(x), fmt::format("{}.{}", rf, k), "key given twice in this object"); return t; }
            if (k == "iter") {
              have_iter = true;
              if (auto it = uint_field(x, rf + ".iter", 0, INT64_MAX)) rec.iter = *it;
            } else if (k == "counts") {
              have_counts = true;
              rec.counts.reserve(shape.empty() ? 0 : flat_size(shape));
              if (!parse_counts(x, rf + ".counts", 0, shape, rec.counts)) return t;
            } else {
              error(where(x), rf + "." + std::string(k), "unknown key (known: iter, counts)");
            }
          }
          if (!have_iter) error(rw, rf + ".iter", "missing required field");
          if (!have_counts) error(rw, rf + ".counts", "missing required field");
          if (!t.records.empty() && rec.iter <= t.records.back().iter)
            error(rw, rf + ".iter", fmt::format("iterations must increase: {} follows {}", rec.iter, t.records.back().iter));
          t.records.push_back(std::move(rec));
          record_at.push_back(rw);
          ++i;
          if (too_many()) return t;
        }
      } else {
        error(w, std::string(key), "unknown key (known: format, version, model, workload, axes, provenance, records)");
      }
    }
    // simdjson 3.0's On-Demand document has no at_end(): where the document still has a location
    // after the root object, something follows it (another value: `{...} {}` had been read as the
    // first object alone); otherwise the last character must close the object.
    if (const char* rest = nullptr; !doc.current_location().get(rest)) {
      error(rest, "", "trailing content after the JSON object");
    } else {
      size_t n = buf_.size();
      while (n > 0 && (buf_.data()[n - 1] == ' ' || buf_.data()[n - 1] == '\n' || buf_.data()[n - 1] == '\r' ||
                       buf_.data()[n - 1] == '\t'))
        --n;
      if (n == 0 || buf_.data()[n - 1] != '}') error(buf_.data() + (n ? n - 1 : 0), "", "trailing content after the JSON object");
    }
    const char* top = buf_.data();
    if (!have_format) error(top, "format", "missing required field (\"hecate-sim/expert-load-trace\")");
    if (!have_version) error(top, "version", "missing required field (\"1.0\")");
    if (!have_model) error(top, "model", "missing required field");
    if (!have_workload) error(top, "workload", "missing required field");
    if (!have_axes) error(top, "axes", "missing required field");
    if (!have_records) error(top, "records", "missing required field");
    if (have_model && (t.moe_layers == 0 || t.experts == 0 || t.top_k == 0))
      error(model_at, "model", "needs moe_layers, experts and top_k");
    if (have_workload && (t.sources == 0 || t.tokens_per_source == 0))
      error(workload_at, "workload", "needs sources and tokens_per_source");
    // The micro-batch axis (v1.1): named in axes, counted in workload.micro_batches, both or neither.
    if (have_axes && have_workload && micro_axis && t.micro_batches == 0)
      error(workload_at, "workload.micro_batches",
            "axes start with \"micro_batch\": give the number of micro-batches per iteration");
    if (have_axes && t.micro_batches > 0 && !micro_axis)
      error(micro_batches_at, "axes",
            fmt::format("workload.micro_batches is {} but axes have no \"micro_batch\" (put it first)", t.micro_batches));
    if (have_version && micro_axis && minor_version < 1)
      error(version_at, "version", "the micro_batch axis needs version 1.1 or later");
    if (t.micro_batches > 0 && t.tokens_per_source % t.micro_batches != 0)
      error(micro_batches_at, "workload.micro_batches",
            fmt::format("{} micro-batches do not split tokens_per_source {} (the iteration's tokens) evenly",
                        t.micro_batches, t.tokens_per_source));
    if (diags_.has_errors()) return t;
    if (t.records.empty()) {
      error(records_at, "records", "a trace needs at least one record");
      return t;
    }
    // Shape against header.
    std::vector<size_t> want = t.per_source()
        ? std::vector<size_t>{size_t(t.moe_layers), size_t(t.sources), size_t(t.experts)}
        : std::vector<size_t>{size_t(t.moe_layers), size_t(t.experts)};
    std::vector<std::string> names = {"layers (model.moe_layers)", "experts (model.experts)"};
    if (t.per_source()) names.insert(names.begin() + 1, "sources (workload.sources)");
    if (t.per_micro_batch()) {
      want.insert(want.begin(), size_t(t.micro_batches));
      names.insert(names.begin(), "micro-batches (workload.micro_batches)");
    }
    if (shape.size() != want.size()) {
      error(record_at[0], "records[0].counts",
            fmt::format("expected {} nesting levels for axes [{}{}], got {}", want.size(),
                        t.per_micro_batch() ? "micro_batch, " : "",
                        t.per_source() ? "layer, source, expert" : "layer, expert", shape.size()));
      return t;
    }
    for (size_t d = 0; d < want.size(); ++d) {
      if (shape[d] != want[d])
        error(record_at[0], "records[0].counts",
              fmt::format("level {} has {} entries but the header says {} {}", d, shape[d], want[d], names[d]));
    }
    if (diags_.has_errors()) return t;
    // Micro-batch slices were read into counts: move them and sum the iteration.
    if (t.per_micro_batch()) {
      for (size_t r = 0; r < t.records.size(); ++r) {
        TraceRecord& rec = t.records[r];
        rec.micro = std::move(rec.counts);
        if (!sum_micro_batches(t, rec))
          error(record_at[r], fmt::format("records[{}].counts", r),
                "an expert's count summed over the micro-batches exceeds 2^32 - 1");
        if (too_many()) return t;
      }
      if (diags_.has_errors()) return t;
    }
    validate_located(t, record_at);
    return t;
  }

  static size_t flat_size(const std::vector<size_t>& shape) {
    size_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }

  void validate_located(const Trace& t, const std::vector<const char*>& record_at) {
    Diagnostics tmp;
    validate_trace(t, loc_.file, tmp);
    // validate_trace names records by index; attach the record's location.
    for (const auto& d : tmp.all()) {
      size_t idx = 0;
      if (d.field.rfind("records[", 0) == 0) {
        std::from_chars(d.field.data() + 8, d.field.data() + d.field.size(), idx);
      }
      const char* w = idx < record_at.size() ? record_at[idx] : nullptr;
      if (too_many()) return;
      auto l = loc_.at(w);
      if (d.severity == Severity::kError) diags_.error(l, d.field, d.message);
      else diags_.warning(l, d.field, d.message);
    }
  }

 private:
  const simdjson::padded_string& buf_;
  Locator loc_;
  Diagnostics& diags_;
  std::vector<std::string> axis_names_;  // as the file gives them, once read
};

}  // namespace

void validate_trace(const Trace& t, const std::string& file, Diagnostics& diags) {
  const int srcs = t.per_source() ? t.sources : 1;
  const bool micro = t.per_micro_batch();
  // Tokens per source (or in all, for global counts) of one slice: the iteration, or one micro-batch.
  const uint64_t tokens = static_cast<uint64_t>(t.tokens_per_source_micro_batch()) * (t.per_source() ? 1 : t.sources);
  const uint64_t want = tokens * static_cast<uint64_t>(t.top_k);
  const size_t size = t.record_size();
  int reported = 0;
  for (size_t r = 0; r < t.records.size() && reported < kMaxErrors; ++r) {
    const auto& rec = t.records[r];
    const size_t expected = micro ? size * static_cast<size_t>(t.micro_batches) : size;
    if ((micro ? rec.micro.size() : rec.counts.size()) != expected || rec.counts.size() != size) {
      diags.error({file, 0, 0}, fmt::format("records[{}].counts", r),
                  fmt::format("expected {} counts, got {}", expected, micro ? rec.micro.size() : rec.counts.size()));
      ++reported;
      continue;
    }
    for (int mb = 0; mb < (micro ? t.micro_batches : 1); ++mb) {
      const uint32_t* slice = micro ? t.micro_slice(rec, mb) : rec.counts.data();
      const std::string prefix = micro ? fmt::format("records[{}].counts[{}]", r, mb) : fmt::format("records[{}].counts", r);
      const std::string of_what = micro ? fmt::format("iter {}, micro-batch {}", rec.iter, mb) : fmt::format("iter {}", rec.iter);
      for (int l = 0; l < t.moe_layers; ++l) {
        for (int s = 0; s < srcs; ++s) {
          const uint32_t* c = slice + (static_cast<size_t>(l) * srcs + s) * t.experts;
          uint64_t sum = 0;
          int over = -1;
          for (int e = 0; e < t.experts; ++e) {
            sum += c[e];
            if (c[e] > tokens && over < 0) over = e;
          }
          std::string where = t.per_source() ? fmt::format("{}[{}][{}]", prefix, l, s) : fmt::format("{}[{}]", prefix, l);
          if (sum != want) {
            diags.error({file, 0, 0}, where,
                        fmt::format("counts sum to {} but tokens x top_k = {} x {} = {} ({})", sum, tokens, t.top_k,
                                    want, of_what));
            ++reported;
          } else if (over >= 0) {
            diags.error({file, 0, 0}, fmt::format("{}[{}]", where, over),
                        fmt::format("expert {} has {} assignments, more than the {} tokens (a token picks an "
                                    "expert at most once, so at most 1/top_k of the assignments)",
                                    over, c[over], tokens));
            ++reported;
          }
          if (reported >= kMaxErrors) return;
        }
      }
    }
    if (micro) {  // what the reader derives; a producer must keep it
      TraceRecord sum = rec;
      if (!sum_micro_batches(t, sum) || sum.counts != rec.counts) {
        diags.error({file, 0, 0}, fmt::format("records[{}].counts", r),
                    "the iteration's counts are not the sum of its micro-batch slices");
        ++reported;
      }
    }
  }
}

namespace {
Trace parse_padded(const simdjson::padded_string& buf, const std::string& file) {
  Diagnostics diags;
  Parser p(buf, file, diags);
  Trace t = p.run();
  diags.throw_if_errors();
  return t;
}
}  // namespace

// A UTF-8 byte-order mark (written by some Windows tools) is skipped; JSON itself has none.
Trace parse_trace(const std::string& text, const std::string& file) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) return parse_padded(simdjson::padded_string(text.substr(3)), file);
  return parse_padded(simdjson::padded_string(text), file);
}

Trace read_trace(const std::string& path) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!gz) {
    // Load straight into simdjson's padded buffer: one copy of a large trace instead of two.
    simdjson::padded_string buf;
    if (!simdjson::padded_string::load(path).get(buf) && std::string_view(buf).rfind("\xEF\xBB\xBF", 0) != 0)
      return parse_padded(buf, path);
  }
  return parse_trace(read_file(path), path);  // .gz, or an unreadable file (read_file says why)
}

namespace {

std::string json_header(const Trace& t) {
  std::string out;
  auto it = std::back_inserter(out);
  // Without micro-batches the file is a v1.0 trace, byte for byte what earlier versions wrote.
  fmt::format_to(it, "{{\n  \"format\": \"hecate-sim/expert-load-trace\", \"version\": \"{}\",\n",
                 t.per_micro_batch() ? "1.1" : "1.0");
  fmt::format_to(it, "  \"model\": {{");
  if (!t.model_preset.empty()) fmt::format_to(it, "\"preset\": \"{}\", ", t.model_preset);
  fmt::format_to(it, "\"moe_layers\": {}, \"experts\": {}, \"top_k\": {}}},\n", t.moe_layers, t.experts, t.top_k);
  fmt::format_to(it, "  \"workload\": {{\"sources\": {}, \"tokens_per_source\": {}", t.sources, t.tokens_per_source);
  if (t.per_micro_batch()) fmt::format_to(it, ", \"micro_batches\": {}", t.micro_batches);
  fmt::format_to(it, "}},\n  \"axes\": [{}{}],\n", t.per_micro_batch() ? "\"micro_batch\", " : "",
                 t.per_source() ? "\"layer\", \"source\", \"expert\"" : "\"layer\", \"expert\"");
  fmt::format_to(it, "  \"provenance\": {},\n", t.provenance_json.empty() ? "{}" : t.provenance_json);
  fmt::format_to(it, "  \"records\": [\n");
  return out;
}

// One slice of counts (an iteration, or a micro-batch), [layer][source][expert] or [layer][expert].
void json_slice(const Trace& t, const uint32_t* counts, std::string& out) {
  const int srcs = t.per_source() ? t.sources : 1;
  for (int l = 0; l < t.moe_layers; ++l) {
    if (l) out += ',';
    if (t.per_source()) out += '[';
    for (int s = 0; s < srcs; ++s) {
      if (s) out += ',';
      out += '[';
      const uint32_t* c = counts + (static_cast<size_t>(l) * srcs + s) * t.experts;
      for (int e = 0; e < t.experts; ++e) {
        if (e) out += ',';
        char buf[16];
        auto [p, ec] = std::to_chars(buf, buf + sizeof buf, c[e]);
        (void)ec;
        out.append(buf, p);
      }
      out += ']';
    }
    if (t.per_source()) out += ']';
  }
}

void json_record(const Trace& t, const TraceRecord& rec, std::string& out) {
  fmt::format_to(std::back_inserter(out), "    {{\"iter\": {}, \"counts\": [", rec.iter);
  if (!t.per_micro_batch()) {
    json_slice(t, rec.counts.data(), out);
  } else {
    for (int mb = 0; mb < t.micro_batches; ++mb) {
      out += mb ? ",[" : "[";
      json_slice(t, t.micro_slice(rec, mb), out);
      out += ']';
    }
  }
  out += "]}";
}

}  // namespace

std::string trace_to_json(const Trace& t) {
  std::string out = json_header(t);
  out.reserve(64 + t.records.size() * (t.record_size() * std::max(1, t.micro_batches) * 4 + 32));
  for (size_t r = 0; r < t.records.size(); ++r) {
    json_record(t, t.records[r], out);
    out += r + 1 < t.records.size() ? ",\n" : "\n";
  }
  out += "  ]\n}\n";
  return out;
}

TraceWriter::TraceWriter(const std::string& path, const Trace& header) : path_(path), header_(header) {
  gz_ = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  tmp_ = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  guard_ = std::make_unique<TempFileGuard>(tmp_);
  file_ = gz_ ? static_cast<void*>(gzopen(tmp_.c_str(), "wb6")) : static_cast<void*>(std::fopen(tmp_.c_str(), "wb"));
  if (!file_) throw std::runtime_error(fmt::format("{}: cannot write", path));
  put(json_header(header));
}

TraceWriter::~TraceWriter() {
  if (!file_) return;
  if (gz_) gzclose(static_cast<gzFile>(file_));
  else std::fclose(static_cast<FILE*>(file_));
  std::remove(tmp_.c_str());
}

void TraceWriter::put(const std::string& s) {
  const bool ok = gz_ ? gzwrite(static_cast<gzFile>(file_), s.data(), static_cast<unsigned>(s.size())) == static_cast<int>(s.size())
                      : std::fwrite(s.data(), 1, s.size(), static_cast<FILE*>(file_)) == s.size();
  if (!ok) throw std::runtime_error(fmt::format("{}: write failed", path_));
}

void TraceWriter::write(const TraceRecord& r) {
  buf_.clear();
  if (!first_) buf_ += ",\n";
  first_ = false;
  json_record(header_, r, buf_);
  put(buf_);
}

void TraceWriter::close() {
  put(first_ ? "  ]\n}\n" : "\n  ]\n}\n");
  const bool ok = gz_ ? gzclose(static_cast<gzFile>(file_)) == Z_OK : std::fclose(static_cast<FILE*>(file_)) == 0;
  file_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    throw std::runtime_error(fmt::format("{}: cannot write", path_));
  }
}

void write_trace(const Trace& t, const std::string& path) { write_file_atomically(path, trace_to_json(t)); }

}  // namespace hs::workload
