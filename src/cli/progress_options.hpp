// The progress settings of a command: --quiet, whether stderr is a terminal, and the delay before
// progress appears (2 s; the environment variable HECATE_SIM_PROGRESS_DELAY=SECONDS overrides it,
// 0 shows progress from the start, as the CLI tests do to see it without timing).
#pragma once

#include "util/progress.hpp"

namespace CLI {
class App;
}

namespace hs::cli {

// Adds --quiet to a command, setting `quiet`.
void add_quiet_flag(CLI::App& sub, bool& quiet);

ProgressSettings progress_settings(bool quiet);

}  // namespace hs::cli
