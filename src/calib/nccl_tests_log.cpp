#include "calib/nccl_tests_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <set>
#include <sstream>

#include "util/diagnostics.hpp"

namespace hs::calib {

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

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file) {
  NcclTestsLog log;
  log.file = file;
  std::istringstream in(text);
  std::string line;
  int ln = 0;
  std::vector<std::string> columns;  // data columns named by the header, in order
  std::set<std::string> hosts;
  auto fail = [&](const std::string& field, const std::string& what) { throw InputError({file, ln, 0}, field, what); };
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto t = tokens(line);
    if (t.empty()) continue;
    if (t[0] == "#" || t[0][0] == '#') {
      if (t[0] != "#") t[0] = t[0].substr(1), t.insert(t.begin(), "#");
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
        if (on == t.end() || on + 1 == t.end()) fail("Rank", "expected '#  Rank R ... on HOST device D [BUS] NAME'");
        hosts.insert(*(on + 1));
        std::string name;
        if (dev != t.end() && dev + 3 <= t.end())
          for (auto it = dev + 3; it != t.end(); ++it) name += (name.empty() ? "" : " ") + *it;
        log.devices.push_back(name);
        ++log.ranks;
      }
      // The column header: names until the end; "#wrong" or "error" ends each group.
      if (std::find(t.begin(), t.end(), "size") != t.end() && std::find(t.begin(), t.end(), "count") != t.end() &&
          std::find(t.begin(), t.end(), "time") != t.end())
        columns.assign(t.begin() + 1, t.end());
      continue;
    }
    if (columns.empty()) fail("", fmt::format("a data row before the column header ('#  size  count  type ...'): '{}'", line));
    if (t.size() != columns.size())
      fail("", fmt::format("expected {} columns as the header names ({}), got {}", columns.size(),
                           fmt::join(columns, " "), t.size()));
    NcclTestsRow r;
    r.line = ln;
    int group = 0;  // 0: out-of-place columns, 1: in-place
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string& c = columns[i];
      double v = 0;
      const bool na = t[i] == "N/A";
      auto num = [&](const char* what) {
        if (na) return 0.0;
        if (!number(t[i], v) || v < 0) fail(c, fmt::format("expected a non-negative {}, got '{}'", what, t[i]));
        return v;
      };
      if (c == "size") r.bytes = num("size in bytes");
      else if (c == "count") r.count = num("element count");
      else if (c == "type") r.type = t[i];
      else if (c == "redop") r.redop = t[i];
      else if (c == "root") continue;
      else if (c == "time") (group == 0 ? r.time_us : r.in_time_us) = num("time in us"), r.has_in_place |= group == 1 && !na;
      else if (c == "algbw") (group == 0 ? r.algbw : r.in_algbw) = num("bandwidth in GB/s");
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
    }
    if (r.time_us <= 0 && !r.has_in_place) fail("time", "a row without a positive out-of-place or in-place time");
    if (!log.rows.empty() && r.bytes <= log.rows.back().bytes)
      fail("size", fmt::format("sizes must grow row by row ({} after {})", r.bytes, log.rows.back().bytes));
    log.rows.push_back(r);
  }
  if (log.rows.empty()) throw InputError({file, ln, 0}, "", "no result rows: is this the output of an nccl-tests binary?");
  log.nodes = static_cast<int>(hosts.size());
  return log;
}

}  // namespace hs::calib
