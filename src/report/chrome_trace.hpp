// Timeline output in the Chrome trace-event format (JSON), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per strategy, one thread per GPU stream, one complete ("X")
// event per task, timestamps in microseconds from the iteration's start.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "strategy/timeline_sink.hpp"

namespace hs::report {

class ChromeTrace final : public strategy::TimelineSink {
 public:
  // Subsequent events belong to this strategy (a trace "process").
  void begin_strategy(const std::string& name);
  void event(const strategy::TimelineEvent& e) override;
  std::string json() const;

 private:
  std::string events_;
  int pid_ = -1;
  std::set<std::pair<int, int>> named_threads_;
};

}  // namespace hs::report
