// Fuzz target: sweep files (and the expansion of a valid one, capped).
#include "fuzz_common.hpp"
#include "sweep/sweep_points.hpp"
#include "sweep/sweep_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] {
    auto s = hs::sweep::parse_sweep(text, "fuzz.yaml");
    double n = 1;
    for (const auto& st : s.strategies)
      for (const auto& k : st.knobs) n *= static_cast<double>(k.values.size());
    if (n * s.topologies.size() * s.traces.size() < 1e5) hs::sweep::expand(s);
  });
  return 0;
}
