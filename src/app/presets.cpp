#include "app/presets.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include "util/atomic_file.hpp"
#include "util/diagnostics.hpp"

namespace hs::app {

ResolvedInput resolve_input(const std::string& arg, const std::string& kind) {
  struct stat st {};
  if (::stat(arg.c_str(), &st) == 0) return {read_file(arg), arg};
  std::vector<std::string> names;
  for (const auto& p : embedded_presets()) {
    if (kind != p.kind) continue;
    if (arg == p.name) return {p.text, std::string("preset:") + p.name};
    names.push_back(p.name);
  }
  throw InputError({arg, 0, 0}, "",
                   fmt::format("no such file, and no {} preset of that name (presets: {})",
                               kind == "models" ? "model" : "topology", fmt::join(names, ", ")));
}

}  // namespace hs::app
