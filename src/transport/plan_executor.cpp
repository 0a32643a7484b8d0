#include "transport/plan_executor.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <fmt/format.h>

namespace hs::transport {

namespace {

using Key = std::pair<int, int>;  // (chunk, gpu)

// Rounds from each transfer's round number.
std::vector<std::vector<int>> group(const std::vector<int>& round_of) {
  int rounds = 0;
  for (int r : round_of) rounds = std::max(rounds, r + 1);
  std::vector<std::vector<int>> out(rounds);
  for (size_t i = 0; i < round_of.size(); ++i) out[round_of[i]].push_back(static_cast<int>(i));
  return out;
}

void check_buffers(const PlanLayer& l, int rank, const ChunkBuffers& b, const char* what) {
  if (static_cast<int>(b.size()) != l.chunks())
    throw std::invalid_argument(fmt::format("rank {}: {} buffers for {} chunks", rank, b.size(), l.chunks()));
  for (int c = 0; c < l.chunks(); ++c)
    if (holds(l, c, rank) && b[c].empty())
      throw std::invalid_argument(fmt::format("rank {}: no {} buffer for chunk {} it holds", rank, what, c));
}

}  // namespace

bool holds(const PlanLayer& l, int chunk, int gpu) {
  const auto& r = l.replicas[chunk];
  return l.owner[chunk] == gpu || std::binary_search(r.begin(), r.end(), gpu);
}

std::vector<std::vector<int>> spag_rounds(const PlanLayer& l) {
  std::map<Key, int> arrival;  // (chunk, gpu) -> round its copy arrives in
  std::vector<int> round_of(l.spag.size());
  for (size_t i = 0; i < l.spag.size(); ++i) {
    const ChunkTransfer& t = l.spag[i];
    int r = 0;
    if (t.src != l.owner[t.chunk]) {
      auto it = arrival.find({t.chunk, t.src});
      if (it == arrival.end())
        throw std::invalid_argument(fmt::format("spag[{}]: GPU {} sends chunk {} it does not hold", i, t.src, t.chunk));
      r = it->second + 1;
    }
    round_of[i] = r;
    arrival[{t.chunk, t.dst}] = r;
  }
  return group(round_of);
}

std::vector<std::vector<int>> sprs_rounds(const PlanLayer& l) {
  std::map<Key, std::vector<int>> incoming;  // (chunk, gpu) -> transfers delivering partial sums to it
  for (size_t i = 0; i < l.sprs.size(); ++i) incoming[{l.sprs[i].chunk, l.sprs[i].dst}].push_back(static_cast<int>(i));
  std::vector<int> round_of(l.sprs.size(), -1);
  std::vector<char> visiting(l.sprs.size(), 0);
  // round(i) = 0 when nothing flows into its source, else 1 + the latest round flowing in.
  std::function<int(int)> round = [&](int i) {
    if (round_of[i] >= 0) return round_of[i];
    if (visiting[i]) throw std::invalid_argument(fmt::format("sprs[{}]: chunk {} goes round a cycle", i, l.sprs[i].chunk));
    visiting[i] = 1;
    int r = 0;
    auto it = incoming.find({l.sprs[i].chunk, l.sprs[i].src});
    if (it != incoming.end())
      for (int j : it->second) r = std::max(r, round(j) + 1);
    return round_of[i] = r;
  };
  for (size_t i = 0; i < l.sprs.size(); ++i) round(static_cast<int>(i));
  return group(round_of);
}

ExecStats execute_spag(const PlanLayer& l, Transport& t, ChunkBuffers& params) {
  const int me = t.rank();
  check_buffers(l, me, params, "parameter");
  ExecStats s;
  for (const auto& round : spag_rounds(l)) {
    t.group_start();
    for (int i : round) {
      const ChunkTransfer& x = l.spag[i];
      if (x.src == me) t.send(x.dst, params[x.chunk]), ++s.sent;
      if (x.dst == me) t.recv(x.src, params[x.chunk]), ++s.received;
    }
    t.group_end();
    ++s.rounds;
  }
  return s;
}

ExecStats execute_sprs(const PlanLayer& l, Transport& t, ChunkBuffers& grads) {
  const int me = t.rank();
  check_buffers(l, me, grads, "gradient");
  ExecStats s;
  std::vector<std::pair<int, std::vector<float>>> arrived;  // (chunk, partial sum) of this round
  for (const auto& round : sprs_rounds(l)) {
    arrived.clear();
    // Sized up front: the buffers must not move while the group is open.
    for (int i : round)
      if (l.sprs[i].dst == me) arrived.emplace_back(l.sprs[i].chunk, std::vector<float>(grads[l.sprs[i].chunk].size()));
    t.group_start();
    size_t k = 0;
    for (int i : round) {
      const ChunkTransfer& x = l.sprs[i];
      if (x.src == me) t.send(x.dst, grads[x.chunk]), ++s.sent;
      if (x.dst == me) t.recv(x.src, arrived[k++].second), ++s.received;
    }
    t.group_end();
    for (const auto& [c, partial] : arrived) {
      auto& g = grads[c];
      for (size_t e = 0; e < g.size(); ++e) g[e] += partial[e];
    }
    ++s.rounds;
  }
  return s;
}

}  // namespace hs::transport
