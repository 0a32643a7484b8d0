// Bundled presets (models/*.yaml, topologies/*.yaml) compiled into the binary, so a preset name
// works wherever hecate-sim runs. A command-line argument is first tried as a file path, then as a
// preset name ("dgx-h100-4node", "gpt-moe-s").
#pragma once

#include <string>
#include <vector>

namespace hs::app {

struct Preset {
  const char* kind;  // "models" or "topologies"
  const char* name;
  const char* text;
};

const std::vector<Preset>& embedded_presets();

struct ResolvedInput {
  std::string text;
  std::string source;  // the path, or "preset:<name>"
};

// Reads `arg` as a file if it exists, else looks for a preset of `kind`. Throws InputError listing
// the presets when neither exists.
ResolvedInput resolve_input(const std::string& arg, const std::string& kind);

}  // namespace hs::app
