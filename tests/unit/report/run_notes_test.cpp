#include <doctest/doctest.h>

#include <string>

#include "report/run_notes.hpp"
#include "support/test_platforms.hpp"

using namespace hs;

namespace {
strategy::RunSummary summary(const std::string& name, double mean) {
  strategy::RunSummary s;
  s.name = name;
  s.mean = s.p50 = s.p99 = mean;
  s.times = {mean};
  s.breakdown[static_cast<int>(strategy::Component::kAttention)] = mean / 2;
  s.breakdown[static_cast<int>(strategy::Component::kAllToAll)] = mean / 2;
  return s;
}
// A report on a topology with 8 GPUs, calibrated (so that only the notes under test appear).
report::RunReport calibrated(const topology::Topology& topo) {
  report::RunReport r;
  r.topo = &topo;
  r.inputs.topology_file = "preset:test";
  r.inputs.calibration_file = "cal.yaml";
  return r;
}
bool has(const std::vector<std::string>& notes, const std::string& text) {
  for (const auto& n : notes)
    if (n == text) return true;
  return false;
}
}  // namespace

TEST_CASE("notes: FSSDP without copies says why (memory cap 0, or none worth a copy)") {
  auto topo = test::node8();
  auto r = calibrated(topo);
  auto fs = summary("fssdp", 1e-3);
  fs.resolved = {strategy::resolved_list("overlap_degree", {4, 4}), strategy::resolved_value("memory_capacity_m", 0),
                 strategy::resolved_list("copies_cut_by_memory", {0, 0}), strategy::resolved_list("copies_per_layer", {0, 0})};
  r.strategies = {summary("ep", 2e-3), fs};
  report::NoteInputs in;
  in.experts = 4;
  auto notes = report::run_notes(r, in);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "note: fssdp made no copies (copies_per_layer 0 in every layer): its memory cap per layer "
                    "(memory_capacity_m) is 0 (the memory budget leaves no room for copies); overlap_degree allowed up "
                    "to 4 (4 experts over 8 GPUs)");
  // A cap, yet no copies: the cap cut them, or no expert was worth one.
  r.strategies[1].resolved[1] = strategy::resolved_value("memory_capacity_m", 2);
  r.strategies[1].resolved[2] = strategy::resolved_list("copies_cut_by_memory", {3, 0});
  notes = report::run_notes(r, {});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "note: fssdp made no copies (copies_per_layer 0 in every layer): the memory cap (2 per layer) cut "
                    "every copy (copies_cut_by_memory); overlap_degree allowed up to 4");
  r.strategies[1].resolved[2] = strategy::resolved_list("copies_cut_by_memory", {0, 0});
  CHECK(report::run_notes(r, {}).at(0).find("no expert was loaded enough to be worth a copy") != std::string::npos);
  // Copies made, or overlap_degree 0 with a cap: nothing to say.
  r.strategies[1].resolved[0] = strategy::resolved_list("overlap_degree", {0, 0});
  CHECK(report::run_notes(r, {}).empty());
  r.strategies[1].resolved[3] = strategy::resolved_list("copies_per_layer", {6, 0});
  r.strategies[1].resolved[0] = strategy::resolved_list("overlap_degree", {4, 4});
  CHECK(report::run_notes(r, {}).empty());
}

TEST_CASE("notes: a strategy whose result equals an earlier one's, with the reason its settings give") {
  auto topo = test::node8();
  auto r = calibrated(topo);
  auto fm = summary("fastermoe", 2e-3);
  fm.resolved = {strategy::resolved_list("shadowed_per_layer", {0, 0}), strategy::resolved_list("shadowed_max_per_layer", {0, 0})};
  auto fs = summary("fssdp", 3e-3), fd = summary("fsdp", 3e-3);
  fs.resolved = {strategy::resolved_list("copies_per_layer", {8, 8})};
  fd.resolved = {strategy::resolved_list("copies_per_layer", {8, 8})};
  auto other = summary("oracle", 2e-3);  // equal, for no reason its settings name
  auto close = summary("smartmoe", 2e-3 * (1 + 1e-6));  // not equal: 1e-6 relative apart
  r.strategies = {summary("ep", 2e-3), fm, fs, fd, other, close};
  const auto notes = report::run_notes(r, {});
  CHECK(notes.size() == 4);  // and fssdp slower than ep (its own test below)
  CHECK(has(notes, "note: fastermoe equals ep on this input (no expert shadowed)"));
  CHECK(has(notes, "note: fsdp equals fssdp on this input (the same copies in every layer)"));
  CHECK(has(notes, "note: oracle equals ep on this input (identical iteration times and breakdowns)"));
  // A different breakdown with the same times is not the same result.
  auto a = summary("a", 1e-3), b = summary("b", 1e-3);
  b.breakdown[static_cast<int>(strategy::Component::kAllToAll)] = 0;
  b.breakdown[static_cast<int>(strategy::Component::kStragglerWait)] = 0.5e-3;
  CHECK_FALSE(report::same_result(a, b));
  CHECK(report::same_result(a, summary("c", 1e-3)));
}

TEST_CASE("notes: FSSDP slower than EP says which phases it exposes and what it saves, from the breakdowns") {
  auto topo = test::node8();
  auto r = calibrated(topo);
  auto ep = summary("ep", 10e-3), fs = summary("fssdp:overlap_degree=8", 10.5e-3), fast = summary("fssdp", 8e-3);
  auto at = [](strategy::RunSummary& s, strategy::Component c) -> double& { return s.breakdown[static_cast<int>(c)]; };
  // EP: attention 5, all-to-all 5 ms. FSSDP: attention 5, all-to-all 4, exposed spRS 0.9, exposed
  // spAG 0.4, copies 0.15, interference 0.05 ms (4 components grow, the smallest is left out);
  // 10.5 ms in all, 10 / 10.5 = 0.95x.
  at(fs, strategy::Component::kAttention) = 5e-3;
  at(fs, strategy::Component::kAllToAll) = 4e-3;
  at(fs, strategy::Component::kExposedSprs) = 0.9e-3;
  at(fs, strategy::Component::kExposedSpag) = 0.4e-3;
  at(fs, strategy::Component::kMaterializeCopy) = 0.15e-3;
  at(fs, strategy::Component::kOverlapSlowdown) = 0.05e-3;
  r.strategies = {summary("oracle", 9e-3), ep, fs, fast};
  CHECK(report::run_notes(r, {}) ==
        std::vector<std::string>{"note: fssdp:overlap_degree=8 is 0.95x ep (10.50 vs 10.00 ms per iteration): on its "
                                 "critical path exposed_sprs +0.90 ms, exposed_spag +0.40 ms, materialize_copy +0.15 ms "
                                 "outweigh all_to_all -1.00 ms"});
  // FSSDP faster than EP, or no EP in the report: nothing to say.
  r.strategies = {summary("ep", 11e-3), fs};
  CHECK(report::run_notes(r, {}).empty());
  r.strategies = {summary("oracle", 9e-3), fs};
  CHECK(report::run_notes(r, {}).empty());
}

TEST_CASE("notes: uncalibrated defaults, --split / --seed on a per-source trace") {
  auto topo = test::node8();
  auto r = calibrated(topo);
  r.strategies = {summary("ep", 2e-3)};
  CHECK(report::run_notes(r, {}).empty());
  r.inputs.calibration_file.clear();
  CHECK(report::run_notes(r, {}) ==
        std::vector<std::string>{"note: uncalibrated: no --calibration and the topology (preset:test) names none, so "
                                 "links and the GPU run at its nominal figures (hecate-sim calibrate fits them)"});
  r.inputs.calibration_file = "cal.yaml";
  report::NoteInputs in;
  in.split_given = true;
  CHECK(report::run_notes(r, in).empty());  // a global-count trace: --split acts
  in.trace_per_source = true;
  CHECK(report::run_notes(r, in) ==
        std::vector<std::string>{"note: --split has no effect: the trace has per-source counts, nothing is split over GPUs"});
  in.seed_given = true;
  CHECK(report::run_notes(r, in).at(0).rfind("note: --split and --seed have no effect", 0) == 0);
  in.split_given = false;
  CHECK(report::run_notes(r, in).at(0).rfind("note: --seed has no effect", 0) == 0);
}

TEST_CASE("notes: a strategy over memory in some iterations only says which and how many") {
  auto topo = test::node8();
  auto r = calibrated(topo);
  // EP fits everywhere (no note); FSSDP over memory in 1 of 3 iterations, the first, at 81.5 GiB;
  // FlexMoE over memory in all 3 (the table's "NO" says it all: no note).
  auto ep = summary("ep", 2e-3), fs = summary("fssdp", 1e-3), fx = summary("flexmoe", 3e-3);
  ep.times = fs.times = fx.times = {1e-3, 1e-3, 1e-3};
  fs.iterations_over_memory = 1;
  fs.peak_memory_iteration = 0;
  fs.peak_memory.params = 81.5 * 1024 * 1024 * 1024;
  fx.iterations_over_memory = 3;
  fx.peak_memory_iteration = 2;
  r.strategies = {ep, fs, fx};
  auto notes = report::run_notes(r, {});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "note: fssdp exceeds the GPU's memory in 1 of 3 iterations (the worst: iteration 1, 81.50 GiB): its "
                    "copies there were planned on a balanced estimate, before any routing was seen");
  // A later iteration: the most routed tokens of the iterations before it. Another strategy: no reason given.
  r.strategies[1].peak_memory_iteration = 2;
  r.strategies[2].iterations_over_memory = 2;
  notes = report::run_notes(r, {});
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] == "note: fssdp exceeds the GPU's memory in 1 of 3 iterations (the worst: iteration 3, 81.50 GiB): its "
                    "copies there were planned beside the most routed tokens of the iterations before it");
  CHECK(notes[1] == "note: flexmoe exceeds the GPU's memory in 2 of 3 iterations (the worst: iteration 3, 0.00 GiB)");
}
