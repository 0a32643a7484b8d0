// Fuzz target: the trace importers (Megatron-Core router JSONL, CSV, one SmartMoE rank log); the
// first byte picks the importer.
#include <filesystem>

#include "fuzz_common.hpp"
#include "workload/trace_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] % 3;
  hs::workload::ImportOptions opt;
  if (which == 0) {
    const std::string p = hs::fuzz::as_file(data + 1, size - 1, ".jsonl");
    hs::fuzz::guarded([&] { hs::workload::import_megatron(p, opt); });
  } else if (which == 1) {
    const std::string p = hs::fuzz::as_file(data + 1, size - 1, ".csv");
    hs::fuzz::guarded([&] { hs::workload::import_csv(p, opt); });
  } else {
    const std::string p = hs::fuzz::as_file(data + 1, size - 1, ".log");
    const auto dir = std::filesystem::path(p).parent_path() / "smartmoe";
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(p, dir / "table_iter1_rank0.log", std::filesystem::copy_options::overwrite_existing);
    hs::fuzz::guarded([&] { hs::workload::import_smartmoe(dir.string(), opt); });
  }
  return 0;
}
