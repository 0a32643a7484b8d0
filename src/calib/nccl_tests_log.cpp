#include "calib/nccl_tests_log.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <sstream>

#include "util/diagnostics.hpp"

namespace hs::calib {

double NcclTestsRow::best_time_us() const {
  const double a = time_us > 0 ? time_us : 0, b = has_in_place && in_time_us > 0 ? in_time_us : 0;
  if (a > 0 && b > 0) return std::min(a, b);
  return std::max(a, b);
}

bool NcclTestsRow::places_disagree(double tolerance) const {
  if (!(time_us > 0) || !has_in_place || !(in_time_us > 0)) return false;
  return std::max(time_us, in_time_us) > (1 + tolerance) * std::min(time_us, in_time_us);
}

namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> t;
  std::istringstream in(line);
  std::string w;
  while (in >> w) t.push_back(w);
  return t;
}

bool number(const std::string& s, double& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(v);
}

bool is_number(const std::string& s) {
  double v = 0;
  return number(s, v);
}

// The text of a line for a note or an error: at most 60 characters.
std::string excerpt(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  std::string t = b == std::string::npos ? "" : s.substr(b);
  return t.size() > 60 ? t.substr(0, 57) + "..." : t;
}

// Strips one launcher prefix from the front of `s`; returns its text ("" when there is none).
//   Open MPI --tag-output: "[1,0]<stdout>:" (job, rank; stdout, stderr or stddiag), then the line;
//   Ray and similar wrappers: "(head, rank=0, pid=3808) " - parentheses holding "pid=" or "rank=";
//   srun -l: optional spaces, the task number, ": ".
std::string strip_prefix(std::string& s) {
  size_t i = 0;
  auto digits = [&](size_t& j) {
    const size_t from = j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    return j > from;
  };
  // Open MPI.
  if (s.size() > 1 && s[0] == '[') {
    size_t j = 1;
    if (digits(j) && j < s.size() && s[j] == ',' && (++j, digits(j)) && j < s.size() && s[j] == ']') {
      ++j;
      for (const char* tag : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
        const std::string t = tag;
        if (s.compare(j, t.size(), t) == 0) {
          std::string p = s.substr(0, j + t.size());
          s.erase(0, j + t.size());
          return p;
        }
      }
    }
  }
  while (i < s.size() && s[i] == ' ') ++i;
  // Ray.
  if (i < s.size() && s[i] == '(') {
    const auto close = s.find(')', i);
    if (close != std::string::npos) {
      const std::string inside = s.substr(i, close - i);
      if ((inside.find("pid=") != std::string::npos || inside.find("rank=") != std::string::npos) &&
          inside.find('(', 1) == std::string::npos) {
        std::string p = s.substr(0, close + 1);
        s.erase(0, close + 1);
        if (!s.empty() && s[0] == ' ') s.erase(0, 1);
        return p;
      }
    }
  }
  // srun -l.
  size_t j = i;
  if (digits(j) && j + 1 < s.size() && s[j] == ':' && s[j + 1] == ' ') {
    std::string p = s.substr(0, j + 1);
    s.erase(0, j + 2);
    return p;
  }
  return "";
}

// One kind of skipped or stripped line: how many, and the first.
struct Kind {
  int count = 0, first_line = 0;
  std::string first;
};

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file) {
  NcclTestsLog log;
  log.file = file;
  std::istringstream in(text);
  std::string line;
  int ln = 0;
  std::vector<std::string> columns;  // data columns named by the header, in order ("timestamp" is two)
  std::set<std::string> hosts;
  std::set<int> rank_ids;
  bool bad_rank_ids = false;
  std::map<std::string, Kind> skipped;  // by kind, in the order of the notes below
  Kind prefixes, blanks_pending;
  auto fail = [&](const std::string& field, const std::string& what) { throw InputError({file, ln, 0}, field, what); };
  auto count_kind = [&](Kind& k, int at, const std::string& what, int n = 1) {
    if (k.count == 0) k.first_line = at, k.first = what;
    k.count += n;
  };
  auto is_header = [](const std::vector<std::string>& t) {
    auto has = [&](const char* c) { return std::find(t.begin(), t.end(), c) != t.end(); };
    return has("size") && has("count") && has("type") && (has("time") || has("cputime"));
  };
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string prefix;  // Ray's, then Open MPI's: up to a few on one line
    for (int guard = 0; guard < 4; ++guard) {
      const std::string p = strip_prefix(line);
      if (p.empty()) break;
      prefix += (prefix.empty() ? "" : " ") + p;
    }
    if (!prefix.empty()) count_kind(prefixes, ln, prefix);
    auto t = tokens(line);
    if (t.empty()) {
      count_kind(blanks_pending, ln, "");  // noted only when more of the log follows
      continue;
    }
    if (blanks_pending.count > 0) {
      count_kind(skipped["blank"], blanks_pending.first_line, "", blanks_pending.count);
      blanks_pending = Kind{};
    }
    // A '#' line; logs pasted through Markdown lose the '#': their nThread, Rank and header lines
    // are read the same.
    const bool hash = t[0][0] == '#';
    if (hash && t[0] != "#") t[0] = t[0].substr(1), t.insert(t.begin(), "#");
    if (!hash && (t[0] == "nThread" || t[0] == "Rank" || is_header(t))) t.insert(t.begin(), "#");
    if (t[0] == "#") {
      // "# nThread 1 nGpus 8 minBytes 8 maxBytes ..."
      if (t.size() >= 5 && t[1] == "nThread" && t[3] == "nGpus") {
        double a = 0, b = 0;
        if (!number(t[2], a) || !number(t[4], b) || a < 1 || b < 1 || a > 65536 || b > 65536 || a != std::floor(a) ||
            b != std::floor(b))
          fail("nThread", "expected '# nThread T nGpus G ...' with integers in [1, 65536]");
        log.threads = static_cast<int>(a), log.gpus_per_thread = static_cast<int>(b);
      }
      // "#  Rank  0 Group  0 Pid 1234 on  host device  0 [0x1b] NVIDIA H100 80GB HBM3"
      if (t.size() >= 3 && t[1] == "Rank") {
        auto on = std::find(t.begin(), t.end(), "on");
        auto dev = std::find(t.begin(), t.end(), "device");
        double r = -1;
        if (on == t.end() || on + 1 == t.end() || !number(t[2], r) || r < 0 || r > 1 << 24 || r != std::floor(r))
          fail("Rank", "expected '#  Rank R ... on HOST device D [BUS] NAME' with R an integer from 0");
        hosts.insert(*(on + 1));
        if (!rank_ids.insert(static_cast<int>(r)).second) bad_rank_ids = true;  // several runs in one file
        std::string name;
        if (dev != t.end() && dev + 3 <= t.end())
          for (auto it = dev + 3; it != t.end(); ++it) name += (name.empty() ? "" : " ") + *it;
        log.devices.push_back(name);
      }
      // The column header: names until the end; "#wrong" or "error" ends each group.
      if (is_header(t)) {
        columns.clear();
        for (auto it = t.begin() + 1; it != t.end(); ++it) {
          columns.push_back(*it);
          if (*it == "timestamp") columns.push_back("timestamp-time");  // "2025-01-31 12:00:00"
        }
      }
      continue;
    }
    // A table row: its first two tokens (size and count) are numbers. Anything else is not the table.
    if (!(t.size() >= 2 && is_number(t[0]) && is_number(t[1]))) {
      const bool version = t.size() >= 2 && t[0] == "NCCL" && t[1] == "version";
      bool nccl_debug = false;  // "host:pid:tid [0] NCCL INFO ..."
      for (size_t i = 0; i + 1 < t.size(); ++i)
        nccl_debug |= t[i] == "NCCL" && (t[i + 1] == "INFO" || t[i + 1] == "WARN" || t[i + 1] == "TRACE");
      // "..." (or "#  ...", "…"): where whoever posted the log left lines out (usually rank lines).
      const bool elided = t.size() <= 2 && !t.empty() &&
                          (t.back().find_first_not_of('.') == std::string::npos || t.back() == "\u2026") &&
                          (t.size() == 1 || t[0] == "#");
      count_kind(skipped[version ? "version" : nccl_debug ? "debug" : elided ? "elided" : "other"], ln, excerpt(line));
      continue;
    }
    if (columns.empty()) fail("", fmt::format("a data row before the column header ('#  size  count  type ...'): '{}'", excerpt(line)));
    // The columns this row fills: the header's, or the header's without redop for a row one token
    // short whose redop position holds a number (the blank redop of 2020-2022 nccl-tests).
    std::vector<std::string> cols = columns;
    const auto redop = std::find(cols.begin(), cols.end(), "redop");
    if (t.size() + 1 == cols.size() && redop != cols.end() && static_cast<size_t>(redop - cols.begin()) < t.size() &&
        is_number(t[static_cast<size_t>(redop - cols.begin())]))
      cols.erase(redop);
    if (t.size() != cols.size())
      fail("", fmt::format("expected {} columns as the header names ({}), got {}", columns.size(), fmt::join(columns, " "),
                           t.size()));
    NcclTestsRow r;
    r.line = ln;
    int group = 0;  // 0: out-of-place columns, 1: in-place
    bool na_time = false;
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string& c = cols[i];
      double v = 0;
      const bool na = t[i] == "N/A";
      auto num = [&](const char* what) {
        if (na) return 0.0;
        if (!number(t[i], v) || v < 0) fail(c, fmt::format("expected a non-negative {}, got '{}'", what, t[i]));
        return v;
      };
      if (c == "size") {
        if (na) fail(c, "expected a size in bytes, got 'N/A'");
        r.bytes = num("size in bytes");
      } else if (c == "count") r.count = num("element count");
      else if (c == "type") r.type = t[i];
      else if (c == "redop") r.redop = t[i];
      else if (c == "time" || c == "cputime") {
        na_time |= na;
        (group == 0 ? r.time_us : r.in_time_us) = num("time in us");
        r.has_in_place |= group == 1 && !na;
      } else if (c == "algbw") (group == 0 ? r.algbw : r.in_algbw) = num("bandwidth in GB/s");
      else if (c == "busbw") (group == 0 ? r.busbw : r.in_busbw) = num("bandwidth in GB/s");
      else if (c == "#wrong" || c == "error") {
        if (c == "#wrong" && !na) {
          // A count past 2^53 is no count nccl-tests prints (and would not convert to an integer).
          const double w = num("count of wrong values");
          if (w > 9007199254740992.0) fail(c, fmt::format("count of wrong values out of range: '{}'", t[i]));
          r.wrong += static_cast<long>(w);
        }
        ++group;
      }
      // root, per-iteration statistics (i_min ...), timestamp: not used.
    }
    if (r.bytes > 0 && r.best_time_us() <= 0)
      fail("time", na_time ? "a row with a positive size needs a time, got 'N/A'"
                           : "a row without a positive out-of-place or in-place time");
    if (!log.rows.empty() && r.bytes <= log.rows.back().bytes && !(r.bytes == 0 && log.rows.back().bytes == 0))
      fail("size", fmt::format("sizes must grow row by row ({} after {})", r.bytes, log.rows.back().bytes));
    if (r.bytes == 0) ++log.zero_byte_rows;
    log.rows.push_back(r);
  }
  if (log.rows.empty()) throw InputError({file, ln, 0}, "", "no result rows: is this the output of an nccl-tests binary?");
  if (log.rows.size() == static_cast<size_t>(log.zero_byte_rows))
    throw InputError({file, log.rows.back().line, 0}, "size", "every row is of 0 bytes: nothing to time (extend the sweep, -e)");
  // Ranks: the highest listed + 1; nodes only when every rank has its line (an excerpt's hosts are
  // some of the nodes).
  if (!rank_ids.empty()) {
    log.ranks = *rank_ids.rbegin() + 1;
    log.ranks_listed = !bad_rank_ids && static_cast<int>(rank_ids.size()) == log.ranks;
    if (log.ranks_listed) log.nodes = static_cast<int>(hosts.size());
    else if (bad_rank_ids)
      log.notes.push_back(fmt::format("{}: a rank is listed twice ('#  Rank' lines of several runs?): ranks taken as {}, nodes "
                                      "not known from the log", file, log.ranks));
    else
      log.notes.push_back(fmt::format("{}: rank lines for {} of ranks 0..{} (an excerpt): {} ranks, nodes not known from the log",
                                      file, rank_ids.size(), log.ranks - 1, log.ranks));
  }
  if (prefixes.count > 0)
    log.notes.push_back(fmt::format("{}: launcher prefix stripped from {} line(s) (first at line {}: '{}')", file, prefixes.count,
                                    prefixes.first_line, prefixes.first));
  const std::pair<const char*, const char*> kinds[] = {{"version", "an 'NCCL version' line"},
                                                       {"debug", "NCCL INFO/WARN lines"},
                                                       {"elided", "'...' lines (lines left out where the log was posted)"},
                                                       {"other", "not nccl-tests output (MPI or launcher messages?)"},
                                                       {"blank", "blank lines"}};
  for (const auto& [key, what] : kinds) {
    auto it = skipped.find(key);
    if (it == skipped.end()) continue;
    const Kind& k = it->second;
    log.notes.push_back(k.first.empty()
                            ? fmt::format("{}: {} non-table line(s) skipped: {} (first at line {})", file, k.count, what, k.first_line)
                            : fmt::format("{}: {} non-table line(s) skipped: {} (first at line {}: '{}')", file, k.count, what,
                                          k.first_line, k.first));
  }
  if (log.zero_byte_rows > 0)
    log.notes.push_back(fmt::format("{}: {} row(s) of 0 bytes kept but left out of comparisons and fits", file, log.zero_byte_rows));
  return log;
}

}  // namespace hs::calib
