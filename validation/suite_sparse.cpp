// A plan from `hecate-sim plan` (transport/plan_file.hpp) on as many ranks as it has GPUs.
//   1. Correctness: transport::check_plan_on_rank runs every layer's SparseAllGather and
//      SparseReduceScatter through plan_executor over NcclTransport and checks every copy holds its
//      owner's bytes and every owner the sum of its holders' gradients, bit for bit. Any mismatch
//      on any rank: nothing is timed.
//   2. Timing, per layer: the executor's rounds (transport::spag_rounds / sprs_rounds: the same
//      schedule) on device-resident chunk buffers, one NCCL group per round; a spRS round's arrivals
//      land in buffers of their own and are added after the round (add_f32), as the executor does.
#include <cstdio>
#include <fmt/format.h>

#include "check.hpp"
#include "kernels.hpp"
#include "measure/measured_json.hpp"
#include "nccl_transport.hpp"
#include "suites.hpp"
#include "transport/plan_check.hpp"
#include "transport/plan_executor.hpp"

namespace hs::validate {

namespace {

using transport::PlanLayer;

// One layer's device buffers on this rank: [chunk] -> its elements (empty when not held), and one
// arrival buffer per spRS transfer into this rank.
struct LayerBuffers {
  std::vector<DeviceBuffer> chunk;
  std::vector<DeviceBuffer> arrival;  // [sprs transfer] (empty unless dst == me)
  std::size_t elems = 0;
};

LayerBuffers layer_buffers(const PlanLayer& l, int me, double scale, std::uint64_t seed, cudaStream_t s) {
  LayerBuffers b;
  b.elems = transport::chunk_elements(l.chunk_bytes, scale);
  b.chunk.resize(static_cast<std::size_t>(l.chunks()));
  for (int c = 0; c < l.chunks(); ++c) {
    if (!transport::holds(l, c, me)) continue;
    b.chunk[c] = DeviceBuffer(b.elems * sizeof(float));
    fill_pattern_f32(b.chunk[c].get<float>(), b.elems, seed, static_cast<std::uint64_t>(c), 0, s);
  }
  b.arrival.resize(l.sprs.size());
  for (std::size_t i = 0; i < l.sprs.size(); ++i)
    if (l.sprs[i].dst == me) b.arrival[i] = DeviceBuffer(b.elems * sizeof(float));
  return b;
}

void run_spag(const PlanLayer& l, const std::vector<std::vector<int>>& rounds, LayerBuffers& b, int me, ncclComm_t comm,
              cudaStream_t s) {
  for (const auto& round : rounds) {
    check(ncclGroupStart(), "ncclGroupStart");
    for (int i : round) {
      const auto& x = l.spag[i];
      if (x.src == me) check(ncclSend(b.chunk[x.chunk].get(), b.elems, ncclFloat, x.dst, comm, s), "ncclSend");
      if (x.dst == me) check(ncclRecv(b.chunk[x.chunk].get(), b.elems, ncclFloat, x.src, comm, s), "ncclRecv");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
  }
}

void run_sprs(const PlanLayer& l, const std::vector<std::vector<int>>& rounds, LayerBuffers& b, int me, ncclComm_t comm,
              cudaStream_t s) {
  for (const auto& round : rounds) {
    check(ncclGroupStart(), "ncclGroupStart");
    for (int i : round) {
      const auto& x = l.sprs[i];
      if (x.src == me) check(ncclSend(b.chunk[x.chunk].get(), b.elems, ncclFloat, x.dst, comm, s), "ncclSend");
      if (x.dst == me) check(ncclRecv(b.arrival[i].get(), b.elems, ncclFloat, x.src, comm, s), "ncclRecv");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
    for (int i : round)
      if (l.sprs[i].dst == me) add_f32(b.chunk[l.sprs[i].chunk].get<float>(), b.arrival[i].get<float>(), b.elems, s);
  }
}

}  // namespace

void run_sparse(Context& c, const measure::ValidateOptions& o, Report& r) {
  const transport::Plan plan = transport::read_plan(o.plan);  // InputError: exit 2
  if (plan.gpus != c.ranks())
    throw Fatal(fmt::format("{} is a plan of {} GPUs: launch it on {} ranks, not {}", o.plan, plan.gpus, plan.gpus, c.ranks()));
  const int me = c.rank();

  NcclTransport t(c.comm, me, c.ranks(), c.stream);
  const transport::RankCheck chk = transport::check_plan_on_rank(plan, t, o.scale);
  if (!chk.ok()) std::fprintf(stderr, "hecate-validate: %s\n", transport::format_check(chk).c_str());
  if (!c.boot.all_true(chk.ok())) throw Fatal(fmt::format("{}: the plan's results are wrong over NCCL; nothing timed", o.plan));
  if (me == 0)
    std::printf("\n# sparse: %s, %d layer(s) checked over NCCL (%s)\n%6s %12s %6s %6s %10s %10s %10s %10s\n", o.plan.c_str(),
                chk.layers, transport::format_check(chk).c_str(), "layer", "chunk bytes", "spAG", "spRS", "spAG us", "max us",
                "spRS us", "max us");

  std::vector<measure::SparseRow> rows;
  for (const PlanLayer& l : plan.layers) {
    const auto ag_rounds = transport::spag_rounds(l), rs_rounds = transport::sprs_rounds(l);
    LayerBuffers b = layer_buffers(l, me, o.scale, o.seed, c.stream);
    const auto ag = measure::summarize(
        time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int) { run_spag(l, ag_rounds, b, me, c.comm, c.stream); }));
    const auto rs = measure::summarize(
        time_iterations(c.boot, c.comm, c.stream, o.warmup, o.iters, [&](int) { run_sprs(l, rs_rounds, b, me, c.comm, c.stream); }));
    const std::size_t bytes = b.elems * sizeof(float);
    if (me == 0)
      std::printf("%6d %12zu %6zu %6zu %10.2f %10.2f %10.2f %10.2f\n", l.layer, bytes, l.spag.size(), l.sprs.size(), ag.median * 1e6,
                  ag.max * 1e6, rs.median * 1e6, rs.max * 1e6);
    rows.push_back({l.layer, bytes, l.spag.size(), ag_rounds.size(), l.sprs.size(), rs_rounds.size(), ag, rs});
  }
  r.add("sparse", measure::sparse_section(o.plan, plan.provenance.strategy, o.scale, c.ranks(), rows));
}

}  // namespace hs::validate
