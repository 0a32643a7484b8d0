#include <doctest/doctest.h>

#include <set>
#include <string>

#include "report/palette.hpp"

using namespace hs;

TEST_CASE("the breakdown palette: one colour per component, none repeated") {
  std::set<std::string> seen;
  for (int c = 0; c < strategy::kNumComponents; ++c) {
    const auto comp = static_cast<strategy::Component>(c);
    const std::string col = report::component_color(comp);
    CAPTURE(strategy::component_name(comp));
    CHECK(col.size() == 7);
    CHECK(col[0] == '#');
    CHECK(col != "#000000");  // the fallback of a component the palette does not know
    CHECK(seen.insert(col).second);
  }
  CHECK(seen.size() == static_cast<size_t>(strategy::kNumComponents));
  CHECK(strategy::kNumComponents == 13);  // attention ... overlap_slowdown (strategy/registry.cpp)
}
