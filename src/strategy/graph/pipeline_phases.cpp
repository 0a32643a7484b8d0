#include "strategy/graph/pipeline_phases.hpp"

#include <algorithm>
#include <limits>

#include "strategy/graph/layout_iteration.hpp"

namespace hs::strategy {

PipelinePhases pipeline_phases(std::span<const PipelineOp> ops, std::span<const OpTaskSpan> tasks, double makespan) {
  const int n = static_cast<int>(ops.size());
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<double> first(n, kNone), last(n, -kNone);
  for (const OpTaskSpan& t : tasks) {
    if (t.op < 0 || t.op >= n) continue;
    first[t.op] = std::min(first[t.op], t.start);
    last[t.op] = std::max(last[t.op], t.end);
  }
  PipelinePhases ph;
  double covered = 0, pipeline_end = 0;
  for (int i = 0; i < n; ++i) {
    double a = first[i], b = last[i];
    double* phase = ops[i].weight ? &ph.weight : ops[i].forward ? &ph.forward : &ph.backward;
    if (ops[i].paired && i + 1 < n) {  // a forward and the backward after it: one span
      a = std::min(a, first[i + 1]);
      b = std::max(b, last[i + 1]);
      phase = &ph.paired;
      ++i;
    }
    if (a == kNone) continue;
    *phase += b - a;
    covered += b - a;
    pipeline_end = std::max(pipeline_end, b);
  }
  ph.idle = std::max(0.0, pipeline_end - covered);
  ph.after = std::max(0.0, makespan - pipeline_end);
  return ph;
}

}  // namespace hs::strategy
