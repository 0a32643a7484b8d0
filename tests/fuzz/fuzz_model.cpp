// Fuzz target: model YAML.
#include "fuzz_common.hpp"
#include "workload/model_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::workload::load_model(text, "fuzz.yaml"); });
  return 0;
}
