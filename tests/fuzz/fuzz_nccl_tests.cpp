// Fuzz target: nccl-tests output.
#include "calib/nccl_tests_log.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hs::fuzz::guarded([&] { hs::calib::parse_nccl_tests_log(text, "fuzz.log"); });
  return 0;
}
