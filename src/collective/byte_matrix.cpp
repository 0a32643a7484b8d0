#include "collective/byte_matrix.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <simdjson.h>
#include <string_view>
#include <system_error>
#include <utility>

#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"

namespace hs::collective {

namespace {

namespace od = simdjson::ondemand;

constexpr double kMaxBytes = 9007199254740992.0;  // 2^53: every byte count up to it is exact in a double
constexpr const char* kPairShape = "expected [src, dst, bytes] with integer ranks";

// Puts pairs into the matrix, refusing ranks out of range, bad byte counts and repeated pairs: put()
// returns what is wrong (empty when the pair went in), so the caller locates only a bad pair (a
// location costs a scan of the text up to it).
class Builder {
 public:
  explicit Builder(int gpus) : gpus_(gpus), m_(static_cast<size_t>(gpus) * gpus, 0.0) {}
  std::string put(int64_t a, int64_t b, double bytes) {
    if (a < 0 || a >= gpus_ || b < 0 || b >= gpus_)
      return fmt::format("rank out of range: the topology has GPUs 0..{}", gpus_ - 1);
    if (!(bytes >= 0) || !(bytes <= kMaxBytes)) return "expected non-negative bytes, at most 2^53";
    const size_t at = static_cast<size_t>(a) * static_cast<size_t>(gpus_) + static_cast<size_t>(b);
    if (seen_[at]) return fmt::format("pair {} -> {} given twice", a, b);
    seen_[at] = true;
    m_[at] = bytes;
    return {};
  }
  std::vector<double> take() { return std::move(m_); }

 private:
  int gpus_;
  std::vector<double> m_;
  std::vector<bool> seen_ = std::vector<bool>(m_.size(), false);  // a bit per pair (a set cost ~50 B a pair)
};

std::vector<double> parse_json(const std::string_view text, const std::string& file, int gpus) {
  const simdjson::padded_string buf(text);
  auto at = [&](const char* p) { return locate_in_text(buf.data(), buf.size(), p ? p : buf.data(), file); };
  auto where = [](od::value& v) -> const char* {
    const char* p = nullptr;
    return v.current_location().get(p) ? nullptr : p;
  };
  auto malformed = [&](const char* p, simdjson::error_code e) {
    if (e == simdjson::UTF8_ERROR) return InputError(at(first_non_utf8(buf.data(), buf.size())), "", "not UTF-8 text (JSON must be UTF-8)");
    return InputError(at(p), "", fmt::format("malformed JSON: {}", simdjson::error_message(e)));
  };
  Builder out(gpus);
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(buf).get(doc)) throw malformed(nullptr, e);
  od::object root;
  if (auto e = doc.get_object().get(root)) {
    if (e == simdjson::INCORRECT_TYPE) throw InputError(at(nullptr), "", "expected {\"pairs\": [[src, dst, bytes], ...]}");
    throw malformed(nullptr, e);  // simdjson 3.0 also says so for content after the object
  }
  bool have_pairs = false;
  for (auto fld : root) {
    std::string_view key;
    if (auto e = fld.unescaped_key().get(key)) throw malformed(nullptr, e);
    od::value v;
    if (auto e = fld.value().get(v)) throw malformed(nullptr, e);
    const char* w = where(v);
    if (key != "pairs") throw InputError(at(w), std::string(key), "unknown key (a matrix has only \"pairs\")");
    if (have_pairs) throw InputError(at(w), "pairs", "key given twice in this object");
    have_pairs = true;
    od::array pairs;
    if (v.get_array().get(pairs)) throw InputError(at(w), "pairs", "expected a list of [src, dst, bytes]");
    size_t i = 0;
    for (auto el : pairs) {
      od::value e;
      if (auto err = el.get(e)) throw malformed(w, err);
      const char* ew = where(e);
      const std::string field = fmt::format("pairs[{}]", i++);
      od::array triple;
      if (e.get_array().get(triple)) throw InputError(at(ew), field, kPairShape);
      int64_t rank[2] = {0, 0};
      double bytes = 0;
      int n = 0;
      for (auto x : triple) {
        od::value xv;
        if (auto err = x.get(xv)) throw malformed(ew, err);
        const bool bad = n < 2 ? static_cast<bool>(xv.get_int64().get(rank[n])) : n == 2 ? static_cast<bool>(xv.get_double().get(bytes)) : true;
        if (bad) throw InputError(at(ew), field, kPairShape);
        ++n;
      }
      if (n != 3) throw InputError(at(ew), field, kPairShape);
      if (auto problem = out.put(rank[0], rank[1], bytes); !problem.empty()) throw InputError(at(ew), field, problem);
    }
  }
  if (!have_pairs) throw InputError(at(nullptr), "pairs", "missing: expected {\"pairs\": [[src, dst, bytes], ...]}");
  const char* rest = nullptr;  // simdjson 3.0's document has no at_end(): no location = at the end
  if (!doc.current_location().get(rest)) throw InputError(at(rest), "", "unexpected content after the matrix object");
  return out.take();
}

// A token as a number, all of it (a leading '+' allowed, as strtol and strtod allow it).
template <typename T>
std::errc parse_number(std::string_view tok, T& v) {
  if (tok.size() > 1 && tok[0] == '+' && tok[1] != '-') tok.remove_prefix(1);
  const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (r.ec == std::errc() && r.ptr != tok.data() + tok.size()) return std::errc::invalid_argument;
  return r.ec;
}

std::vector<double> parse_text(const std::string_view text, const std::string& file, int gpus) {
  Builder out(gpus);
  int ln = 0;
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++ln;
    line = line.substr(0, std::min(line.find('#'), line.size()));
    std::string_view tok[4];
    int n = 0;
    for (size_t i = 0; i < line.size() && n < 4;) {
      while (i < line.size() && space(line[i])) ++i;
      const size_t b = i;
      while (i < line.size() && !space(line[i])) ++i;
      if (i > b) tok[n++] = line.substr(b, i - b);
    }
    if (n == 0) continue;
    if (n != 3) throw InputError({file, ln, 0}, "", "expected `src dst bytes` (one pair per line, # starts a comment)");
    long sa = 0, sb = 0;
    double v = 0;
    const std::errc ea = parse_number(tok[0], sa), eb = parse_number(tok[1], sb), ev = parse_number(tok[2], v);
    if (ea == std::errc::invalid_argument || eb == std::errc::invalid_argument || ev == std::errc::invalid_argument)
      throw InputError({file, ln, 0}, "", "expected integers src, dst and a number of bytes");
    if (ea != std::errc() || eb != std::errc() || ev != std::errc()) throw InputError({file, ln, 0}, "", "number out of range");
    if (auto problem = out.put(sa, sb, v); !problem.empty()) throw InputError({file, ln, 0}, "", problem);
  }
  return out.take();
}

}  // namespace

std::vector<double> parse_byte_matrix(const std::string& text, const std::string& file, int gpus) {
  std::string_view t(text);
  if (t.rfind("\xEF\xBB\xBF", 0) == 0) t.remove_prefix(3);
  const auto first = t.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (t[first] == '{' || t[first] == '[')) return parse_json(t, file, gpus);
  return parse_text(t, file, gpus);
}

std::vector<double> read_byte_matrix(const std::string& path, int gpus) { return parse_byte_matrix(read_file(path), path, gpus); }

}  // namespace hs::collective
