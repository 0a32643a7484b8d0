#include "report/run_notes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace hs::report {

namespace {

// The numbers of a resolved setting's JSON (a number or a flat array of numbers); empty when the
// strategy has no such setting or it is not numeric.
std::vector<double> numbers(const strategy::RunSummary& s, const std::string& key) {
  std::vector<double> out;
  for (const auto& k : s.resolved) {
    if (k.key != key) continue;
    const char* p = k.json.c_str();
    while (*p != '\0') {
      if (*p == '-' || (*p >= '0' && *p <= '9')) {
        char* end = nullptr;
        out.push_back(std::strtod(p, &end));
        p = end;
      } else {
        ++p;
      }
    }
  }
  return out;
}

bool all_zero(const std::vector<double>& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

double largest(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// Why strategy `s` came out as another's: what its own resolved settings say it did not do.
std::string sameness_reason(const strategy::RunSummary& s, const strategy::RunSummary& other) {
  std::vector<std::string> why;
  const auto copies = numbers(s, "copies_per_layer"), other_copies = numbers(other, "copies_per_layer");
  if (all_zero(copies)) why.push_back("no copies made");
  else if (!copies.empty() && copies == other_copies) why.push_back("the same copies in every layer");
  const auto shadowed = numbers(s, "shadowed_max_per_layer");
  if (all_zero(shadowed) || (shadowed.empty() && all_zero(numbers(s, "shadowed_per_layer"))))
    why.push_back("no expert shadowed");
  if (all_zero(numbers(s, "replicas_per_layer"))) why.push_back("no expert replicated");
  if (all_zero(numbers(s, "placement_changes"))) why.push_back("placement never changed");
  if (why.empty()) return "identical iteration times and breakdowns";
  std::string o;
  for (size_t i = 0; i < why.size(); ++i) o += (i ? ", " : "") + why[i];
  return o;
}

// Why an FSSDP run came out slower than EP, from the two breakdowns along the critical path: the
// components where it spends more (largest first, at most three: which phase is exposed and by how
// much) against those where it spends less (at most two). A component counts from 1 us up.
std::string loss_to_ep(const strategy::RunSummary& fs, const strategy::RunSummary& ep) {
  std::vector<std::pair<double, int>> diff;
  for (int c = 0; c < strategy::kNumComponents; ++c) {
    const double d = fs.breakdown[c] - ep.breakdown[c];
    if (std::abs(d) >= 1e-6) diff.push_back({d, c});
  }
  std::stable_sort(diff.begin(), diff.end(), [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
  auto list = [&](bool more, size_t most) {
    std::string o;
    size_t k = 0;
    for (const auto& [d, c] : diff) {
      if ((d > 0) != more || k == most) continue;
      o += fmt::format("{}{} {:+.2f} ms", k++ ? ", " : "", strategy::component_name(static_cast<strategy::Component>(c)),
                       d * 1e3);
    }
    return o;
  };
  const std::string more = list(true, 3), less = list(false, 2);
  std::string o = fmt::format("note: {} is {:.2f}x {} ({:.2f} vs {:.2f} ms per iteration): on its critical path {}", fs.name,
                              ep.mean / fs.mean, ep.name, fs.mean * 1e3, ep.mean * 1e3,
                              more.empty() ? std::string("nothing grows") : more);
  o += less.empty() ? " and nothing shrinks" : fmt::format(" outweigh {}", less);
  return o;
}

bool is(const std::string& spec, const std::string& strategy) {
  return spec == strategy || spec.rfind(strategy + ":", 0) == 0;
}

}  // namespace

bool same_result(const strategy::RunSummary& a, const strategy::RunSummary& b) {
  const double tol = 1e-9 * std::max({std::abs(a.mean), std::abs(b.mean), 1e-30});
  auto near = [&](double x, double y) { return std::abs(x - y) <= tol; };
  if (!near(a.mean, b.mean) || !near(a.p50, b.p50) || !near(a.p99, b.p99)) return false;
  for (int c = 0; c < strategy::kNumComponents; ++c)
    if (!near(a.breakdown[c], b.breakdown[c])) return false;
  return true;
}

std::vector<std::string> run_notes(const RunReport& r, const NoteInputs& in) {
  std::vector<std::string> notes;
  const int gpus = r.topo ? r.topo->num_gpus() : 0;
  // FSSDP (and FSDP, its all-copies case) that made no copies: nothing was materialized.
  for (const auto& s : r.strategies) {
    const auto copies = numbers(s, "copies_per_layer");
    if (!all_zero(copies)) continue;
    const auto cap = numbers(s, "memory_capacity_m"), degree = numbers(s, "overlap_degree"),
               cut = numbers(s, "copies_cut_by_memory");
    const bool no_cap = all_zero(cap);
    if (!no_cap && largest(degree) <= 0) continue;
    std::string why = no_cap ? "its memory cap per layer (memory_capacity_m) is 0 (the memory budget leaves no room for copies)"
                      : largest(cut) > 0 ? fmt::format("the memory cap ({} per layer) cut every copy (copies_cut_by_memory)",
                                                        largest(cap))
                                         : "no expert was loaded enough to be worth a copy";
    if (largest(degree) > 0) why += fmt::format("; overlap_degree allowed up to {}", largest(degree));
    if (in.experts > 0 && gpus > 0 && in.experts < gpus)
      why += fmt::format(" ({} experts over {} GPUs)", in.experts, gpus);
    notes.push_back(fmt::format("note: {} made no copies (copies_per_layer 0 in every layer): {}", s.name, why));
  }
  // A strategy whose result equals an earlier one's.
  for (size_t j = 1; j < r.strategies.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (same_result(r.strategies[i], r.strategies[j])) {
        notes.push_back(fmt::format("note: {} equals {} on this input ({})", r.strategies[j].name, r.strategies[i].name,
                                    sameness_reason(r.strategies[j], r.strategies[i])));
        break;
      }
  // A strategy over memory in some iterations only: a run that would stop there (out of memory)
  // although its other iterations fit. FSSDP plans each iteration's copies beside the most routed
  // tokens seen before it (the first: a balanced estimate), so an iteration routing more than ever
  // before is where it overflows.
  for (const auto& s : r.strategies) {
    const int n = static_cast<int>(s.times.size());
    if (s.iterations_over_memory == 0 || s.iterations_over_memory == n) continue;
    std::string o = fmt::format("note: {} exceeds the GPU's memory in {} of {} iterations (the worst: iteration {}, {:.2f} GiB)",
                                s.name, s.iterations_over_memory, n, s.peak_memory_iteration + 1,
                                s.peak_memory.total() / (1024.0 * 1024 * 1024));
    if (is(s.name, "fssdp"))
      o += s.peak_memory_iteration == 0
               ? ": its copies there were planned on a balanced estimate, before any routing was seen"
               : ": its copies there were planned beside the most routed tokens of the iterations before it";
    notes.push_back(o);
  }
  // FSSDP slower than EP: which phases it exposes beyond EP's, against what it saves.
  const strategy::RunSummary* ep = nullptr;
  for (const auto& s : r.strategies)
    if (!ep && is(s.name, "ep")) ep = &s;
  if (ep)
    for (const auto& s : r.strategies)
      if (is(s.name, "fssdp") && s.mean > ep->mean) notes.push_back(loss_to_ep(s, *ep));
  if (r.inputs.calibration_file.empty())
    notes.push_back(fmt::format("note: uncalibrated: no --calibration and the topology ({}) names none, so links and "
                                "the GPU run at its nominal figures (hecate-sim calibrate fits them)",
                                r.inputs.topology_file));
  if (in.trace_per_source && (in.split_given || in.seed_given))
    notes.push_back(fmt::format("note: {} no effect: the trace has per-source counts, nothing is split over GPUs",
                                in.split_given && in.seed_given ? "--split and --seed have"
                                : in.split_given                ? "--split has"
                                                                : "--seed has"));
  return notes;
}

}  // namespace hs::report
