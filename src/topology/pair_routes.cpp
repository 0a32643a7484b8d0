#include "topology/pair_routes.hpp"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <unordered_map>
#include <queue>
#include <utility>

namespace hs::topology {

// Routes, one destination at a time: Dijkstra over the reversed graph gives every vertex's distance
// to dst (GPUs other than dst are not expanded: a GPU never forwards on a switched path); the links
// on shortest paths toward dst form a DAG (next hops per vertex, O(links) to build); each source's
// route walks that DAG splitting bytes evenly at every branching (ECMP), as its chain and the
// shared tail of the vertex where the chain ends (see the header). Cost O(n (L log V + n chain) +
// tails), memory O(pairs + tails).
//
// The one exception, GPU relaying (NCCL's PATH_NVB, NVIDIA/nccl src/graph/paths.cc,
// ncclTopoSetPaths: "allow routing through a GPU only as 1 hop"): a source GPU with no NVLink to
// the destination but NVLinks to a GPU of its node that has one may send through that GPU, two
// NVLink hops (the sender writes into a buffer on the intermediate GPU, which the receiver reads).
// The relay is taken when it costs less than the switched path (on a hybrid cube-mesh it always
// does: the alternative is the PCIe detour through the host); equal-cost intermediates share the
// bytes evenly (the fluid limit; NCCL picks one intermediate per pair). Only GPUs joined by
// direct GPU-GPU NVLink links (hybrid-cube-mesh, or explicit links) can relay, so every other
// topology routes exactly as without this rule.
PairRoutes::PairRoutes(const Topology& t, std::vector<float>& latency, std::vector<uint8_t>& hop_count,
                       Diagnostics& diags, const SourceLocation& where)
    : n_(t.num_gpus()) {
  const int n = n_;
  const auto links = t.links();
  const auto vertices = t.vertices();
  const size_t nv = vertices.size(), nl = links.size();
  // Per link, in arrays of their own (the walks below read little else).
  std::vector<int64_t> cost(nl);
  std::vector<VertexId> link_from(nl), link_to(nl);
  std::vector<double> link_latency(nl);
  for (size_t i = 0; i < nl; ++i)
    cost[i] = link_cost(links[i]), link_from[i] = links[i].from, link_to[i] = links[i].to,
    link_latency[i] = links[i].latency.value();
  std::vector<char> is_gpu(nv);
  for (size_t v = 0; v < nv; ++v) is_gpu[v] = vertices[v].kind == VertexKind::kGpu;
  // Out-links (next-hop candidates) and in-links (Dijkstra toward a destination), in link order.
  std::vector<uint32_t> out_off(nv + 1, 0), in_off(nv + 1, 0);
  for (const Link& l : links) ++out_off[l.from + 1], ++in_off[l.to + 1];
  for (size_t v = 0; v < nv; ++v) out_off[v + 1] += out_off[v], in_off[v + 1] += in_off[v];
  std::vector<LinkId> out_links(nl), in_links(nl);
  {
    std::vector<uint32_t> o(out_off.begin(), out_off.end() - 1), i(in_off.begin(), in_off.end() - 1);
    for (size_t li = 0; li < nl; ++li) {
      out_links[o[links[li].from]++] = static_cast<LinkId>(li);
      in_links[i[links[li].to]++] = static_cast<LinkId>(li);
    }
  }
  // nvl_out[g]: NVLink-class links from GPU g to another GPU of its node (the relay candidates).
  std::vector<std::vector<LinkId>> nvl_out(nv);
  for (size_t i = 0; i < nl; ++i) {
    const Link& l = links[i];
    if (is_gpu[l.from] && is_gpu[l.to] && l.link_class == "nvlink" && vertices[l.from].node == vertices[l.to].node)
      nvl_out[l.from].push_back(static_cast<LinkId>(i));
  }

  const int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  const size_t pairs = static_cast<size_t>(n) * static_cast<size_t>(n);
  ones_off_.assign(1, 0);
  ones_off_.reserve(pairs + 1);
  rest_.reserve(pairs);
  rest_off_.assign(2, 0);  // rest 0: empty
  // Route latency and hop count per pair, destination-major (as computed; transposed at the end).
  std::vector<float> lat_by_dst(pairs, 0.f);
  std::vector<uint8_t> hops_by_dst(pairs, 0);
  std::vector<int64_t> dist(nv);
  std::vector<VertexId> settled;  // vertices in an order of nondecreasing distance, but GPUs last
  std::vector<VertexId> gpus_reached;
  std::vector<uint32_t> nh_off(nv + 1);
  std::vector<LinkId> nh;
  std::vector<double> frac(nv, 0.0), lat(nv, 0.0);
  std::vector<int> hop(nv, 0);
  std::vector<double> link_frac(nl, 0.0);
  std::vector<LinkId> touched;
  std::vector<std::pair<LinkId, LinkId>> relays;  // cheapest (source -> relay, relay -> dst) pairs
  std::vector<VertexId> order;
  std::vector<uint32_t> in_order(nv, 0);
  uint32_t walk_stamp = 0;
  // A tail: its links crossed by all the bytes (tail_ones[begin .. end), this destination's), and
  // the id of its other hops (rest_off_).
  struct Tail {
    uint32_t begin = 0, end = 0, rest = 0;
  };
  std::vector<int> memo_dst(nv, -1);  // tail_of[x] is x's tail toward memo_dst[x]
  std::vector<Tail> tail_of(nv);
  std::vector<LinkId> tail_ones;
  std::vector<RouteHop> rest;
  // Rests by content: a hash of their bits -> the ids with that hash.
  std::unordered_multimap<uint64_t, uint32_t> rest_ids;
  // The sorted (link, link_frac) of the touched links as a tail (clears link_frac): the whole-byte
  // ones in tail_ones, the rest deduplicated by content.
  auto close_tail = [&] {
    std::sort(touched.begin(), touched.end());
    Tail tl;
    tl.begin = static_cast<uint32_t>(tail_ones.size());
    rest.clear();
    uint64_t hash = 1469598103934665603ull;
    for (LinkId li : touched) {
      if (link_frac[li] == 1.0) {
        tail_ones.push_back(li);
      } else {
        rest.push_back({li, link_frac[li]});
        uint64_t bits = 0;
        std::memcpy(&bits, &link_frac[li], sizeof bits);
        hash = (hash ^ static_cast<uint64_t>(li)) * 1099511628211ull;
        hash = (hash ^ bits) * 1099511628211ull;
      }
      link_frac[li] = 0.0;
    }
    tl.end = static_cast<uint32_t>(tail_ones.size());
    if (rest.empty()) return tl;
    for (auto [it, e] = rest_ids.equal_range(hash); it != e; ++it) {
      const std::span<const RouteHop> r = rest_hops(it->second);
      if (std::equal(r.begin(), r.end(), rest.begin(), rest.end(), [](const RouteHop& a, const RouteHop& b) {
            return a.link == b.link && a.fraction == b.fraction;
          }))
        return tl.rest = it->second, tl;
    }
    rest_hops_.insert(rest_hops_.end(), rest.begin(), rest.end());
    rest_off_.push_back(static_cast<uint32_t>(rest_hops_.size()));
    tl.rest = static_cast<uint32_t>(rest_off_.size() - 2);
    rest_ids.emplace(hash, tl.rest);
    return tl;
  };
  // Ends pair q's record: its ones are the chain (already in ones_) and tl's.
  auto close_pair = [&](const Tail& tl) {
    for (uint32_t k = tl.begin; k < tl.end; ++k) ones_.push_back(tail_ones[k]);
    ones_off_.push_back(static_cast<uint32_t>(ones_.size()));
    rest_.push_back(tl.rest);
  };
  for (int d = 0; d < n; ++d) {
    std::fill(dist.begin(), dist.end(), kInf);
    settled.clear();
    const VertexId dv = t.gpu_vertex(d);
    using QE = std::pair<int64_t, VertexId>;
    std::priority_queue<QE, std::vector<QE>, std::greater<>> pq;
    dist[dv] = 0;
    pq.push({0, dv});
    // GPUs other than d never forward (relays: below), so they need no place in the queue: their
    // distance is the least offered, and they are settled after every switch and NIC.
    gpus_reached.clear();
    while (!pq.empty()) {
      auto [du, u] = pq.top();
      pq.pop();
      if (du != dist[u]) continue;
      settled.push_back(u);
      for (uint32_t k = in_off[u]; k < in_off[u + 1]; ++k) {
        const LinkId li = in_links[k];
        const VertexId w = link_from[li];
        const int64_t nd = du + cost[li];
        if (nd < dist[w]) {
          if (!is_gpu[w]) pq.push({nd, w});
          else if (dist[w] == kInf) gpus_reached.push_back(w);
          dist[w] = nd;
        }
      }
    }
    settled.insert(settled.end(), gpus_reached.begin(), gpus_reached.end());
    // Next hops toward d.
    nh.clear();
    for (size_t u = 0; u < nv; ++u) {
      nh_off[u] = static_cast<uint32_t>(nh.size());
      if (dist[u] >= kInf || static_cast<VertexId>(u) == dv) continue;
      for (uint32_t k = out_off[u]; k < out_off[u + 1]; ++k) {
        const LinkId li = out_links[k];
        const VertexId w = link_to[li];
        if (dist[w] < kInf && dist[w] + cost[li] == dist[u] && (!is_gpu[w] || w == dv)) nh.push_back(li);
      }
    }
    nh_off[nv] = static_cast<uint32_t>(nh.size());
    // Latency and hop count of the longest equal-cost path from every vertex (from dst back): a next
    // hop is strictly nearer, so settled earlier.
    for (VertexId u : settled) {
      double best = 0;
      int best_h = 0;
      for (uint32_t k = nh_off[u]; k < nh_off[u + 1]; ++k) {
        const LinkId li = nh[k];
        best = std::max(best, link_latency[li] + lat[link_to[li]]);
        best_h = std::max(best_h, 1 + hop[link_to[li]]);
      }
      lat[u] = u == dv ? 0.0 : best;
      hop[u] = u == dv ? 0 : best_h;
    }
    // The ECMP walk from x toward d with all the bytes at x: vertices on shortest paths from x,
    // processed in decreasing distance, each splitting its bytes evenly over its next hops.
    auto walk = [&](VertexId x) {
      order.clear();
      order.push_back(x);
      in_order[x] = ++walk_stamp;
      for (size_t head = 0; head < order.size(); ++head) {
        const VertexId u = order[head];
        for (uint32_t k = nh_off[u]; k < nh_off[u + 1]; ++k) {
          const VertexId w = link_to[nh[k]];
          if (in_order[w] != walk_stamp) in_order[w] = walk_stamp, order.push_back(w);
        }
      }
      std::sort(order.begin(), order.end(), [&](VertexId a, VertexId b) {
        return dist[a] != dist[b] ? dist[a] > dist[b] : a < b;
      });
      for (VertexId u : order) frac[u] = 0.0;
      frac[x] = 1.0;
      touched.clear();
      for (VertexId u : order) {
        const uint32_t k0 = nh_off[u], k1 = nh_off[u + 1];
        if (u == dv || frac[u] == 0.0 || k0 == k1) continue;
        const double f = frac[u] / (k1 - k0);
        for (uint32_t k = k0; k < k1; ++k) {
          const LinkId li = nh[k];
          if (link_frac[li] == 0.0) touched.push_back(li);
          link_frac[li] += f;
          frac[link_to[li]] += f;
        }
      }
      return close_tail();
    };
    tail_ones.clear();
    for (int s = 0; s < n; ++s) {
      const size_t q = static_cast<size_t>(d) * n + s;
      Tail tl;
      const VertexId sv = t.gpu_vertex(s);
      if (s == d) {
        close_pair(tl);
        continue;
      }
      relays.clear();
      int64_t relay_cost = kInf;
      for (LinkId l1 : nvl_out[sv]) {
        const VertexId w = links[l1].to;
        if (w == dv) {  // a direct NVLink: never relayed
          relays.clear();
          break;
        }
        for (LinkId l2 : nvl_out[w]) {
          if (links[l2].to != dv) continue;
          const int64_t c = cost[l1] + cost[l2];
          if (c < relay_cost) relay_cost = c, relays.clear();
          if (c == relay_cost) relays.emplace_back(l1, l2);
        }
      }
      if (!relays.empty() && relay_cost < dist[sv]) {
        // A relayed pair's route is a tail of its own (no chain).
        touched.clear();
        double relay_latency = 0;
        const double f = 1.0 / static_cast<double>(relays.size());
        for (const auto& [l1, l2] : relays) {
          for (LinkId li : {l1, l2}) {
            if (link_frac[li] == 0.0) touched.push_back(li);
            link_frac[li] += f;
          }
          relay_latency = std::max(relay_latency, links[l1].latency.value() + links[l2].latency.value());
        }
        tl = close_tail();
        lat_by_dst[q] = static_cast<float>(relay_latency);
        hops_by_dst[q] = 2;
      } else if (dist[sv] >= kInf) {
        diags.error(where, "links", fmt::format("no path from GPU {} ({}) to GPU {} ({})", s, vertices[sv].name, d,
                                                vertices[dv].name));
      } else {
        VertexId u = sv;
        while (u != dv && nh_off[u + 1] - nh_off[u] == 1) {
          ones_.push_back(nh[nh_off[u]]);
          u = link_to[nh[nh_off[u]]];
        }
        if (u != dv && nh_off[u + 1] > nh_off[u]) {
          if (memo_dst[u] != d) memo_dst[u] = d, tail_of[u] = walk(u);
          tl = tail_of[u];
        }
        lat_by_dst[q] = static_cast<float>(lat[sv]);
        hops_by_dst[q] = static_cast<uint8_t>(std::min(hop[sv], 255));
      }
      close_pair(tl);
    }
  }
  // Computed destination-major, stored source-major: the passes over all pairs (binding analysis,
  // layout) go source by source. Transposed tile by tile, so that reads and writes both run along
  // rows of kTile pairs.
  constexpr int kTile = 64;
  std::vector<uint32_t> src_off(pairs + 1, 0), src_rest(pairs);
  std::vector<LinkId> src_ones(ones_.size());
  const auto tiled = [&](const auto& f) {  // f(p, q) for every pair, p source-major, q destination-major
    for (int d0 = 0; d0 < n; d0 += kTile)
      for (int s0 = 0; s0 < n; s0 += kTile)
        for (int d = d0; d < std::min(n, d0 + kTile); ++d)
          for (int s = s0; s < std::min(n, s0 + kTile); ++s)
            f(static_cast<size_t>(s) * n + d, static_cast<size_t>(d) * n + s);
  };
  tiled([&](size_t p, size_t q) {
    src_off[p + 1] = ones_off_[q + 1] - ones_off_[q];
    latency[p] = lat_by_dst[q];
    hop_count[p] = hops_by_dst[q];
  });
  for (size_t p = 0; p < pairs; ++p) src_off[p + 1] += src_off[p];
  tiled([&](size_t p, size_t q) {
    src_rest[p] = rest_[q];
    std::copy(ones_.begin() + ones_off_[q], ones_.begin() + ones_off_[q + 1], src_ones.begin() + src_off[p]);
  });
  ones_off_ = std::move(src_off);
  ones_ = std::move(src_ones);
  rest_ = std::move(src_rest);
}

void PairRoutes::lay_out(const std::vector<char>& may_bind, std::vector<uint32_t>& route_offset,
                         std::vector<RouteHop>& route_hops, std::vector<uint32_t>& bind_offset,
                         std::vector<RouteHop>& bind_hops) const {
  const int n = n_;
  const size_t pairs = static_cast<size_t>(n) * static_cast<size_t>(n);
  // Sizes first, so that each array is allocated once at its final size.
  std::vector<uint32_t> rest_bind(num_rests(), 0);
  for (uint32_t r = 0; r < num_rests(); ++r)
    for (const RouteHop& h : rest_hops(r)) rest_bind[r] += may_bind[h.link] ? 1 : 0;
  size_t total = ones_.size(), total_bind = 0;
  for (size_t q = 0; q < pairs; ++q) total += rest_hops(rest_[q]).size(), total_bind += rest_bind[rest_[q]];
  for (LinkId l : ones_) total_bind += may_bind[l] ? 1 : 0;
  route_offset.assign(pairs + 1, 0);
  bind_offset.assign(pairs + 1, 0);
  route_hops.clear();
  route_hops.reserve(total);
  bind_hops.clear();
  bind_hops.reserve(total_bind);
  // One pair's ones, sorted: in a small buffer (the usual few), else in `many`.
  constexpr uint32_t kFew = 16;
  LinkId few[kFew];
  std::vector<LinkId> many;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const size_t p = static_cast<size_t>(s) * n + d, q = index(s, d);
      route_offset[p] = static_cast<uint32_t>(route_hops.size());
      bind_offset[p] = static_cast<uint32_t>(bind_hops.size());
      // Merge the ones (sorted here; few) with the rest (sorted) by link: the two share no link.
      const uint32_t count = ones_off_[q + 1] - ones_off_[q];
      LinkId* ones = count <= kFew ? few : (many.resize(count), many.data());
      for (uint32_t k = 0; k < count; ++k) {
        ones[k] = ones_[ones_off_[q] + k];
        for (uint32_t i = k; i > 0 && ones[i - 1] > ones[i]; --i) std::swap(ones[i - 1], ones[i]);
      }
      const std::span<const RouteHop> rest = rest_hops(rest_[q]);
      size_t a = 0, b = 0;
      while (a < count || b < rest.size()) {
        const RouteHop h = b == rest.size() || (a < count && ones[a] < rest[b].link) ? RouteHop{ones[a++], 1.0} : rest[b++];
        route_hops.push_back(h);
        if (may_bind[h.link]) bind_hops.push_back(h);
      }
    }
  route_offset[pairs] = static_cast<uint32_t>(route_hops.size());
  bind_offset[pairs] = static_cast<uint32_t>(bind_hops.size());
}

}  // namespace hs::topology
