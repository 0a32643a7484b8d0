#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/simulation.hpp"
#include "util/rng.hpp"
#include "support/approx.hpp"

using namespace hs;
using namespace hs::engine;

TEST_CASE("a chain on one resource runs back to back") {
  // Three tasks of 1, 2, 3 s on one stream: they end at 1, 3, 6.
  TaskGraph g;
  auto r = g.add_resource("s");
  auto a = g.add_task(r, Seconds(1), 0);
  auto b = g.add_task(r, Seconds(2), 1);
  auto c = g.add_task(r, Seconds(3), 2);
  Simulation sim(g);
  sim.run();
  CHECK(sim.end_time(a) == 1.0);
  CHECK(sim.end_time(b) == 3.0);
  CHECK(sim.end_time(c) == 6.0);
  CHECK(sim.makespan() == 6.0);
  CHECK(sim.critical_path() == std::vector<TaskId>{a, b, c});
}

TEST_CASE("independent resources run concurrently; a dependency joins them") {
  // x (4 s) on r1 and y (1 s) on r2 run at once; z depends on both: starts at max(4, 1) = 4.
  TaskGraph g;
  auto r1 = g.add_resource("r1"), r2 = g.add_resource("r2");
  auto x = g.add_task(r1, Seconds(4), 0);
  auto y = g.add_task(r2, Seconds(1), 1);
  auto z = g.add_task(r2, Seconds(2), 2);
  g.add_dependency(x, z);
  Simulation sim(g);
  sim.run();
  CHECK(sim.start_time(y) == 0.0);
  CHECK(sim.start_time(z) == 4.0);
  CHECK(sim.makespan() == 6.0);
  CHECK(sim.critical_predecessor(z) == x);
}

TEST_CASE("a task spanning several resources waits for all of them (collective straggling)") {
  // GPU0 computes 1 s, GPU1 computes 5 s; the collective on both comm streams, depending on both
  // computes, starts at 5 = the straggler's finish, and lasts 2 s: makespan 7.
  TaskGraph g;
  auto c0 = g.add_resource("gpu0.compute"), c1 = g.add_resource("gpu1.compute");
  auto m0 = g.add_resource("gpu0.comm"), m1 = g.add_resource("gpu1.comm");
  auto a = g.add_task(c0, Seconds(1), 0);
  auto b = g.add_task(c1, Seconds(5), 1);
  std::vector<ResourceId> both{m0, m1};
  auto coll = g.add_task(both, Seconds(2), 2);
  g.add_dependency(a, coll);
  g.add_dependency(b, coll);
  Simulation sim(g);
  sim.run();
  CHECK(sim.start_time(coll) == 5.0);
  CHECK(sim.makespan() == 7.0);
  CHECK(sim.critical_path() == std::vector<TaskId>{b, coll});
}

TEST_CASE("equal-time events resolve in task-id order, identically on every run") {
  // Many zero-gap tasks finishing at the same instant: the observed order must be by id, twice.
  struct Rec : Observer {
    std::vector<TaskId> ends;
    void on_task_end(TaskId t, double) override { ends.push_back(t); }
  };
  TaskGraph g;
  std::vector<TaskId> ids;
  for (int i = 0; i < 50; ++i) ids.push_back(g.add_task(g.add_resource("r"), Seconds(1), 0));
  std::vector<TaskId> first;
  for (int rep = 0; rep < 2; ++rep) {
    Simulation sim(g);
    Rec rec;
    sim.add_observer(&rec);
    sim.run();
    CHECK(rec.ends == ids);
    if (rep == 0) first = rec.ends;
    else CHECK(rec.ends == first);
  }
}

TEST_CASE("inconsistent issue order across resources is reported, not hung") {
  // a on (r1, r2) and b on (r2, r1) in opposite orders with a dependency b -> a: deadlock.
  TaskGraph g;
  auto r1 = g.add_resource("r1"), r2 = g.add_resource("r2");
  std::vector<ResourceId> ab{r1}, ba{r2};
  auto a = g.add_task(ab, Seconds(1), 0);
  auto b = g.add_task(ba, Seconds(1), 1);
  g.add_dependency(b, a);
  g.add_dependency(a, b);
  Simulation sim(g);
  CHECK_THROWS_AS(sim.run(), std::logic_error);
}

namespace {
// One compute task (2 s) and one communication task (1 s) on device 0, both starting at 0.
struct Overlap {
  TaskGraph g;
  TaskId compute, comm;
  Overlap(double compute_s = 2, double comm_s = 1) {
    auto c = g.add_resource("gpu0.compute", 0), m = g.add_resource("gpu0.comm", 0);
    compute = g.add_task(c, Seconds(compute_s), 0);
    comm = g.add_task(m, Seconds(comm_s), 1);
    g.set_activity(compute, Activity::kCompute);
    g.set_activity(comm, Activity::kCommunication);
  }
};
}  // namespace

TEST_CASE("interference: compute beside communication progresses at 1 / (1 + s)") {
  // compute_slowdown 1: while the 1 s communication runs, the 2 s compute advances at half speed
  // (0.5 s of work by t = 1), then at full speed: 1.5 s left -> ends at 2.5 s. The communication
  // is not slowed (communication_slowdown 0): ends at 1 s.
  Overlap o;
  Simulation sim(o.g);
  sim.set_interference({1.0, 0.0});
  sim.run();
  CHECK(sim.end_time(o.comm) == hs::test::approx(1.0));
  CHECK(sim.end_time(o.compute) == hs::test::approx(2.5));
}

TEST_CASE("a Simulation kept for several runs gives each run a fresh one's times") {
  // The layout graph keeps its Simulation between iterations (buffers reused, models registered
  // anew with clear_models): run 1 with compute slowed 1.0 beside communication (compute 2.5 s, as
  // above), run 2 without interference (compute 2 s, communication 1 s), run 3 as run 1 again.
  Overlap o;
  Simulation kept(o.g);
  for (const double slow : {1.0, 0.0, 1.0}) {
    kept.clear_models();
    kept.set_interference({slow, 0.0});
    kept.run();
    Simulation fresh(o.g);
    fresh.set_interference({slow, 0.0});
    fresh.run();
    CHECK(kept.end_time(o.compute) == fresh.end_time(o.compute));
    CHECK(kept.end_time(o.comm) == fresh.end_time(o.comm));
    CHECK(kept.end_time(o.compute) == hs::test::approx(slow > 0 ? 2.5 : 2.0));
    CHECK(kept.critical_path() == fresh.critical_path());
  }
}

TEST_CASE("interference: communication beside compute is slowed the same way") {
  // communication_slowdown 1: the 1 s communication runs at half speed while the 2 s compute is
  // active, so it needs 2 s and ends at 2 s; the compute is not slowed: 2 s.
  Overlap o;
  Simulation sim(o.g);
  sim.set_interference({0.0, 1.0});
  sim.run();
  CHECK(sim.end_time(o.comm) == hs::test::approx(2.0));
  CHECK(sim.end_time(o.compute) == hs::test::approx(2.0));
}

TEST_CASE("interference by kind: compute beside NVLink-only traffic vs beside network traffic") {
  // Cells: GEMM beside nvlink 0.25, beside network 1.0; network communication beside compute 0.5,
  // nvlink 0. A 2 s GEMM beside a 1 s communication, both from t = 0:
  //   nvlink:  GEMM at 1 / 1.25 until t = 1 (0.8 s of work), 1.2 s left at full speed -> ends 2.2;
  //            the communication is not slowed -> ends 1.0.
  //   network: the communication runs at 1 / 1.5 while the GEMM is active: its 1 s of work takes
  //            1.5 s -> ends 1.5; the GEMM runs at 1 / 2 until then (0.75 s of work), 1.25 s left
  //            -> ends 2.75.
  Interference i;
  i.compute[static_cast<int>(KernelClass::kGemm)] = {0.25, 1.0};
  i.communication = {0.0, 0.5};
  for (Traffic k : {Traffic::kIntraNode, Traffic::kNetwork}) {
    CAPTURE(static_cast<int>(k));
    Overlap o;
    o.g.set_kernel_class(o.compute, KernelClass::kGemm);
    o.g.set_traffic(o.comm, k);
    Simulation sim(o.g);
    sim.set_interference(i);
    sim.run();
    const bool net = k == Traffic::kNetwork;
    CHECK(sim.end_time(o.comm) == hs::test::approx(net ? 1.5 : 1.0));
    CHECK(sim.end_time(o.compute) == hs::test::approx(net ? 2.75 : 2.2));
  }
}

TEST_CASE("interference by kind: the kernel class picks the cell") {
  // Beside the same 1 s of nvlink traffic: attention 0.5 -> 2 s task does 1 / 1.5 s by t = 1 and
  // ends at 1 + (2 - 2/3) = 2.333..; memory-bound 3.0 -> 0.25 s by t = 1, ends at 2.75; a GEMM
  // (cell 0) is not slowed: 2.0.
  Interference i;
  i.compute[static_cast<int>(KernelClass::kAttention)] = {0.5, 0.5};
  i.compute[static_cast<int>(KernelClass::kMemoryBound)] = {3.0, 3.0};
  const std::pair<KernelClass, double> cases[] = {
      {KernelClass::kAttention, 1 + (2 - 1 / 1.5)}, {KernelClass::kMemoryBound, 2.75}, {KernelClass::kGemm, 2.0}};
  for (const auto& [c, end] : cases) {
    CAPTURE(static_cast<int>(c));
    Overlap o;
    o.g.set_kernel_class(o.compute, c);
    Simulation sim(o.g);
    sim.set_interference(i);
    sim.run();
    CHECK(sim.end_time(o.compute) == hs::test::approx(end));
    CHECK(sim.end_time(o.comm) == hs::test::approx(1.0));
  }
}

TEST_CASE("interference by kind: both traffic kinds beside one kernel slow it by the larger cell, not the sum") {
  // Memory-bound 3 s task; nvlink cell 1.0, network 0.25. nvlink traffic 1 s and network traffic
  // 2 s on the same device from t = 0. [0, 1): both -> max(1.0, 0.25) = 1.0, speed 1/2: 0.5 s of
  // work; [1, 2): network only, speed 1/1.25: 0.8 s; then 1.7 s at full speed -> ends 3.7.
  TaskGraph g;
  auto c = g.add_resource("gpu0.compute", 0), v = g.add_resource("gpu0.nvlink", 0), n = g.add_resource("gpu0.net", 0);
  auto k = g.add_task(c, Seconds(3), 0), a = g.add_task(v, Seconds(1), 1), b = g.add_task(n, Seconds(2), 2);
  g.set_activity(k, Activity::kCompute);
  g.set_kernel_class(k, KernelClass::kMemoryBound);
  g.set_activity(a, Activity::kCommunication);
  g.set_activity(b, Activity::kCommunication);
  g.set_traffic(b, Traffic::kNetwork);
  Interference i;
  i.compute[static_cast<int>(KernelClass::kMemoryBound)] = {1.0, 0.25};
  Simulation sim(g);
  sim.set_interference(i);
  sim.run();
  CHECK(sim.end_time(a) == hs::test::approx(1.0));
  CHECK(sim.end_time(b) == hs::test::approx(2.0));
  CHECK(sim.end_time(k) == hs::test::approx(3.7));
}

TEST_CASE("interference: another device's communication does not slow this device's compute") {
  TaskGraph g;
  auto c = g.add_resource("gpu0.compute", 0), m = g.add_resource("gpu1.comm", 1);
  auto k = g.add_task(c, Seconds(2), 0);
  auto x = g.add_task(m, Seconds(1), 1);
  g.set_activity(k, Activity::kCompute);
  g.set_activity(x, Activity::kCommunication);
  Simulation sim(g);
  sim.set_interference({1.0, 1.0});
  sim.run();
  CHECK(sim.end_time(k) == 2.0);
  CHECK(sim.end_time(x) == 1.0);
}

TEST_CASE("interference: overlapped compute is never faster and at most (1 + s) slower (property)") {
  // Random chains of compute on two devices beside random communication tasks spanning both: every
  // compute task's duration lies in [own, own x (1 + s)], and with s = 0 the schedule is unchanged.
  hs::Rng rng(11);
  for (int rep = 0; rep < 20; ++rep) {
    TaskGraph g;
    std::vector<ResourceId> comp{g.add_resource("c0", 0), g.add_resource("c1", 1)};
    std::vector<ResourceId> comm{g.add_resource("m0", 0), g.add_resource("m1", 1)};
    std::vector<TaskId> computes;
    for (int i = 0; i < 6; ++i)
      for (int d = 0; d < 2; ++d) {
        auto t = g.add_task(comp[d], Seconds(0.1 + rng.uniform()), 0);
        g.set_activity(t, Activity::kCompute);
        computes.push_back(t);
      }
    for (int i = 0; i < 4; ++i) {
      auto t = g.add_task(comm, Seconds(0.1 + 2 * rng.uniform()), 1);
      g.set_activity(t, Activity::kCommunication);
      if (i > 0) g.add_dependency(computes[static_cast<size_t>(rng.below(computes.size()))], t);
    }
    const double s = 0.25;
    Simulation slow(g), plain(g), zero(g);
    slow.set_interference({s, 0.0});
    zero.set_interference({0.0, 0.0});
    slow.run();
    plain.run();
    zero.run();
    CHECK(zero.makespan() == plain.makespan());
    CHECK(slow.makespan() >= plain.makespan());
    for (TaskId t : computes) {
      const double d = slow.end_time(t) - slow.start_time(t), own = g.duration(t).value();
      CHECK(d >= own * (1 - 1e-12));
      CHECK(d <= own * (1 + s) * (1 + 1e-12));
    }
  }
}

TEST_CASE("FixedDurationModel: finishes and re-projections equal a brute-force model (property)") {
  // The model's indexed heap against the definition: every running task i has work w_i left at
  // time s_i at speed v_i, so it ends at s_i + w_i / v_i; the next completion is the least end,
  // ties broken by start order, and set_speed(t, v, now) leaves w_i - (now - s_i) v_i at `now`.
  // Random starts, speed changes (including on finished tasks, which change nothing) and advances
  // over 200 tasks, 20 seeds: the same finish lists in the same order, and equal next_completion
  // (== on doubles: the same arithmetic).
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    TaskGraph g;
    const auto r = g.add_resource("s");
    const int n = 200;
    for (int t = 0; t < n; ++t) g.add_task(r, Seconds(0.1 + rng.uniform()), static_cast<uint32_t>(t));
    FixedDurationModel m;
    m.reset(g);
    struct Ref { double left = 0, since = 0, speed = 1; uint64_t seq = 0; bool running = false; };
    std::vector<Ref> ref(n);
    uint64_t seq = 0;
    const auto ref_end = [&](int t) { return ref[t].since + ref[t].left / ref[t].speed; };
    const auto ref_next = [&] {
      int best = -1;
      for (int t = 0; t < n; ++t)
        if (ref[t].running && (best < 0 || ref_end(t) < ref_end(best) ||
                               (ref_end(t) == ref_end(best) && ref[t].seq < ref[best].seq)))
          best = t;
      return best;
    };
    double now = 0;
    int next_start = 0;
    std::vector<TaskId> got;
    while (true) {
      const double u = rng.uniform();
      if (u < 0.4 && next_start < n) {  // start a task
        const int t = next_start++;
        m.start(t, now);
        ref[t] = {g.duration(t).value(), now, 1, seq++, true};
      } else if (u < 0.7 && next_start > 0) {  // slow or restore one (maybe finished)
        const int t = static_cast<int>(rng.uniform() * next_start);
        const double v = rng.uniform() < 0.5 ? 1.0 : 0.5 + 0.5 * rng.uniform();
        CHECK(m.set_speed(t, v, now));
        if (ref[t].running && v != ref[t].speed) {
          ref[t].left = std::max(0.0, ref[t].left - (now - ref[t].since) * ref[t].speed);
          ref[t].since = now, ref[t].speed = v;
        }
      } else {  // advance to the next completion
        const int b = ref_next();
        if (b < 0 && next_start == n) break;
        if (b < 0) continue;
        const double at = ref_end(b);
        REQUIRE(m.next_completion() == at);
        now = at;
        std::vector<TaskId> want;
        for (int t; (t = ref_next()) >= 0 && ref_end(t) <= now;) want.push_back(t), ref[t].running = false;
        got.clear();
        m.advance_to(now, got);
        CHECK(got == want);
      }
    }
    CHECK(m.next_completion() == std::numeric_limits<double>::infinity());
  }
}
