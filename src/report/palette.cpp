#include "report/palette.hpp"

namespace hs::report {

const char* component_color(strategy::Component c) {
  switch (c) {
    case strategy::Component::kAttention: return "#4e79a7";
    case strategy::Component::kRouting: return "#9c755f";
    case strategy::Component::kExpertCompute: return "#59a14f";
    case strategy::Component::kStragglerWait: return "#e15759";
    case strategy::Component::kAllToAll: return "#f28e2b";
    case strategy::Component::kDenseAllReduce: return "#76b7b2";
    case strategy::Component::kOptimizer: return "#bab0ac";
    case strategy::Component::kExposedSpag: return "#edc948";
    case strategy::Component::kExposedSprs: return "#b07aa1";
    case strategy::Component::kCalibrationSpag: return "#ff9da7";
    case strategy::Component::kReshard: return "#8cd17d";
    case strategy::Component::kMaterializeCopy: return "#6b4c9a";
    case strategy::Component::kOverlapSlowdown: return "#555555";
    case strategy::Component::kCount: break;
  }
  return "#000000";
}

}  // namespace hs::report
