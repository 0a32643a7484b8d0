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

// Least-squares slope of y against x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  const double d = n * sxx - sx * sx;
  return d > 0 ? (n * sxy - sx * sy) / d : 0;
}

// The lower of the out-of-place and in-place times (NcclTestsRow::best_time_us).
double measured_seconds(const NcclTestsRow& r) { return r.best_time_us() * 1e-6; }

struct Model {
  const std::string& text;
  const std::string& source;
  std::vector<double> predict(const topology::TopologyAdjust& adj, collective::NcclOp op, int ranks, int nodes,
                              const std::string& file, const std::vector<double>& sizes, std::string* bottleneck_class) {
    topology::Topology t = topology::load_topology(text, source, &adj);
    collective::AnalyticNetwork net(t);
    const auto group = nccl_group(t, ranks, nodes, file);
    std::vector<double> out;
    for (double s : sizes) {
      auto r = collective::nccl_op_time(net, op, group, s);
      out.push_back(r.seconds);
      if (bottleneck_class && r.bottleneck >= 0) *bottleneck_class = t.link(r.bottleneck).link_class;
    }
    return out;
  }
};

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

LinkFit fit_links(const std::string& topo_text, const std::string& topo_source, const std::vector<NcclMeasurement>& logs) {
  Model model{topo_text, topo_source};
  const topology::TopologyAdjust none;
  const topology::Topology base = topology::load_topology(topo_text, topo_source);
  struct PerLog {
    std::string cls;
    double scale = 1, latency = 0;
    bool has_latency = false;
    int points = 0;
  };
  std::vector<PerLog> per(logs.size());
  std::vector<std::vector<double>> sizes(logs.size()), measured(logs.size()), before(logs.size());
  for (size_t k = 0; k < logs.size(); ++k) {
    const auto& m = logs[k];
    // 0-byte rows (alltoall below ranks x 16 B) time nothing: left out.
    std::vector<NcclTestsRow> rows;
    for (const auto& r : m.log.rows)
      if (r.bytes > 0 && r.best_time_us() > 0) rows.push_back(r);
    for (const auto& r : rows) sizes[k].push_back(r.bytes), measured[k].push_back(measured_seconds(r));
    std::vector<double> fx, ft;  // fit rows
    for (size_t i = 0; i < rows.size(); ++i)
      if (i % 4 != 3) fx.push_back(sizes[k][i]), ft.push_back(measured[k][i]);
    if (fx.size() < 4)
      throw InputError({m.log.file, 0, 0}, "", fmt::format("{} rows: too few to fit and check a link class (need at least 6 sizes, "
                                                           "e.g. nccl-tests -b 8 -e 128M -f 2)", rows.size()));
    before[k] = model.predict(none, m.op, m.log.ranks, m.log.nodes, m.log.file, sizes[k], &per[k].cls);
    if (per[k].cls.empty()) throw InputError({m.log.file, 0, 0}, "", "the operation crosses no link on this topology");
    const double tmin = *std::min_element(ft.begin(), ft.end());
    std::vector<double> bx, bt, bp, lx, lt;
    std::vector<double> fpred = model.predict(none, m.op, m.log.ranks, m.log.nodes, m.log.file, fx, nullptr);
    for (size_t i = 0; i < fx.size(); ++i) {
      if (ft[i] >= 3 * tmin) bx.push_back(fx[i]), bt.push_back(ft[i]), bp.push_back(fpred[i]);
      if (ft[i] <= 1.5 * tmin) lx.push_back(fx[i]), lt.push_back(ft[i]);
    }
    if (bx.size() < 2)
      throw InputError({m.log.file, 0, 0}, "", "fewer than 2 bandwidth-bound rows (time >= 3x the smallest): extend the "
                                               "sweep to larger sizes (-e 1G or more)");
    const double bm = slope(bx, bt), bpred = slope(bx, bp);
    if (!(bm > 0) || !(bpred > 0)) throw InputError({m.log.file, 0, 0}, "", "time does not grow with size in the bandwidth-bound rows");
    per[k].scale = bpred / bm;
    per[k].points = static_cast<int>(fx.size());
    // Latency: the class's per-link latency that makes the model's time at the latency-bound sizes
    // match the measured intercept (measured time minus the fitted bandwidth term).
    std::vector<double> icept;
    for (size_t i = 0; i < lx.size(); ++i) icept.push_back(lt[i] - bm * lx[i]);
    const double am = median(icept);
    topology::TopologyAdjust a1;
    const double l1 = class_latency(base, per[k].cls);
    a1.links.push_back({per[k].cls, per[k].scale, Seconds(l1)});
    topology::TopologyAdjust a2 = a1;
    a2.links[0].latency = Seconds(l1 + 1e-6);
    const double x0 = lx.front();
    const double p1 = model.predict(a1, m.op, m.log.ranks, m.log.nodes, m.log.file, {x0}, nullptr)[0];
    const double p2 = model.predict(a2, m.op, m.log.ranks, m.log.nodes, m.log.file, {x0}, nullptr)[0];
    const double target = am + bm * x0;  // measured line at x0
    if (p2 - p1 > 0) {
      per[k].latency = std::max(0.0, l1 + (target - p1) / (p2 - p1) * 1e-6);
      per[k].has_latency = true;
    }
  }
  // Combine per class.
  LinkFit out;
  std::map<std::string, std::vector<size_t>> by_class;
  for (size_t k = 0; k < logs.size(); ++k) by_class[per[k].cls].push_back(k);
  for (const auto& [cls, ks] : by_class) {
    LinkClassCalibration c;
    c.link_class = cls;
    double w = 0, ls = 0, lat = 0, wl = 0;
    for (size_t k : ks) {
      w += per[k].points, ls += per[k].points * std::log(per[k].scale);
      if (per[k].has_latency) wl += per[k].points, lat += per[k].points * per[k].latency;
      c.points += per[k].points;
    }
    c.bandwidth_scale = std::exp(ls / w);
    if (wl > 0) c.latency_s = lat / wl;
    out.classes.push_back(c);
  }
  // Joint refinement: every class's bandwidth scale and latency at once, Levenberg-Marquardt on the
  // log-ratio of predicted to measured time over every fitted row of every log (an operation whose
  // time several classes shape, e.g. an all-reduce that is NVLink- and NIC-bound at once, then
  // informs each in proportion). Parameters: ln(scale) and latency in microseconds per class.
  const size_t nc = out.classes.size();
  auto adjust_of = [&](const Eigen::VectorXd& th) {
    topology::TopologyAdjust a;
    for (size_t c = 0; c < nc; ++c)
      a.links.push_back({out.classes[c].link_class, std::exp(th[2 * c]), Seconds(std::max(0.0, th[2 * c + 1]) * 1e-6)});
    return a;
  };
  auto residuals = [&](const Eigen::VectorXd& th) {
    const auto adj = adjust_of(th);
    std::vector<double> r;
    for (size_t k = 0; k < logs.size(); ++k) {
      std::vector<double> fx, ft;
      for (size_t i = 0; i < sizes[k].size(); ++i)
        if (i % 4 != 3) fx.push_back(sizes[k][i]), ft.push_back(measured[k][i]);
      const auto p = model.predict(adj, logs[k].op, logs[k].log.ranks, logs[k].log.nodes, logs[k].log.file, fx, nullptr);
      for (size_t i = 0; i < fx.size(); ++i) r.push_back(std::log(p[i] / ft[i]));
    }
    return Eigen::Map<Eigen::VectorXd>(r.data(), static_cast<Eigen::Index>(r.size())).eval();
  };
  Eigen::VectorXd th(2 * nc);
  for (size_t c = 0; c < nc; ++c) {
    th[2 * c] = std::log(out.classes[c].bandwidth_scale);
    th[2 * c + 1] = out.classes[c].latency_s.value_or(class_latency(base, out.classes[c].link_class)) * 1e6;
  }
  Eigen::VectorXd r = residuals(th);
  double cost = r.squaredNorm(), lambda = 1e-3;
  for (int it = 0; it < 40; ++it) {
    Eigen::MatrixXd J(r.size(), th.size());
    for (Eigen::Index j = 0; j < th.size(); ++j) {
      Eigen::VectorXd t2 = th;
      const double h = j % 2 == 0 ? 1e-4 : 1e-3;
      t2[j] += h;
      J.col(j) = (residuals(t2) - r) / h;
    }
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 8 && !improved; ++tries) {
      Eigen::MatrixXd D = A;
      for (Eigen::Index j = 0; j < D.rows(); ++j) D(j, j) += lambda * std::max(A(j, j), 1e-12);
      Eigen::VectorXd next = th - D.ldlt().solve(g);
      for (size_t c = 0; c < nc; ++c) next[2 * c + 1] = std::max(0.0, next[2 * c + 1]);
      const Eigen::VectorXd rn = residuals(next);
      if (rn.squaredNorm() < cost) {
        const double gain = cost - rn.squaredNorm();
        th = next, r = rn;
        improved = true;
        lambda = std::max(lambda / 3, 1e-9);
        if (gain < 1e-12 * std::max(cost, 1e-30)) it = 1 << 20;  // converged
        cost = r.squaredNorm();
      } else {
        lambda *= 5;
      }
    }
    if (!improved) break;
  }
  for (size_t c = 0; c < nc; ++c) {
    out.classes[c].bandwidth_scale = std::exp(th[2 * c]);
    out.classes[c].latency_s = std::max(0.0, th[2 * c + 1]) * 1e-6;
  }
  const topology::TopologyAdjust fitted = adjust_of(th);
  // Check every log with the calibration.
  std::map<std::string, std::vector<double>> held_err;
  for (size_t k = 0; k < logs.size(); ++k) {
    const auto& m = logs[k];
    const auto after = model.predict(fitted, m.op, m.log.ranks, m.log.nodes, m.log.file, sizes[k], nullptr);
    LogCheck ch;
    ch.file = m.log.file;
    ch.link_class = per[k].cls;
    ch.op = m.op;
    ch.ranks = m.log.ranks;
    ch.nodes = m.log.nodes;
    std::vector<double> eb, ea;
    for (size_t i = 0; i < sizes[k].size(); ++i) {
      PointCheck p{sizes[k][i], measured[k][i], before[k][i], after[i], i % 4 == 3};
      ch.points.push_back(p);
      if (p.held_out) {
        eb.push_back(std::abs(p.before_s - p.measured_s) / p.measured_s);
        ea.push_back(std::abs(p.after_s - p.measured_s) / p.measured_s);
      }
    }
    ch.held_median_before = median(eb), ch.held_median_after = median(ea);
    ch.held_max_before = eb.empty() ? 0 : *std::max_element(eb.begin(), eb.end());
    ch.held_max_after = ea.empty() ? 0 : *std::max_element(ea.begin(), ea.end());
    for (double e : ea) held_err[ch.link_class].push_back(e);
    out.checks.push_back(std::move(ch));
  }
  for (auto& c : out.classes) {
    const auto& e = held_err[c.link_class];
    if (e.empty()) continue;
    c.heldout_median_error = median(e);
    c.heldout_max_error = *std::max_element(e.begin(), e.end());
  }
  return out;
}

}  // namespace hs::calib
