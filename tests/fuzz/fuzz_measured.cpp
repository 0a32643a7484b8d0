// Fuzz target: hecate-validate's measured.json.
#include "calib/measured.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hs::fuzz::as_file(data, size, ".json");
  hs::fuzz::guarded([&] {
    auto m = hs::calib::read_measured(path);
    hs::calib::fit_gemm(m, 1e15);
  });
  return 0;
}
