#include "workload/node_limited_routing.hpp"

#include <algorithm>
#include <functional>

namespace hs::workload {

NodeLimitedRouter::NodeLimitedRouter(int experts, int top_k, int groups, int max_groups)
    : experts_(experts), top_k_(top_k), groups_(groups > 0 && max_groups < groups ? groups : 0),
      max_groups_(max_groups), group_size_(groups_ > 0 ? experts / groups_ : experts),
      per_group_(max_groups > 0 ? (top_k + max_groups - 1) / max_groups : top_k) {}

void NodeLimitedRouter::route(std::span<const double> a, std::vector<int>& out) {
  // Higher affinity first, the lower index on ties.
  auto better = [&](int x, int y) { return a[x] > a[y] || (a[x] == a[y] && x < y); };
  order_.clear();
  if (groups_ == 0) {
    for (int e = 0; e < experts_; ++e) order_.push_back(e);
  } else {
    group_score_.assign(groups_, 0.0);
    for (int g = 0; g < groups_; ++g) {
      top_.assign(a.begin() + static_cast<long>(g) * group_size_, a.begin() + static_cast<long>(g + 1) * group_size_);
      const int k = std::min(per_group_, group_size_);
      std::partial_sort(top_.begin(), top_.begin() + k, top_.end(), std::greater<>());
      for (int i = 0; i < k; ++i) group_score_[g] += top_[i];
    }
    group_order_.clear();
    for (int g = 0; g < groups_; ++g) group_order_.push_back(g);
    std::partial_sort(group_order_.begin(), group_order_.begin() + max_groups_, group_order_.end(), [&](int x, int y) {
      return group_score_[x] > group_score_[y] || (group_score_[x] == group_score_[y] && x < y);
    });
    for (int i = 0; i < max_groups_; ++i)
      for (int e = group_order_[i] * group_size_; e < (group_order_[i] + 1) * group_size_; ++e) order_.push_back(e);
  }
  std::partial_sort(order_.begin(), order_.begin() + top_k_, order_.end(), better);
  out.assign(order_.begin(), order_.begin() + top_k_);
  std::sort(out.begin(), out.end());
}

}  // namespace hs::workload
