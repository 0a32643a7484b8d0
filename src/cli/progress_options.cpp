#include "cli/progress_options.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

namespace hs::cli {

void add_quiet_flag(CLI::App& sub, bool& quiet) {
  sub.add_flag("-q,--quiet", quiet, "no progress on stderr (shown when the work takes more than 2 s)");
}

ProgressSettings progress_settings(bool quiet) {
  ProgressSettings s;
  s.quiet = quiet;
  s.tty = isatty(fileno(stderr)) != 0;
  struct winsize ws {};
  if (s.tty && ::ioctl(fileno(stderr), TIOCGWINSZ, &ws) == 0) s.width = ws.ws_col;
  if (const char* d = std::getenv("HECATE_SIM_PROGRESS_DELAY")) {
    char* end = nullptr;
    const double v = std::strtod(d, &end);
    if (end != d && *end == '\0' && v >= 0) s.delay_s = v;
  }
  return s;
}

}  // namespace hs::cli
