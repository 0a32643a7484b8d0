#include "report.hpp"

#include <fmt/format.h>

#include "check.hpp"
#include "util/atomic_file.hpp"

namespace hs::validate {

std::string summary_fields(const measure::Summary& s) {
  return fmt::format("\"median_s\": {:.9g}, \"min_s\": {:.9g}, \"p25_s\": {:.9g}, \"p75_s\": {:.9g}, \"max_s\": {:.9g}, \"iters\": {}",
                     s.median, s.min, s.p25, s.p75, s.max, s.n);
}

void write_report(const std::string& path, const measure::Provenance& p, const Report& r) {
  std::string js = "{\n  \"schema\": \"hecate-sim/measured@1\",\n";
  js += "  \"provenance\": " + measure::provenance_json(p, 4);
  for (const auto& [name, value] : r.sections) js += fmt::format(",\n  \"{}\": {}", name, value);
  js += "\n}\n";
  try {
    write_file_atomically(path, js);
  } catch (const std::exception& e) {
    throw Fatal(fmt::format("cannot write {}: {}", path, e.what()));
  }
}

}  // namespace hs::validate
