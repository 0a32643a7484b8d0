#include "engine/interference.hpp"

#include <fmt/format.h>

namespace hs::engine {

std::string describe(const Interference& i) {
  std::string s = "compute beside nvlink / network traffic:";
  for (int c = 0; c < kKernelClasses; ++c)
    s += fmt::format("{} {} {:.4g} / {:.4g}", c ? "," : "", kernel_class_key(c), i.compute[c][0], i.compute[c][1]);
  s += fmt::format("; communication beside compute: nvlink {:.4g}, network {:.4g}", i.communication[0], i.communication[1]);
  return s;
}

std::string to_json(const Interference& i) {
  std::string s = "{\"compute\": {";
  for (int c = 0; c < kKernelClasses; ++c)
    s += fmt::format("{}\"{}\": {{\"nvlink\": {:.6g}, \"network\": {:.6g}}}", c ? ", " : "", kernel_class_key(c),
                     i.compute[c][0], i.compute[c][1]);
  s += fmt::format("}}, \"communication\": {{\"nvlink\": {:.6g}, \"network\": {:.6g}}}}}", i.communication[0],
                   i.communication[1]);
  return s;
}

}  // namespace hs::engine
