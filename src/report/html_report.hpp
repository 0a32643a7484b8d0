// A self-contained HTML report of a run (no scripts, no external files): the summary table, a
// stacked bar chart of each strategy's critical-path breakdown, the iteration time of every
// iteration per strategy, and peak memory per GPU by component against the GPU's capacity. Charts
// are inline SVG so the file opens anywhere and can be attached to a ticket.
#pragma once

#include <string>

#include "report/run_report.hpp"

namespace hs::report {

std::string render_html(const RunReport& r);

}  // namespace hs::report
