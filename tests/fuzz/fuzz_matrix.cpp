// Fuzz target: all-to-all-v byte matrices (`hecate-sim collective --matrix FILE`), text and JSON,
// against a 16-GPU topology.
#include "collective/byte_matrix.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::collective::parse_byte_matrix(text, "fuzz.txt", 16); });
  return 0;
}
