#include "report.hpp"

#include <fmt/format.h>

#include "check.hpp"
#include "util/atomic_file.hpp"

namespace hs::validate {

void write_report(const std::string& path, const measure::Provenance& p, const Report& r) {
  const std::string js = measure::measured_document(p, r.sections);
  try {
    write_file_atomically(path, js);
  } catch (const std::exception& e) {
    throw Fatal(fmt::format("cannot write {}: {}", path, e.what()));
  }
}

}  // namespace hs::validate
