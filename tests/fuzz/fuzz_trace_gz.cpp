// Fuzz target: a gzip-compressed trace read from a file (corrupt gzip streams included).
#include "fuzz_common.hpp"
#include "workload/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::as_file(data, size, ".json.gz");
  hs::fuzz::guarded([&] { hs::workload::read_trace(path); });
  return 0;
}
