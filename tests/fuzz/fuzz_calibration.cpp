// Fuzz target: calibration files.
#include "calib/calibration.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::calib::parse_calibration(text, "fuzz.yaml"); });
  return 0;
}
