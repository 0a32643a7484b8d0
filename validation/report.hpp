// What the suites measured, collected as measured.json sections (schema hecate-sim/measured@1,
// read by src/calib/measured.hpp) and written by rank 0 with the run's provenance. A suite adds its
// section's JSON text; the writer adds the schema and provenance and writes atomically.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "measure/provenance.hpp"
#include "measure/measured_json.hpp"
#include "measure/stats.hpp"

namespace hs::validate {

struct Report {
  std::vector<std::pair<std::string, std::string>> sections;  // name -> JSON value
  void add(const std::string& name, std::string json) { sections.emplace_back(name, std::move(json)); }
};

using measure::summary_fields;

// Writes {"schema", "provenance", sections...} to `path` atomically. Throws Fatal when it cannot.
void write_report(const std::string& path, const measure::Provenance& p, const Report& r);

}  // namespace hs::validate
