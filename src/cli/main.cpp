// hecate-sim: thin entry point. Subcommands are listed in kCommands; each lives in cmd_<name>.cpp.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>
#include <stdexcept>

#include "cli/command.hpp"
#include "util/hecate_version.hpp"
#include "util/diagnostics.hpp"
#include "util/interrupt.hpp"

namespace {

constexpr hs::cli::Command kCommands[] = {
    {"run", "simulate MoE training iterations for one or more strategies and compare them", hs::cli::setup_run},
    {"sweep", "simulate every point of a parameter study (strategies, knobs, model fields, topologies, traces); resumable, parallel", hs::cli::setup_sweep},
    {"tune", "find a strategy's best knobs for a topology and trace (coordinate descent, far fewer runs than a grid)", hs::cli::setup_tune},
    {"calibrate", "fit link classes (nccl-tests logs) and the GPU (hecate-validate) and write a calibration file", hs::cli::setup_calibrate},
    {"plan", "write what a strategy plans at an iteration (owners, copies, transfers) for the validation backend", hs::cli::setup_plan},
    {"collective", "time one collective as nccl-tests would run it (or an all-to-all-v byte matrix), optionally beside a real nccl-tests log", hs::cli::setup_collective},
    {"topo", "show or validate what the simulator understood of a topology", hs::cli::setup_topo},
    {"trace", "generate, inspect, validate and import expert-load traces", hs::cli::setup_trace},
    {"validate", "compare the compute cost model with GPU measurements (hecate-validate) and fit it", hs::cli::setup_validate},
};

}  // namespace

int main(int argc, char** argv) {
  hs::install_interrupt_handlers();
  CLI::App app{"hecate-sim: a simulator and performance model for Mixture-of-Experts training"};
  app.set_version_flag("--version", std::string("hecate-sim ") + HECATE_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  for (const auto& c : kCommands) c.setup(*app.add_subcommand(c.name, c.help), exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : hs::kExitBadInput;
  } catch (const hs::InputError& e) {
    for (const auto& d : e.diagnostics()) fmt::print(stderr, "{}\n", hs::to_string(d));
    return hs::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hecate-sim: error: {}\n", e.what());
    return 1;
  }
  return exit_code;
}
