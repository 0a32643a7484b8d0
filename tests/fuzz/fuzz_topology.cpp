// Fuzz target: topology YAML (compact and explicit forms).
#include "fuzz_common.hpp"
#include "topology/topology_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::topology::load_topology(text, "fuzz.yaml"); });
  return 0;
}
