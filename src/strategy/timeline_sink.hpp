// Where a strategy reports the tasks of a simulated iteration for a timeline (Chrome trace-event
// JSON, opened in Perfetto or chrome://tracing). One event per task per GPU stream it occupied.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hs::strategy {

struct TimelineEvent {
  std::string name;      // e.g. "expert_fwd L3", "dispatch L3", "spAG L3"
  std::string category;  // breakdown component name
  int gpu = 0;
  std::string stream;    // compute | a2a | dp | sparse (under a layout also pp_fwd | pp_bwd)
  double start = 0, end = 0;  // seconds from the iteration's start
  std::vector<std::pair<std::string, double>> args;  // shown with the event, e.g. {"bytes", 1e6}
};

class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual void event(const TimelineEvent& e) = 0;
};

}  // namespace hs::strategy
