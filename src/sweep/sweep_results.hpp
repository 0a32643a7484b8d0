// Rows of sweep results and the files that hold them. JSON Lines is the record (one object per
// point, every input and metric; read back to resume); CSV is the same rows for spreadsheets and
// pandas. Both are appended and flushed point by point, and rewritten whole (atomically, rows in
// sweep order) when a sweep starts and when it ends, so a finished sweep's files are the same bytes
// whatever the number of jobs and however often it was interrupted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sweep/sweep_points.hpp"
#include "sweep/sweep_spec.hpp"

namespace hs::sweep {

struct Row {
  int index = -1;             // point index; -1 for a strategy's defaults point (role "defaults")
  std::string role = "point"; // point | defaults
  std::string key;
  std::string topology, trace, network, model_file, model, calibration, layout, strategy, spec;
  std::vector<std::pair<std::string, std::string>> knobs;
  std::string status = "ok";  // ok | error
  std::string error;          // why a point could not run (e.g. a strategy that does not apply)
  double mean_ms = 0, p50_ms = 0, p99_ms = 0, tokens_per_s = 0, peak_memory_gib = 0;
  double dropped_fraction = 0;  // token-expert assignments dropped at a capacity_factor / routed (0: dropless)
  bool fits = false;          // peak memory within the GPU's memory
  bool feasible = false;      // ok and every constraint of the sweep holds
};

Row row_of(const SweepPoint& p);  // inputs filled, metrics empty
// The objective's value, smaller is better (tokens/s negated).
double objective_value(const Row& r, Objective o);
double objective_display(const Row& r, Objective o);  // in its own unit (ms or tokens/s)
const char* objective_unit(Objective o);

std::string to_json_line(const Row& r);  // with the trailing newline
// nullopt for a line that is not a complete row (a torn last line after a crash).
std::optional<Row> parse_json_line(std::string_view line);
std::vector<Row> read_rows(const std::string& jsonl_path, int* torn = nullptr);  // missing file: none

std::vector<std::string> knob_columns(const SweepSpec& s);
std::string csv_header(const std::vector<std::string>& knob_columns);
std::string to_csv_line(const Row& r, const std::vector<std::string>& knob_columns);

// Sweep order: points by index, then defaults rows by key.
void sort_rows(std::vector<Row>& rows);

struct Summary {
  std::vector<Row> best;    // best feasible point per strategy, in the sweep's strategy order
  std::vector<Row> pareto;  // feasible points no other beats on both objective and peak memory
};
Summary summarize(const std::vector<Row>& rows, const SweepSpec& s);

}  // namespace hs::sweep
