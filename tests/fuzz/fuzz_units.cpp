// Fuzz target: the unit parser (every dimension).
#include "fuzz_common.hpp"
#include "util/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto d : {hs::Dimension::kTime, hs::Dimension::kBytes, hs::Dimension::kBandwidth, hs::Dimension::kFlopRate}) {
    auto v = hs::parse_quantity(text, d);
    if (v && !(*v == *v)) std::abort();  // never NaN
  }
  return 0;
}
