// (cap, id) pairs into ascending (cap, id) order, in one stable bucket pass when there are few
// distinct caps (a collective's transfers carry one rate cap per locality: NCCL's per-connection
// rate inside a node and across nodes), where std::sort costs n log n comparisons: a million capped
// flows took ~3% of a 1,024-GPU all-to-all-v's time. More than 16 distinct caps: std::sort.
// Caps are not NaN. Ids listed in ascending order stay so within a bucket; otherwise each bucket is
// sorted by id afterwards.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace hs {

template <class Id>
void sort_by_cap(std::vector<std::pair<double, Id>>& v, std::vector<std::pair<double, Id>>& scratch) {
  constexpr size_t kMaxCaps = 16;
  double caps[kMaxCaps];
  size_t count[kMaxCaps] = {};
  size_t ncaps = 0;
  bool ids_ascending = true;
  size_t k = 0;  // the last element's cap (neighbours often share one: searched from there)
  for (size_t i = 0; i < v.size(); ++i) {
    const double c = v[i].first;
    if (k >= ncaps || caps[k] != c) {
      k = 0;
      while (k < ncaps && caps[k] != c) ++k;
    }
    if (k == ncaps) {
      if (ncaps == kMaxCaps) {
        std::sort(v.begin(), v.end());
        return;
      }
      caps[ncaps++] = c;
    }
    ++count[k];
    if (i > 0 && v[i].second < v[i - 1].second) ids_ascending = false;
  }
  // Buckets in ascending cap order, each keeping the order of its ids.
  size_t order[kMaxCaps];
  for (size_t k = 0; k < ncaps; ++k) order[k] = k;
  std::sort(order, order + ncaps, [&](size_t a, size_t b) { return caps[a] < caps[b]; });
  size_t start[kMaxCaps];
  for (size_t at = 0, j = 0; j < ncaps; ++j) start[order[j]] = at, at += count[order[j]];
  scratch.resize(v.size());
  k = 0;
  for (const auto& e : v) {
    if (caps[k] != e.first) {
      k = 0;
      while (caps[k] != e.first) ++k;
    }
    scratch[start[k]++] = e;
  }
  v.swap(scratch);
  if (!ids_ascending) {
    const auto by_id = [](const std::pair<double, Id>& a, const std::pair<double, Id>& b) { return a.second < b.second; };
    for (size_t j = 0, at = 0; j < ncaps; at += count[order[j]], ++j)
      std::sort(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + count[order[j]]), by_id);
  }
}

}  // namespace hs
