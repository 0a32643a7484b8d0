// Fuzz target: expert-load trace JSON (plain; the gzip path is fuzz_trace_gz).
#include "fuzz_common.hpp"
#include "workload/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::workload::parse_trace(text, "fuzz.json"); });
  return 0;
}
