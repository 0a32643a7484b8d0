// Colours of the HTML report's charts: one per breakdown component (strategy::Component), all
// different, so that every segment of a stacked bar names its component; and a series palette for
// charts whose rows are strategies or memory terms.
#pragma once

#include <array>

#include "strategy/strategy.hpp"

namespace hs::report {

// "#rrggbb" of a breakdown component; a different colour for each of the kNumComponents.
const char* component_color(strategy::Component c);

// Series colours (strategies in the iteration-time chart, memory terms), cycled by index.
inline constexpr std::array<const char*, 11> kSeriesColors = {"#4e79a7", "#9c755f", "#59a14f", "#e15759",
                                                              "#f28e2b", "#76b7b2", "#bab0ac", "#edc948",
                                                              "#b07aa1", "#ff9da7", "#8cd17d"};

}  // namespace hs::report
