// Progress of long work on stderr: what is being done, how far along, the ETA. One reporter serves
// every command (run, sweep, tune, collective, calibrate).
//
// Nothing is shown until the work has run for `delay_s` (quick commands stay quiet) and nothing at
// all with `quiet`. On a terminal one line is redrawn in place (\r, at most ten times a second); into
// a pipe or a file a line is written each time another tenth of the work is done, at least every
// few seconds while it runs, and on each step() (e.g. a strategy finished), never one per unit of
// work. The clock only decides whether and when a line is printed: progress never touches results
// or the command's output files, and stdout is not written.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace hs {

struct ProgressSettings {
  bool quiet = false;    // print nothing
  double delay_s = 2;    // print nothing before the work has run this long (0: from the start)
  bool tty = false;      // redraw one line in place (stderr is a terminal)
  int width = 0;         // the terminal's columns: a line drawn in place is cut to fit (0: unknown)
};

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  static double steady_seconds();

  // `label` starts every line ("run"); `unit` names what is counted ("iterations"); `total` 0 when
  // unknown (no percentage nor ETA then).
  Progress(std::string label, std::string unit, size_t total, ProgressSettings settings, std::FILE* out = stderr,
           Clock now = steady_seconds);
  ~Progress();  // ends a line drawn in place, so what follows starts on its own line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` units of the total are finished; `detail` says what is being done or found so far.
  void update(size_t done, std::string_view detail = {});
  // A step of the work finished (`what`, e.g. "strategy ep finished"): a line of its own into a pipe,
  // the line redrawn on a terminal.
  void step(std::string_view what);
  // Ends the line drawn in place, if any.
  void finish();

  bool shown() const { return shown_; }

 private:
  bool visible(double now);
  std::string status(double now) const;
  void emit(const std::string& line, double now);

  std::string label_, unit_;
  size_t total_, done_ = 0;
  std::string detail_;
  ProgressSettings s_;
  std::FILE* out_;
  Clock now_;
  double start_, last_print_ = -1;
  long last_tenth_ = -1;
  bool shown_ = false, open_line_ = false;
};

// "12 s", "3 min 20 s", "2 h 05 min".
std::string format_duration(double seconds);

}  // namespace hs
