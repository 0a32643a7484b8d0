#include "calib/link_fit.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <Eigen/Dense>

#include "topology/topology_loader.hpp"
#include "util/diagnostics.hpp"

namespace hs::calib {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The lower of the out-of-place and in-place times (NcclTestsRow::best_time_us).
double measured_seconds(const NcclTestsRow& r) { return r.best_time_us() * 1e-6; }

double class_latency(const topology::Topology& t, const std::string& cls) {
  for (const auto& l : t.links())
    if (l.link_class == cls) return l.latency.value();
  return 0;
}

}  // namespace

std::vector<int> nccl_group(const topology::Topology& topo, int ranks, int nodes, const std::string& file) {
  if (ranks < 2) throw InputError({file, 0, 0}, "Rank", "the log lists fewer than 2 ranks ('#  Rank R ... on HOST device D' lines)");
  if (nodes < 1) {
    // Nodes unknown (an excerpt without rank lines): the first `ranks` GPUs, node by node.
    std::vector<int> g;
    for (int n = 0; n < topo.num_nodes() && static_cast<int>(g.size()) < ranks; ++n)
      for (int gpu : topo.node_gpus(n))
        if (static_cast<int>(g.size()) < ranks) g.push_back(gpu);
    if (static_cast<int>(g.size()) < ranks)
      throw InputError({file, 0, 0}, "Rank", fmt::format("{} ranks, the topology has {} GPUs", ranks, topo.num_gpus()));
    return g;
  }
  if (ranks % nodes != 0)
    throw InputError({file, 0, 0}, "Rank", fmt::format("{} ranks over {} hosts: not an equal number per node", ranks, nodes));
  const int per = ranks / nodes;
  if (nodes > topo.num_nodes())
    throw InputError({file, 0, 0}, "Rank", fmt::format("the log ran on {} nodes, the topology has {}", nodes, topo.num_nodes()));
  std::vector<int> g;
  for (int n = 0; n < nodes; ++n) {
    if (topo.gpus_in_node(n) < per)
      throw InputError({file, 0, 0}, "Rank",
                       fmt::format("{} ranks per node, the topology's node {} has {} GPUs", per, n, topo.gpus_in_node(n)));
    for (int i = 0; i < per; ++i) g.push_back(topo.node_gpus(n)[i]);
  }
  return g;
}

std::vector<NcclMeasurement> nccl_measurements(const Measured& m) {
  std::vector<NcclMeasurement> out;
  for (const CollectiveRow& r : m.collectives) {
    auto it = std::find_if(out.begin(), out.end(), [&](const NcclMeasurement& x) { return x.op == r.op; });
    if (it == out.end()) {
      NcclMeasurement x;
      x.op = r.op;
      x.log.file = fmt::format("{} ({})", m.file, collective::to_string(r.op));
      x.log.ranks = m.ranks;
      x.log.nodes = m.nodes;
      out.push_back(std::move(x));
      it = out.end() - 1;
    }
    NcclTestsRow row;
    row.bytes = r.bytes;
    row.count = r.bytes / 4;
    row.type = "float";
    row.redop = "sum";
    row.time_us = r.seconds * 1e6;
    row.algbw = r.algbw / 1e9;
    row.busbw = r.busbw / 1e9;
    it->log.rows.push_back(row);
  }
  return out;
}

ErrorSummary summarize(const std::vector<const PointCheck*>& points) {
  ErrorSummary e;
  std::vector<double> b, a;
  for (const PointCheck* p : points) {
    b.push_back(std::abs(p->before_s - p->measured_s) / p->measured_s);
    a.push_back(std::abs(p->after_s - p->measured_s) / p->measured_s);
  }
  e.n = static_cast<int>(points.size());
  if (points.empty()) return e;
  e.median_before = median(b), e.median_after = median(a);
  e.max_before = *std::max_element(b.begin(), b.end());
  e.max_after = *std::max_element(a.begin(), a.end());
  return e;
}

namespace {

constexpr const char* kTierName[2] = {"intra", "net"};
constexpr const char* kProtoName[3] = {"LL", "LL128", "Simple"};

// One fitted quantity: the log of a factor on a preset figure.
struct Param {
  enum Kind { kClassBandwidth, kClassLatency, kProtoLatency, kProtoBandwidth, kNetStepLatency } kind;
  std::string cls;  // link class (class parameters)
  int tier = 0, proto = 0;
  double preset_latency = 0;  // seconds per link (kClassLatency); the unit of kNetStepLatency
};

// The class whose links carry most of the route latency from a to b (ties: the first on the route).
std::string latency_class(const topology::Topology& t, int a, int b) {
  std::map<std::string, double> by;
  std::string best;
  for (const auto& h : t.route(a, b).hops) {
    const auto& l = t.link(h.link);
    by[l.link_class] += l.latency.value();
    if (best.empty() || by[l.link_class] > by[best]) best = l.link_class;
  }
  return best;
}


}  // namespace

LinkFit fit_links(const std::string& topo_text, const std::string& topo_source, const std::vector<NcclMeasurement>& logs) {
  const topology::Topology base = topology::load_topology(topo_text, topo_source);
  // Rows: positive sizes with a time (0-byte alltoall rows time nothing); held out: every other
  // size of a fitted log, every size of a held-out log.
  const size_t nl = logs.size();
  std::vector<std::vector<double>> sizes(nl), measured(nl);
  std::vector<std::vector<bool>> held(nl);
  std::vector<std::string> bw_cls(nl), lat_cls(nl);
  std::vector<std::vector<int>> groups(nl);
  bool any_fitted = false;
  for (size_t k = 0; k < nl; ++k) {
    const auto& m = logs[k];
    for (const auto& r : m.log.rows)
      if (r.bytes > 0 && r.best_time_us() > 0) sizes[k].push_back(r.bytes), measured[k].push_back(measured_seconds(r));
    for (size_t i = 0; i < sizes[k].size(); ++i) held[k].push_back(m.held_out || i % 2 == 1);
    groups[k] = nccl_group(base, m.log.ranks, m.log.nodes, m.log.file);
    if (m.held_out) continue;
    any_fitted = true;
    std::vector<double> ft;
    for (size_t i = 0; i < sizes[k].size(); ++i)
      if (!held[k][i]) ft.push_back(measured[k][i]);
    if (ft.size() < 3)
      throw InputError({m.log.file, 0, 0}, "", fmt::format("{} rows: too few to fit and check a link class (need at least 6 sizes, "
                                                           "e.g. nccl-tests -b 8 -e 128M -f 2)", sizes[k].size()));
    const double tmin = *std::min_element(ft.begin(), ft.end());
    if (std::count_if(ft.begin(), ft.end(), [&](double t) { return t >= 3 * tmin; }) < 2)
      throw InputError({m.log.file, 0, 0}, "", "fewer than 2 bandwidth-bound rows (time >= 3x the smallest): extend the "
                                               "sweep to larger sizes (-e 1G or more)");
  }
  if (!any_fitted) throw InputError({"--holdout-logs", 0, 0}, "", "every log is held out: leave at least one to fit");

  // Predictions of every row under an adjustment; `plans` the (algorithm, protocol) per row.
  auto predict = [&](const topology::TopologyAdjust* adj, bool held_too, std::vector<std::vector<std::string>>* plans,
                     std::vector<std::string>* bottleneck) {
    topology::Topology t = topology::load_topology(topo_text, topo_source, adj);
    collective::AnalyticNetwork net(t);
    std::vector<std::vector<double>> out(nl);
    if (plans) plans->assign(nl, {});
    for (size_t k = 0; k < nl; ++k) {
      if (!held_too && logs[k].held_out) continue;
      out[k].assign(sizes[k].size(), 0);
      if (plans) (*plans)[k].assign(sizes[k].size(), "");
      for (size_t i = 0; i < sizes[k].size(); ++i) {
        if (!held_too && held[k][i]) continue;
        const auto r = collective::nccl_op_time(net, logs[k].op, groups[k], sizes[k][i]);
        out[k][i] = r.seconds;
        if (plans) {
          const auto pl = collective::nccl_op_plan(net, logs[k].op, groups[k], sizes[k][i]);
          (*plans)[k][i] = pl.proto.empty() ? pl.algo : pl.algo + "/" + pl.proto;
        }
        if (bottleneck && r.bottleneck >= 0) (*bottleneck)[k] = t.link(r.bottleneck).link_class;
      }
    }
    return out;
  };
  std::vector<std::vector<std::string>> plans_before, plans_after;
  const auto before = predict(nullptr, true, &plans_before, &bw_cls);
  for (size_t k = 0; k < nl; ++k) {
    if (bw_cls[k].empty()) throw InputError({logs[k].log.file, 0, 0}, "", "the operation crosses no link on this topology");
    const auto& g = groups[k];
    int other = g[1];
    if (logs[k].log.nodes != 1)
      for (int x : g)
        if (base.node_of(x) != base.node_of(g[0])) other = x;
    lat_cls[k] = latency_class(base, g[0], other);
  }

  // The parameters: classes that bound or carry the latency of a fitted log, protocols per tier.
  std::vector<Param> params;
  auto class_param = [&](Param::Kind kind, const std::string& cls) {
    for (const auto& p : params)
      if (p.kind == kind && p.cls == cls) return;
    Param p{kind, cls};
    p.preset_latency = class_latency(base, cls);
    if (kind == Param::kClassLatency && !(p.preset_latency > 0)) return;  // a factor on 0 moves nothing
    params.push_back(p);
  };
  bool multi_node = false;
  double net_route = 0;  // the route latency between nodes of the first multi-node log
  for (size_t k = 0; k < nl; ++k) {
    if (logs[k].held_out) continue;
    class_param(Param::kClassBandwidth, bw_cls[k]);
    class_param(Param::kClassLatency, lat_cls[k]);
    if (base.node_of(groups[k].front()) != base.node_of(groups[k].back()) && !multi_node)
      net_route = base.route_latency(groups[k].front(), groups[k].back()).value();
    multi_node = multi_node || base.node_of(groups[k].front()) != base.node_of(groups[k].back());
  }
  // NCCL's latency per network step (latencyInter; topology::NcclConfig::net_step_latency): added to
  // every network step, not to the route the transfers take. A class latency moves both, and past
  // the point where a route takes longer than NCCL's LL / LL128 latency (a 2-node tree's LL latency
  // grows 10/14 as fast as the route's) every algorithm is timed at the route and the per-protocol
  // factors no longer move anything. Fitted linearly, in units of the route latency between nodes,
  // from 0 (the preset's), at least 0.
  if (multi_node && net_route > 0) {
    Param p{Param::kNetStepLatency, ""};
    p.preset_latency = net_route;
    params.push_back(p);
  }
  for (int tier = 0; tier < (multi_node ? 2 : 1); ++tier)
    for (int proto = 0; proto < 2; ++proto)
      for (auto kind : {Param::kProtoLatency, Param::kProtoBandwidth}) params.push_back({kind, "", tier, proto});
  // Simple's bandwidth fraction: what moves an operation whose transfers run at NCCL's per-channel
  // rate caps rather than a link's bandwidth (last: kept only where the class bandwidth cannot do it).
  for (int tier = 0; tier < (multi_node ? 2 : 1); ++tier) params.push_back({Param::kProtoBandwidth, "", tier, 2});

  auto adjust_of = [&](const Eigen::VectorXd& th) {
    topology::TopologyAdjust a;
    for (size_t j = 0; j < params.size(); ++j) {
      const Param& p = params[j];
      const double f = std::exp(th[static_cast<Eigen::Index>(j)]);
      if (p.kind == Param::kClassBandwidth || p.kind == Param::kClassLatency) {
        auto it = std::find_if(a.links.begin(), a.links.end(), [&](const auto& l) { return l.link_class == p.cls; });
        if (it == a.links.end()) a.links.push_back({p.cls, 1.0, std::nullopt}), it = a.links.end() - 1;
        if (p.kind == Param::kClassBandwidth) it->bandwidth_scale = f;
        else it->latency = Seconds(p.preset_latency * f);
      } else if (p.kind == Param::kNetStepLatency) {
        a.net_step_latency = Seconds(p.preset_latency * std::max(0.0, th[static_cast<Eigen::Index>(j)]));
      } else if (p.kind == Param::kProtoLatency) {
        a.protocols[p.tier][p.proto].latency = f;
      } else {
        a.protocols[p.tier][p.proto].bandwidth = f;
      }
    }
    return a;
  };
  int fitted_rows = 0;
  for (size_t k = 0; k < nl; ++k)
    for (size_t i = 0; i < sizes[k].size(); ++i) fitted_rows += !held[k][i];
  auto residuals = [&](const Eigen::VectorXd& th) {
    const auto adj = adjust_of(th);
    const auto p = predict(&adj, false, nullptr, nullptr);
    Eigen::VectorXd r(fitted_rows + th.size());
    Eigen::Index n = 0;
    for (size_t k = 0; k < nl; ++k)
      for (size_t i = 0; i < sizes[k].size(); ++i)
        if (!held[k][i]) r[n++] = std::log(p[k][i] / measured[k][i]);
    for (Eigen::Index j = 0; j < th.size(); ++j) r[n++] = kPriorWeight * th[j];
    return r;
  };
  auto jacobian = [&](const Eigen::VectorXd& th, const Eigen::VectorXd& r) {
    (void)r;
    // Central differences: at a kink (a link exactly as fast as another bound, as some presets' NICs
    // are) a one-sided one sees no effect on one side.
    Eigen::MatrixXd J(r.size(), th.size());
    for (Eigen::Index j = 0; j < th.size(); ++j) {
      Eigen::VectorXd up = th, down = th;
      const double h = 1e-4;
      up[j] += h, down[j] -= h;
      J.col(j) = (residuals(up) - residuals(down)) / (2 * h);
    }
    return J;
  };
  // One fit from the preset: prune, then Levenberg-Marquardt. Returns the kept parameters' values and
  // the fitted rows' cost (with the prior).
  struct Solved {
    std::vector<Param> params;
    Eigen::VectorXd th;
    double cost = 0;
    int iterations = 0;
  };
  auto solve = [&](std::vector<Param> candidates) {
    params = std::move(candidates);
    // Parameters no fitted row depends on (a protocol NCCL never picks here, a tier no step uses), or
    // that move the fitted rows as the ones before them do (Simple's bandwidth where the links bound
    // every fitted row: the class bandwidth's effect), are dropped, in the order above: the data cannot
    // tell them apart, and the earlier one is the one the rest of the simulator uses.
    {
      Eigen::VectorXd th = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(params.size()));
      const Eigen::MatrixXd J = jacobian(th, residuals(th)).topRows(fitted_rows);
      std::vector<Param> kept;
      std::vector<Eigen::VectorXd> basis;  // orthonormal, spanning the kept columns
      for (size_t j = 0; j < params.size(); ++j) {
        Eigen::VectorXd c = J.col(static_cast<Eigen::Index>(j));
        const double n0 = c.norm();
        for (const auto& b : basis) c -= b.dot(c) * b;
        if (n0 > 1e-6 && c.norm() > 0.05 * n0) kept.push_back(params[j]), basis.push_back(c / c.norm());
      }
      params = std::move(kept);
    }
    Eigen::VectorXd th = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(params.size()));
    Eigen::VectorXd r = residuals(th);
    double cost = r.squaredNorm(), lambda = 1e-2;
    int iterations = 0;
    for (int it = 0; it < 60 && th.size() > 0; ++it) {
      ++iterations;
      const Eigen::MatrixXd J = jacobian(th, r);
      const Eigen::MatrixXd A = J.transpose() * J;
      const Eigen::VectorXd g = J.transpose() * r;
      bool improved = false, converged = false;
      for (int tries = 0; tries < 10 && !improved; ++tries) {
        Eigen::MatrixXd D = A;
        for (Eigen::Index j = 0; j < D.rows(); ++j) D(j, j) += lambda * std::max(A(j, j), 1e-9);
        Eigen::VectorXd step = D.ldlt().solve(g);
        // At most a factor e^2 per step on any parameter.
        const double big = step.cwiseAbs().maxCoeff();
        if (big > 2) step *= 2 / big;
        const Eigen::VectorXd next = th - step;
        const Eigen::VectorXd rn = residuals(next);
        if (rn.squaredNorm() < cost) {
          converged = cost - rn.squaredNorm() < 1e-10 * std::max(cost, 1e-30) || step.cwiseAbs().maxCoeff() < 1e-7;
          th = next, r = rn, cost = r.squaredNorm();
          improved = true;
          lambda = std::max(lambda / 3, 1e-9);
        } else {
          lambda *= 5;
        }
      }
      if (!improved || converged) break;
    }
    return Solved{params, th, cost, iterations};
  };
  // The network step latency is fitted where it lowers the fitted rows' cost: the search starts at the
  // preset and the cost has kinks (NCCL's choice, a route latency above NCCL's), so the fit with it
  // can end in a worse local minimum than the one without it (e.g. a log of mid and large sizes only).
  std::vector<Param> without;
  for (const auto& p : params)
    if (p.kind != Param::kNetStepLatency) without.push_back(p);
  const bool step_param = without.size() != params.size();
  const std::vector<Param> with_step = params;
  Solved best = solve(without);
  if (step_param) {
    Solved s = solve(with_step);
    s.iterations += best.iterations;
    if (s.cost < best.cost) best = std::move(s);
    else best.iterations = s.iterations;
  }
  params = best.params;
  const Eigen::VectorXd th = best.th;
  const int iterations = best.iterations;

  LinkFit out;
  out.fitted_rows = fitted_rows;
  out.parameters = static_cast<int>(params.size());
  out.iterations = iterations;
  const topology::TopologyAdjust fitted = adjust_of(th);
  for (const auto& l : fitted.links) {
    LinkClassCalibration c;
    c.link_class = l.link_class;
    c.bandwidth_scale = l.bandwidth_scale;
    c.bandwidth_fitted = std::any_of(params.begin(), params.end(), [&](const Param& p) {
      return p.kind == Param::kClassBandwidth && p.cls == l.link_class;
    });
    if (l.latency) c.latency_s = l.latency->value();
    for (size_t k = 0; k < nl; ++k)
      if (!logs[k].held_out && (bw_cls[k] == l.link_class || lat_cls[k] == l.link_class))
        for (size_t i = 0; i < sizes[k].size(); ++i) c.points += !held[k][i];
    out.classes.push_back(c);
  }
  if (std::any_of(params.begin(), params.end(), [](const Param& p) { return p.kind == Param::kNetStepLatency; }))
    out.net_step_latency_s = fitted.net_step_latency.value();
  for (int tier = 0; tier < 2; ++tier)
    for (int proto = 0; proto < 3; ++proto) {
      const bool any = std::any_of(params.begin(), params.end(), [&](const Param& p) {
        return (p.kind == Param::kProtoLatency || p.kind == Param::kProtoBandwidth) && p.tier == tier && p.proto == proto;
      });
      if (any)
        out.protocols.push_back({kTierName[tier], kProtoName[proto], fitted.protocols[tier][proto].latency,
                                 fitted.protocols[tier][proto].bandwidth});
    }
  // Check every log with the calibration.
  const auto after = predict(&fitted, true, &plans_after, nullptr);
  std::map<std::string, std::vector<const PointCheck*>> by_class;
  for (size_t k = 0; k < nl; ++k) {
    const auto& m = logs[k];
    LogCheck ch;
    ch.file = m.log.file;
    ch.link_class = bw_cls[k];
    ch.latency_class = lat_cls[k];
    ch.op = m.op;
    ch.ranks = m.log.ranks;
    ch.nodes = m.log.nodes;
    ch.held_out_log = m.held_out;
    for (size_t i = 0; i < sizes[k].size(); ++i)
      ch.points.push_back({sizes[k][i], measured[k][i], before[k][i], after[k][i], held[k][i], plans_before[k][i], plans_after[k][i]});
    out.checks.push_back(std::move(ch));
  }
  std::vector<const PointCheck*> all, all_band[kNumBands];
  for (auto& ch : out.checks) {
    std::vector<const PointCheck*> h, hb[kNumBands];
    for (const auto& p : ch.points) {
      if (!p.held_out) continue;
      h.push_back(&p), all.push_back(&p), by_class[ch.link_class].push_back(&p);
      for (int b = 0; b < kNumBands; ++b)
        if (p.bytes >= kBands[b].lo && p.bytes <= kBands[b].hi) hb[b].push_back(&p), all_band[b].push_back(&p);
    }
    ch.held = summarize(h);
    for (int b = 0; b < kNumBands; ++b) ch.bands[b] = summarize(hb[b]);
    ch.held_median_before = ch.held.median_before, ch.held_median_after = ch.held.median_after;
    ch.held_max_before = ch.held.max_before, ch.held_max_after = ch.held.max_after;
  }
  out.held = summarize(all);
  for (int b = 0; b < kNumBands; ++b) out.bands[b] = summarize(all_band[b]);
  for (auto& c : out.classes) {
    const auto e = summarize(by_class[c.link_class]);
    if (e.n == 0) continue;
    c.heldout_median_error = e.median_after;
    c.heldout_max_error = e.max_after;
  }
  return out;
}

}  // namespace hs::calib
