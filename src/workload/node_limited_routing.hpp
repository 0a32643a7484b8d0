// One token's expert choice under node-limited routing, as DeepSeek-V3's router makes it (arXiv
// 2412.19437 §2.1.2, "Node-Limited Routing"; its Hugging Face config: n_group = 8 groups of
// contiguous experts, topk_group = 4): the experts form `groups` contiguous groups of E / groups (one
// per node of an EP group); a group's score is the sum of its top_k / max_groups highest affinities
// (rounded up); the max_groups best groups are kept and the token takes the top_k experts with the
// highest affinities among theirs. So its experts lie in at most max_groups groups (nodes). With
// groups = 0 (or max_groups = groups) it is plain top-k over all experts.
//
// Ties break towards the lower index (experts and groups), so the choice is a function of the
// affinities alone: the generator stays deterministic for its seed.
#pragma once

#include <span>
#include <vector>

namespace hs::workload {

class NodeLimitedRouter {
 public:
  NodeLimitedRouter(int experts, int top_k, int groups, int max_groups);
  // The top_k experts chosen for affinities `affinity` (experts values, higher is preferred), in
  // ascending index order, into `out`.
  void route(std::span<const double> affinity, std::vector<int>& out);
  int group_of(int expert) const { return groups_ > 0 ? expert / group_size_ : 0; }

 private:
  int experts_, top_k_, groups_, max_groups_, group_size_, per_group_;
  std::vector<int> order_, group_order_;
  std::vector<double> group_score_, top_;
};

}  // namespace hs::workload
