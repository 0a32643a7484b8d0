#include "network/flow_network.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>

#include "util/reserve.hpp"

namespace hs::network {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

FlowNetwork::FlowNetwork(const topology::Topology& topo, double precision, bool aggregate)
    : topo_(topo), precision_(precision), aggregate_(aggregate) {
  for (const auto& l : topo.links()) solver_.add_link(l.bandwidth.value());
  link_bytes_.assign(topo.links().size(), 0.0);
  // Pairs identified by their binding links: an endpoint-separable topology (a route's binding hops
  // are its source's egress plus its destination's ingress hops per locality) where every GPU's
  // egress (ingress) hops of each locality its routes use hold a link that only that GPU's egress
  // (ingress) hops hold. Two routes with the same binding elements then join the same GPUs.
  if (topo.endpoint_separable()) {
    constexpr int kNone = -1, kMany = -2;
    std::vector<int> owner(topo.links().size(), kNone);  // 2 x GPU + (ingress ? 1 : 0), or kMany
    const int n = topo.num_gpus();
    const auto hops = [&](int g, int cross, int in) { return in ? topo.ingress_hops(g, cross != 0) : topo.egress_hops(g, cross != 0); };
    for (int g = 0; g < n; ++g)
      for (int cross = 0; cross < 2; ++cross)
        for (int in = 0; in < 2; ++in)
          for (const auto& h : hops(g, cross, in)) {
            int& o = owner[h.link];
            o = o == kNone || o == 2 * g + in ? 2 * g + in : kMany;
          }
    pair_identified_ = true;
    for (int g = 0; g < n && pair_identified_; ++g)
      for (int cross = 0; cross < 2; ++cross) {
        const bool used = cross ? topo.num_nodes() > 1 : topo.gpus_in_node(topo.node_of(g)) > 1;
        for (int in = 0; in < 2 && used; ++in) {
          bool own = false;
          for (const auto& h : hops(g, cross, in)) own = own || owner[h.link] == 2 * g + in;
          if (!own) pair_identified_ = false;
        }
      }
  }
}

void FlowNetwork::assign(engine::TaskId t, Coflow transfers, double extra_latency) {
  if (static_cast<size_t>(t) >= owned_.size()) owned_.resize(t + 1);
  owned_[t] = std::move(transfers);  // a vector's move keeps its buffer: the view stays valid
  assign_view(t, owned_[t], extra_latency);
}

void FlowNetwork::assign_view(engine::TaskId t, std::span<const Transfer> transfers, double extra_latency) {
  if (static_cast<size_t>(t) >= coflow_.size()) {
    coflow_.resize(t + 1);
    extra_.resize(t + 1, 0.0);
  }
  if (static_cast<size_t>(t) < owned_.size() && transfers.data() != owned_[t].data()) Coflow().swap(owned_[t]);
  coflow_[t] = transfers;
  extra_[t] = extra_latency;
}

void FlowNetwork::reset(const engine::TaskGraph& g) {
  for (size_t id = 0; id < flow_.size(); ++id)
    if (tag_[id] != 0) {
      solver_.remove_flow(static_cast<int>(id));
      tag_[id] = 0;
    }
  live_classes_ = 0;
  members_.clear();
  solver_.solve();
  due_heap_.clear();
  timers_.clear();
  const size_t n = static_cast<size_t>(g.num_tasks());
  if (coflow_.size() < n) coflow_.resize(n), extra_.resize(n, 0.0);
  alpha_.assign(n, 0.0);
  scale_.assign(n, 0.0);
  task_start_.assign(n, 0.0);
  pending_.assign(n, 0);
  now_ = 0;
  dirty_ = false;
  cached_ = false;
  speed_.clear();
  tracking_ = false;
  task_classes_.clear();
}

void FlowNetwork::start(engine::TaskId t, double now) {
  now_ = now;
  double alpha = 0;
  int count = 0;
  // Group the task's transfers into classes by their links that may bind (with fractions): a hash
  // of the element list, collisions resolved by comparing with each class's stored elements.
  const auto& co = coflow_[t];
  // The pairs of the last direct task, again (an EP all-to-all repeats its group's pairs every
  // layer): direct, with the recorded elements and latency.
  if (plan_.matches(co)) {
    solver_.reserve(plan_.pairs.size(), plan_.elems.size());
    start_direct(t, now, plan_.pairs.size(), plan_.elems.size(), true);
    return;
  }
  // Every class has one member when no two transfers can share their binding elements: each is its
  // own flow (aggregate_ off), or the topology identifies a pair by them and the transfers' (src,
  // dst) pairs are strictly ascending (an all-to-all as collectives list it: no pair twice). The
  // classes are then the transfers in order, as grouping would number them: made directly.
  bool direct = true;
  size_t direct_count = 0, direct_elements = 0;
  if (aggregate_) {
    direct = pair_identified_;
    int ps = -1, pd = -1;
    for (size_t i = 0; i < co.size() && direct; ++i) {
      const auto& tr = co[i];
      if (tr.src == tr.dst || tr.bytes <= 0) continue;
      direct = tr.src > ps || (tr.src == ps && tr.dst > pd);
      ps = tr.src, pd = tr.dst;
      ++direct_count;
      direct_elements += topo_.binding_hops(tr.src, tr.dst).size();
    }
  } else {
    for (const auto& tr : co)
      if (tr.src != tr.dst && tr.bytes > 0) ++direct_count, direct_elements += topo_.binding_hops(tr.src, tr.dst).size();
  }
  if (direct) {
    solver_.reserve(direct_count, direct_elements);
    start_direct(t, now, direct_count, direct_elements, false);
    return;
  }
  const GroupPlan* gp = group_plans_.find(co);
  if (gp) {
    // The same endpoints and caps as a recent task: its classes, read from the record. Bytes are
    // added per transfer and element in the order grouping adds them (the same sums, bit for bit).
    ++stats_.groupings_reused;
    for (size_t i = 0; i < co.size(); ++i) {
      if (gp->gid[i] < 0) continue;
      const auto g = static_cast<size_t>(gp->gid[i]);
      for (uint32_t k = gp->ebegin[g]; k < gp->ebegin[g + 1]; ++k) {
        const auto& el = gp->elems[k];
        if (link_bytes_[el.link] == 0) bytes_links_.push_back(el.link);
        link_bytes_[el.link] += co[i].bytes * el.coef;
      }
      stats_.bytes_offered += co[i].bytes;
    }
  } else {
    // Grouped into a new record (the least recent one's place), or, for a task too large to
    // keep, into one freed below.
    const bool keep = co.size() <= GroupPlans::kMaxTransfers;
    GroupPlan& made = keep ? group_plans_.slot() : large_group_;
    group(co, made);
    if (keep) {
      made.key.resize(co.size());
      for (size_t i = 0; i < co.size(); ++i) made.key[i] = GroupPlan::key_of(co[i]);
    }
    gp = &made;
  }
  const GroupPlan& plan = *gp;
  alpha = plan.alpha;
  count = plan.flows;
  // Member sizes per class, contiguous and ascending; one solver flow of weight = members per class.
  const size_t classes = plan.count.size();
  std::vector<uint32_t>& fill = gfill_;
  fill.resize(classes);
  const auto base = static_cast<uint32_t>(members_.size());
  uint32_t at = base;
  for (size_t g = 0; g < classes; ++g) fill[g] = at, at += plan.count[g];
  members_.resize(at);
  for (size_t i = 0; i < co.size(); ++i)
    if (plan.gid[i] >= 0) members_[fill[plan.gid[i]]++] = co[i].bytes;
  at = base;
  solver_.reserve(classes, plan.elems.size());
  // Solver ids are reused or the next new one: every id below num_flows() + classes.
  const size_t ids = static_cast<size_t>(solver_.num_flows()) + classes;
  if (flow_.size() < ids) flow_.resize(ids), tag_.resize(ids, 0), version_.resize(ids, 0);
  for (size_t g = 0; g < classes; ++g) {
    const uint32_t b = at, e = at + plan.count[g];
    at = e;
    if (e - b > 1) std::sort(members_.begin() + b, members_.begin() + e);
    const std::span<const solver::Element> el(plan.elems.data() + plan.ebegin[g], plan.ebegin[g + 1] - plan.ebegin[g]);
    stats_.elements += el.size();
    const int id = solver_.add_flow(el, static_cast<double>(e - b), plan.cap[g]);
    if (tracking_) task_classes_[t].push_back({id, plan.cap[g]});
    make_class(id, t, co[plan.first[g]].src, co[plan.first[g]].dst, members_[b], b + 1, e, 0, now);
  }
  if (co.size() >= (1u << 16)) {
    // A large task's grouping scratch (about 60 bytes per transfer) is not kept for the next one.
    large_group_ = GroupPlan();
    std::vector<int>().swap(gnext_same_hash_);
    std::vector<uint32_t>().swap(gfill_);
  }
  finish_start(t, now, count, classes, alpha);
}

// Groups the transfers of `co` into classes, written to `p` (all but its key), adding their bytes to
// link_bytes_ and stats.
void FlowNetwork::group(std::span<const Transfer> co, GroupPlan& p) {
  p.alpha = 0;
  p.flows = 0;
  p.gid.assign(co.size(), -1);
  p.count.clear();
  p.ebegin.clear();
  p.first.clear();
  gnext_same_hash_.clear();
  p.elems.clear();
  p.cap.clear();
  // Open addressing, linear probing: hash -> the last class made with it (gnext_same_hash_ chains
  // the earlier ones). No allocation per class (a million transfers make a million classes).
  size_t slots = 16;
  while (slots < 2 * co.size()) slots *= 2;
  // Kept across tasks below 2^17 slots (an EP group's all-to-all: no allocation and no fresh pages
  // per task); a larger one is made for its task and freed.
  std::vector<uint64_t>& hash_keys = hash_keys_;
  std::vector<int>& hash_class = hash_class_;
  hash_keys.assign(slots, 0);
  hash_class.assign(slots, -1);
  const auto slot_of = [&](uint64_t h) {
    size_t k = static_cast<size_t>(h ^ (h >> 29)) & (slots - 1);
    while (hash_class[k] >= 0 && hash_keys[k] != h) k = (k + 1) & (slots - 1);
    return k;
  };
  // In blocks of transfers: first each one's elements, hash and rate cap, prefetching its slot (the
  // table is far larger than the caches: a million transfers make 24 MB, one miss per probe); then
  // the lookups, in transfer order, so classes are numbered as one pass would number them.
  constexpr size_t kBlock = 256;
  for (size_t i0 = 0; i0 < co.size(); i0 += kBlock) {
    const size_t i1 = std::min(co.size(), i0 + kBlock);
    blk_elems_.clear();
    blk_.clear();
    for (size_t i = i0; i < i1; ++i) {
      const auto& tr = co[i];
      if (tr.src == tr.dst || tr.bytes <= 0) continue;
      p.alpha = std::max(p.alpha, topo_.route_latency(tr.src, tr.dst).value());
      const auto eb = static_cast<uint32_t>(blk_elems_.size());
      for (const auto& hop : topo_.binding_hops(tr.src, tr.dst)) blk_elems_.push_back({hop.link, hop.fraction});
      const double cap = tr.rate_cap > 0 ? tr.rate_cap : solver::MaxMinSolver::kUnlimited;
      uint64_t h = 1469598103934665603ull;  // FNV-1a over (link, fraction bits) and the rate cap
      h = (h ^ std::bit_cast<uint64_t>(cap)) * 1099511628211ull;
      for (size_t j = eb; j < blk_elems_.size(); ++j) {
        const auto& el = blk_elems_[j];
        h = (h ^ static_cast<uint64_t>(el.link)) * 1099511628211ull;
        h = (h ^ std::bit_cast<uint64_t>(el.coef)) * 1099511628211ull;
        if (link_bytes_[el.link] == 0) bytes_links_.push_back(el.link);
        link_bytes_[el.link] += tr.bytes * el.coef;
      }
      ++p.flows;
      stats_.bytes_offered += tr.bytes;
      if (!aggregate_) h = i;  // every flow a class of its own
      const size_t k0 = static_cast<size_t>(h ^ (h >> 29)) & (slots - 1);
      __builtin_prefetch(&hash_class[k0]);
      __builtin_prefetch(&hash_keys[k0]);
      blk_.push_back({h, cap, static_cast<uint32_t>(i), eb, static_cast<uint32_t>(blk_elems_.size())});
    }
    for (const Pending& q : blk_) {
      const std::span<const solver::Element> el(blk_elems_.data() + q.ebegin, q.eend - q.ebegin);
      auto same = [&](int g) {
        const uint32_t b = p.ebegin[g], e = p.ebegin[g + 1];
        if (e - b != el.size() || p.cap[g] != q.cap) return false;
        for (uint32_t k = b; k < e; ++k)
          if (p.elems[k].link != el[k - b].link || p.elems[k].coef != el[k - b].coef) return false;
        return true;
      };
      const size_t k = slot_of(q.hash);
      int g = hash_class[k];
      while (g >= 0 && !same(g)) g = gnext_same_hash_[g];
      if (g < 0) {
        g = static_cast<int>(p.count.size());
        gnext_same_hash_.push_back(hash_class[k]);
        hash_keys[k] = q.hash;
        hash_class[k] = g;
        if (p.ebegin.empty()) p.ebegin.push_back(0);
        p.elems.insert(p.elems.end(), el.begin(), el.end());
        p.ebegin.push_back(static_cast<uint32_t>(p.elems.size()));
        p.count.push_back(0);
        p.cap.push_back(q.cap);
        p.first.push_back(static_cast<int>(q.index));
      }
      p.gid[q.index] = g;
      ++p.count[g];
    }
  }
  if (slots > (1u << 17)) {  // freed before the classes' records are made (4,096 GPUs: 400 MB)
    std::vector<uint64_t>().swap(hash_keys);
    std::vector<int>().swap(hash_class);
  }
}

void FlowNetwork::make_class(int id, engine::TaskId t, int src, int dst, double size, uint32_t mnext, uint32_t mend,
                             double progress, double now) {
  if (static_cast<size_t>(id) >= flow_.size()) flow_.resize(id + 1), tag_.resize(id + 1, 0), version_.resize(id + 1, 0);
  Flow& f = flow_[id];
  f.task = t;
  f.src = src;
  f.dst = dst;
  f.size = size;
  f.mnext = mnext;
  f.mend = mend;
  f.progress = progress;
  f.since = now;
  f.rate = 0;
  ++live_classes_;
  bump(id);
}

void FlowNetwork::start_direct(engine::TaskId t, double now, size_t classes, size_t elements, bool planned) {
  const auto& co = coflow_[t];
  // Not planned: the pairs, elements and latency are read from the topology, and recorded as the
  // plan for the next task unless too many (the previous plan, still true, is then kept).
  const bool record = !planned && classes <= kPlanMaxPairs;
  if (record) plan_.begin(classes, elements);
  double alpha = planned ? plan_.alpha : 0;
  const size_t ids = static_cast<size_t>(solver_.num_flows()) + classes;
  if (flow_.size() < ids) flow_.resize(ids), tag_.resize(ids, 0), version_.resize(ids, 0);
  size_t k = 0;  // the transfer's pair in the plan
  for (const auto& tr : co) {
    if (tr.src == tr.dst || tr.bytes <= 0) continue;
    std::span<const solver::Element> el;
    if (planned) {
      el = plan_.elements(k);
    } else {
      alpha = std::max(alpha, topo_.route_latency(tr.src, tr.dst).value());
      if (record) {
        el = plan_.add(tr.src, tr.dst, topo_.binding_hops(tr.src, tr.dst));
      } else {
        binding_elements(tr.src, tr.dst);
        el = scratch_;
      }
    }
    ++k;
    for (const auto& e : el) {
      if (link_bytes_[e.link] == 0) bytes_links_.push_back(e.link);
      link_bytes_[e.link] += tr.bytes * e.coef;
    }
    stats_.bytes_offered += tr.bytes;
    stats_.elements += el.size();
    const double cap = tr.rate_cap > 0 ? tr.rate_cap : solver::MaxMinSolver::kUnlimited;
    const int id = solver_.add_flow(el, 1.0, cap);
    if (tracking_) task_classes_[t].push_back({id, cap});
    make_class(id, t, tr.src, tr.dst, tr.bytes, 0, 0, 0, now);  // its one member: nothing in members_
  }
  if (record) plan_.finish(alpha);
  finish_start(t, now, static_cast<int>(classes), classes, alpha);
}

void FlowNetwork::finish_start(engine::TaskId t, double now, int count, size_t classes, double alpha) {
  const auto& co = coflow_[t];
  task_start_[t] = now;
  stats_.flows += count;
  stats_.classes += classes;
  // The task's duration scale: its most loaded link's bytes / capacity (its analytic-tier time
  // without latency), a lower bound on how long it runs.
  double scale = 0;
  for (int l : bytes_links_) {
    scale = std::max(scale, link_bytes_[l] / solver_.capacity(l));
    link_bytes_[l] = 0;
  }
  bytes_links_.clear();
  scale_[t] = scale;
  alpha_[t] = alpha + extra_[t];
  pending_[t] = count;
  if (count == 0) {
    timers_.push_back({now + (co.empty() ? extra_[t] : alpha_[t]), t});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
  }
  if (count > 0) dirty_ = true;
  cached_ = false;
}

double FlowNetwork::project(const Flow& f) const {
  const double left = f.size - f.progress;
  if (left <= 1e-12 * f.size) return now_;
  return f.rate > 0 ? now_ + left / f.rate : kInf;
}

void FlowNetwork::settle() {
  if (!dirty_) return;
  dirty_ = false;
  cached_ = false;
  solver_.solve();
  ++stats_.solver_updates;
  // Changed projections move their entries: sifted one by one (few), or set in place and the
  // heap rebuilt (many: O(heap) beats O(changed x log heap)).
  const auto changed = solver_.changed();
  const bool bulk = changed.size() * 2 > due_heap_.size();
  if (bulk) due_heap_.reserve(due_heap_.size() + changed.size());
  // The changed classes' records lie anywhere in flow_ (ids are reused): fetched 8 ahead, where a
  // miss per record was most of settle() (no effect on results).
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < changed.size(); ++k) {
    if (k + kAhead < changed.size()) {
      const Flow* ahead = flow_.data() + changed[k + kAhead];
      __builtin_prefetch(ahead);
      __builtin_prefetch(reinterpret_cast<const char*>(ahead + 1) - 1);
    }
    const int id = changed[k];
    if (tag_[id] == 0) continue;  // finished since
    Flow& f = flow_[id];
    f.progress += f.rate * (now_ - f.since);
    f.since = now_;
    f.rate = solver_.rate(id);
    const double finish = project(f);
    if (bulk) {
      if (finish < kInf) due_heap_.set_unordered(id, finish);
      else due_heap_.erase_unordered(id);
    } else {
      if (finish < kInf) due_heap_.set(id, finish);
      else due_heap_.erase(id);
    }
  }
  if (bulk) due_heap_.order();
}

void FlowNetwork::binding_elements(int src, int dst) {
  scratch_.clear();
  for (const auto& h : topo_.binding_hops(src, dst)) scratch_.push_back({h.link, h.fraction});
}

double FlowNetwork::next_completion() {
  settle();
  if (!cached_) {
    cached_ = true;
    if (due_heap_.empty()) {
      next_flow_ = kInf;
    } else {
      const DueHeap::Due first = due_heap_.front();
      next_flow_ = first.time;
      if (precision_ > 0) {
        // Merge every completion projected within precision x (the earliest's elapsed time, or its
        // task's duration scale if longer): the latest projection up to that bound (for_due).
        const Flow& ff = flow_[first.id];
        const double bound = first.time + precision_ * std::max(first.time - task_start_[ff.task], scale_[ff.task]);
        due_heap_.for_due(bound, [&](const DueHeap::Due& d) { next_flow_ = std::max(next_flow_, d.time); });
      }
    }
  }
  const double timer = timers_.empty() ? kInf : timers_.front().time;
  return std::min(next_flow_, timer);
}

uint32_t FlowNetwork::drain(int id, double now) {
  const Flow& f = flow_[id];
  // Every member whose size the class has carried by now is done (the first one is due, others of
  // the same size, or merged into this event, may be too).
  const double p = f.progress + f.rate * (now - f.since);
  stats_.bytes_delivered += std::min(f.size, p);
  uint32_t next = f.mnext;
  int done = 1;
  while (next < f.mend && members_[next] <= p * (1 + 1e-12)) {
    stats_.bytes_delivered += std::min(members_[next], p);
    ++next;
    ++done;
  }
  stats_.events += static_cast<uint64_t>(done);
  tag_[id] = 0;
  due_heap_.erase(id);  // none left when due: taken out before
  --live_classes_;
  pending_[f.task] -= done;
  if (pending_[f.task] == 0) {
    timers_.push_back({now + alpha_[f.task], f.task});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
    if (tracking_) std::vector<std::pair<int, double>>().swap(task_classes_[f.task]);
  }
  return next;
}

void FlowNetwork::finish_class(int id, double now) {
  const Flow f = flow_[id];  // a copy: make_class() below rewrites the record
  const double p = f.progress + f.rate * (now - f.since);
  const uint32_t next = drain(id, now);
  if (next < f.mend) {
    // The rest continue as a class of fewer members: the solver flow takes the new weight (a
    // removal at its rate for the next solve), at its rate until that solve moves it.
    binding_elements(f.src, f.dst);  // the class's links, as at its start
    solver_.set_weight(id, scratch_, static_cast<double>(f.mend - next));
    make_class(id, f.task, f.src, f.dst, members_[next], next + 1, f.mend, p, now);
    Flow& g = flow_[id];
    g.rate = solver_.rate(id);
    const double finish = project(g);
    if (finish < kInf) due_heap_.set(id, finish);
  } else {
    solver_.remove_flow(id);
  }
}

void FlowNetwork::advance_to(double now, std::vector<engine::TaskId>& finished) {
  now_ = now;
  bool any = false;
  // The entries due by now are the top of the heap. Few: pop them one by one, in (time, id) order.
  // Many (a uniform all-to-all finishes everything at once): take them out in one pass, finish
  // them in id order, and rebuild the heap from the rest. The choice counts the entries due (one
  // per live class at most) against the live classes.
  size_t due = 0;
  due_heap_.for_due(now, [&](const DueHeap::Due&) { ++due; });
  if (due * 8 > live_classes_ && due > 64) {
    // All finish at `now`, in id order (the order decides only which ids and element ranges are
    // freed first), through a per-id mark, set in the pass that keeps the rest: linear, where a
    // sort by (time, id) cost n log n (their projections differ in the last bits), and no copy of
    // the due entries.
    due_at_.assign(flow_.size(), 0);
    due_heap_.take_due(now, [&](int id) { due_at_[id] = 1; });
    gone_.clear();
    reserve_geometric(gone_, due);
    for (size_t id = 0; id < due_at_.size(); ++id)
      if (due_at_[id]) gone_.push_back(static_cast<int>(id));
    // Usually every due class drains all its members (one each with a NIC per GPU): then they
    // leave the solver in one remove_flows() (the same as one by one, in id order).
    bool whole = true;
    for (int id : gone_) {
      const Flow& f = flow_[id];
      if (f.mend > f.mnext && members_[f.mend - 1] > (f.progress + f.rate * (now - f.since)) * (1 + 1e-12)) {
        whole = false;
        break;
      }
    }
    if (whole) {
      for (int id : gone_) drain(id, now);
      solver_.remove_flows(gone_);
      any = any || !gone_.empty();
    } else {
      due_.clear();
      for (int id : gone_) due_.push_back({id, version_[id]});
      for (const auto& [id, version] : due_) {
        if (tag_[id] != version) continue;  // its id finished earlier in this pass (a class re-added)
        finish_class(id, now);
        any = true;
      }
    }
  }
  while (!due_heap_.empty() && due_heap_.front().time <= now) {
    finish_class(due_heap_.pop().id, now);
    any = true;
  }
  if (any) {
    ++stats_.completion_events;
    dirty_ = true;
  }
  cached_ = false;
  while (!timers_.empty() && timers_.front().time <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    finished.push_back(timers_.back().task);
    timers_.pop_back();
  }
}

void FlowNetwork::track_classes() {
  // The first slowdown of the run: no cap was changed before it, so the solver's are the classes' own.
  tracking_ = true;
  task_classes_.assign(pending_.size(), {});
  for (size_t id = 0; id < flow_.size(); ++id)
    if (tag_[id] != 0) task_classes_[flow_[id].task].push_back({static_cast<int>(id), solver_.rate_cap(static_cast<int>(id))});
}

double FlowNetwork::solo_drain(engine::TaskId t) const {
  double d = scale_[t];
  for (const auto& tr : coflow_[t])
    if (tr.src != tr.dst && tr.bytes > 0 && tr.rate_cap > 0) d = std::max(d, tr.bytes / tr.rate_cap);
  return d;
}

bool FlowNetwork::set_speed(engine::TaskId t, double speed, double now) {
  if (speed_.empty()) {
    if (speed >= 1) return true;
    speed_.assign(pending_.size(), 1.0);
  }
  const double before = speed_[t];
  speed_[t] = speed;
  // Nothing left to slow (drained, paying latency; or nothing sent), or no change.
  if (speed == before || pending_[t] == 0) return true;
  if (!tracking_) track_classes();
  now_ = now;
  const double drain = solo_drain(t);
  for (const auto& [id, own] : task_classes_[t]) {
    if (tag_[id] == 0 || flow_[id].task != t) continue;  // finished (its id maybe reused since)
    double cap = own;
    if (speed < 1 && drain > 0) {
      const Flow& f = flow_[id];
      const double largest = f.mend > f.mnext ? members_[f.mend - 1] : f.size;
      cap = std::min(own, speed * largest / drain);
    }
    solver_.set_rate_cap(id, cap);
  }
  // Re-solved at the next settle(), at `now`: progress up to now at the old rates stays.
  dirty_ = true;
  cached_ = false;
  return true;
}

}  // namespace hs::network
