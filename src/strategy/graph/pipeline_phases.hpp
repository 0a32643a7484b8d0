// Where one GPU's compute stream spends a pipelined iteration, by the kind of schedule op it runs,
// in the rows DeepSeek publishes for DualPipe ("Insights into DeepSeek-V3", arXiv 2505.09343,
// Table 4: 1F, 1B, 1W, 1F1B, bubble, optimizer), so a simulated step can be compared phase by phase.
//
// Each op of the stage's schedule (layout_iteration.hpp, PipelineOp) spans from its first compute
// task's start to its last one's end on the stream, waits for its own all-to-alls and TP collectives
// inside it included (as a profiler's per-chunk span shows them). Then:
//   forward   the spans of forwards not paired with a backward (1F: warm-up, 1F1B's forwards)
//   backward  of backwards not paired (whole or B of a split backward; 1B)
//   weight    of W ops (1W)
//   paired    of DualPipe's overlapped forward & backward pairs, the pair as one span from the
//             earlier start to the later end (1F1B in Table 4)
//   idle      the stream's time from 0 to the last op's end not inside any of these spans (bubble)
//   after     from the last op's end to the iteration's end: the gradient reductions, the optimizer
//             step and the parameter gathers left exposed (optimizer)
// so the six sum to the iteration's time.
#pragma once

#include <span>
#include <vector>

namespace hs::strategy {

struct PipelineOp;  // layout_iteration.hpp

struct PipelinePhases {
  double forward = 0, backward = 0, weight = 0, paired = 0, idle = 0, after = 0;  // seconds
  double total() const { return forward + backward + weight + paired + idle + after; }
};

// One compute-stream task: its simulated interval and the index of its op in the stage's schedule
// (-1: no op, e.g. the optimizer step).
struct OpTaskSpan {
  double start = 0, end = 0;
  int op = -1;
};

// The phases of a stage running `ops` whose compute-stream tasks are `tasks`, in an iteration of
// `makespan` seconds. An op paired with the backward that follows it (PipelineOp::paired) forms one
// span with it. Ops without tasks count nothing.
PipelinePhases pipeline_phases(std::span<const PipelineOp> ops, std::span<const OpTaskSpan> tasks, double makespan);

}  // namespace hs::strategy
