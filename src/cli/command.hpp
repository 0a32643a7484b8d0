// A subcommand of hecate-sim: a name, a one-line help and a function that declares its options on a
// CLI11 sub-app and sets the callback that runs it. main.cpp lists every subcommand in one table.
//
// Callbacks report bad input by throwing hs::InputError (main prints every diagnostic and exits 2);
// they return their exit code through `exit_code`.
#pragma once

namespace CLI {
class App;
}

namespace hs::app {}  // scenario loading, point evaluation, sweep coordination (src/app/)

namespace hs::cli {

// The commands parse arguments, call the app library and print.
using namespace hs::app;


struct Command {
  const char* name;
  const char* help;
  void (*setup)(CLI::App& sub, int& exit_code);
};

void setup_run(CLI::App& sub, int& exit_code);
void setup_topo(CLI::App& sub, int& exit_code);
void setup_trace(CLI::App& sub, int& exit_code);
void setup_validate(CLI::App& sub, int& exit_code);
void setup_sweep(CLI::App& sub, int& exit_code);
void setup_tune(CLI::App& sub, int& exit_code);
void setup_calibrate(CLI::App& sub, int& exit_code);
void setup_collective(CLI::App& sub, int& exit_code);
void setup_plan(CLI::App& sub, int& exit_code);

}  // namespace hs::cli
