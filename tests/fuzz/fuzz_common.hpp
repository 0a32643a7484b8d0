// libFuzzer harness shared by the loaders' fuzz targets (tests/fuzz/README.md). Bad input must end as
// an hs::InputError (the CLI's exit 2 with file:line); any other exception, a crash, a leak, an
// address or undefined-behaviour error (the targets build with ASan + UBSan) is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "util/diagnostics.hpp"

namespace hs::fuzz {

template <class F>
void guarded(F&& f) {
  try {
    f();
  } catch (const hs::InputError&) {
    // expected for bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: a %s escaped instead of an input error: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

// Writes the input to a file for loaders that take a path; returns its path (one per process).
inline std::string as_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/hecate-fuzz-XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  const std::string path = dir + "/input" + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace hs::fuzz
