// The points of a sweep: the cartesian product of its axes (per strategy, that strategy's knob
// axes), in a fixed order, or a seeded random sample of that grid (without replacement, kept in
// grid order). Each point has a key: a hash of its canonical text, so a resumed or sharded sweep
// recognises a point it already has whatever the file order or the number of jobs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace hs::sweep {

struct SweepPoint {
  int index = 0;  // position in the sweep (grid order)
  std::string topology, trace, network;
  std::string model_file;  // file or preset; empty = the trace's model.preset
  std::string calibration; // calibration file; empty = none (beyond what the topology names)
  std::string layout;      // parallel layout as written (run --layout); empty = none
  SourceLocation layout_at;  // where the sweep file gives it (not part of the key)
  std::vector<std::pair<std::string, std::string>> model;  // field, value (as --set)
  std::string strategy;                                    // registry name
  std::vector<std::pair<std::string, std::string>> knobs;  // knob, value (only those the sweep sets)
  int iterations = 0;
  uint64_t seed = 1;
  std::string spec() const;       // "fssdp:overlap_degree=4:rematerialize=true"
  std::string model_sets() const; // "micro_batch=4;seq_len=2048"
  std::string canonical() const;  // every input of the point, one text
  std::string key;                // 16 hex digits of fnv1a64(canonical())
};

std::vector<SweepPoint> expand(const SweepSpec& s);
// The strategy's defaults at the setting of `p` (no knobs): what `sweep` compares the best point to.
SweepPoint defaults_of(const SweepPoint& p);
std::string point_key(const std::string& canonical);

}  // namespace hs::sweep
