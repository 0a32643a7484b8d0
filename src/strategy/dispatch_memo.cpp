#include "strategy/dispatch_memo.hpp"

#include <algorithm>

namespace hs::strategy {

void DispatchMemo::dispatch(std::span<const double> counts, int n, const collective::SparsePlacement& p,
                            const std::vector<int>& node_of, DispatchRule rule, double token_bytes,
                            DispatchResult& out, double cap) {
  const int E = static_cast<int>(p.owner.size());
  key_.clear();
  key_.add(static_cast<uint64_t>(n));
  key_.add(static_cast<uint64_t>(rule));
  key_.add(token_bytes);
  key_.add(cap);
  // dispatch() reads the first n x E counts.
  key_.add(counts.first(std::min(counts.size(), static_cast<size_t>(n) * E)));
  key_.add(static_cast<uint64_t>(E));
  for (int e = 0; e < E; ++e) {
    key_.add(static_cast<uint64_t>(static_cast<int64_t>(p.owner[e])));
    key_.add(static_cast<uint64_t>(p.replicas[e].size()));
    for (int g : p.replicas[e]) key_.add(static_cast<uint64_t>(static_cast<int64_t>(g)));
  }
  key_.add(static_cast<uint64_t>(node_of.size()));
  for (int v : node_of) key_.add(static_cast<uint64_t>(static_cast<int64_t>(v)));
  if (const DispatchResult* hit = memo_.find(key_)) {
    out = *hit;
    return;
  }
  strategy::dispatch(counts, n, p, node_of, rule, token_bytes, out, cap);
  size_t held = (out.bytes.size() + out.received.size()) * sizeof(double);
  for (const auto& v : out.expert_tokens) held += sizeof(v) + v.size() * sizeof(double);
  memo_.insert(key_, out, held);
}

}  // namespace hs::strategy
