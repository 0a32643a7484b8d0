#include "topology/overlap_slowdown.hpp"

#include <fmt/format.h>

namespace hs::topology {

namespace {

// `key` of `r`: a number (every traffic kind) or a map {nvlink, network}, into cells[0..1].
void read_pair(MapReader& r, const std::string& key, double max,
               std::array<std::optional<double>, engine::kTrafficKinds>& cells, YamlContext& ctx) {
  const YAML::Node v = r.child(key, false);
  if (!v.IsDefined()) return;
  if (v.IsScalar()) {
    if (auto x = r.number(key, false, 0.0, max)) cells.fill(*x);
    return;
  }
  if (!v.IsMap()) {
    r.error(key, fmt::format("expected a slowdown in [0, {:g}] or a map {{nvlink, network}}", max));
    return;
  }
  MapReader m(v, r.field(key), ctx);
  for (int k = 0; k < engine::kTrafficKinds; ++k)
    if (auto x = m.number(engine::traffic_key(k), false, 0.0, max)) cells[k] = *x;
  m.finish();
}

}  // namespace

engine::InterferenceOverride read_overlap_slowdown(const YAML::Node& n, const std::string& path, YamlContext& ctx,
                                                   double max) {
  engine::InterferenceOverride o;
  MapReader r(n, path, ctx);
  if (!r.valid()) return o;
  const YAML::Node c = r.child("compute", false);
  if (c.IsDefined() && c.IsMap()) {
    MapReader classes(c, r.field("compute"), ctx);
    for (int k = 0; k < engine::kKernelClasses; ++k)
      read_pair(classes, engine::kernel_class_key(k), max, o.compute[k], ctx);
    classes.finish();
  } else if (c.IsDefined()) {
    std::array<std::optional<double>, engine::kTrafficKinds> all{};
    if (c.IsScalar()) {
      read_pair(r, "compute", max, all, ctx);
    } else {
      r.error("compute", fmt::format("expected a slowdown in [0, {:g}] or a map of kernel classes {{gemm, attention, "
                                     "memory_bound}}",
                                     max));
    }
    for (auto& row : o.compute) row = all;
  }
  read_pair(r, "communication", max, o.communication, ctx);
  r.finish();
  return o;
}

}  // namespace hs::topology
