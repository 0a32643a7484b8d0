// Fuzz target: plan files (`hecate-sim plan` output, schema hecate-sim/plan@1), read and checked
// completely as hecate-plan-check does before anything runs.
#include "fuzz_common.hpp"
#include "transport/plan_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::transport::parse_plan(text, "fuzz.json"); });
  return 0;
}
