#include "report/chrome_trace.hpp"

#include <fmt/format.h>

namespace hs::report {

namespace {
int stream_index(const std::string& s) {
  if (s == "compute") return 0;
  if (s == "a2a") return 1;
  if (s == "sparse") return 2;
  if (s == "dp") return 3;
  if (s == "pp_fwd") return 4;
  if (s == "pp_bwd") return 5;
  return 6;
}
}  // namespace

void ChromeTrace::begin_strategy(const std::string& name) {
  ++pid_;
  if (!events_.empty()) events_ += ",\n";
  events_ += fmt::format(R"({{"ph": "M", "pid": {}, "name": "process_name", "args": {{"name": "{}"}}}})", pid_, name);
}

void ChromeTrace::event(const strategy::TimelineEvent& e) {
  const int tid = e.gpu * 8 + stream_index(e.stream);
  if (named_threads_.insert({pid_, tid}).second)
    events_ += fmt::format(",\n{{\"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"name\": \"thread_name\", \"args\": "
                         "{{\"name\": \"gpu{} {}\"}}}}",
                         pid_, tid, e.gpu, e.stream);
  events_ += fmt::format(",\n{{\"ph\": \"X\", \"pid\": {}, \"tid\": {}, \"name\": \"{}\", \"cat\": \"{}\", "
                         "\"ts\": {:.3f}, \"dur\": {:.3f}",
                         pid_, tid, e.name, e.category, e.start * 1e6, (e.end - e.start) * 1e6);
  if (!e.args.empty()) {
    events_ += ", \"args\": {";
    for (size_t i = 0; i < e.args.size(); ++i)
      events_ += fmt::format("{}\"{}\": {}", i ? ", " : "", e.args[i].first, e.args[i].second);
    events_ += "}";
  }
  events_ += "}";
}

std::string ChromeTrace::json() const {
  return "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n" + events_ + "\n]}\n";
}

}  // namespace hs::report
