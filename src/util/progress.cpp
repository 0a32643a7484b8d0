#include "util/progress.hpp"

#include <chrono>
#include <cmath>
#include <fmt/format.h>

namespace hs {

namespace {
constexpr double kRedraw_s = 0.1;     // a terminal's line, at most this often
constexpr double kPipeEvery_s = 5.0;  // a pipe's line, at least this often while work advances
}  // namespace

double Progress::steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string format_duration(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  const long t = std::lround(s);
  if (t < 90) return fmt::format("{} s", t);
  if (t < 5400) return fmt::format("{} min {:02} s", t / 60, t % 60);
  return fmt::format("{} h {:02} min", t / 3600, t / 60 % 60);
}

Progress::Progress(std::string label, std::string unit, size_t total, ProgressSettings settings, std::FILE* out,
                   Clock now)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), s_(settings), out_(out), now_(std::move(now)),
      start_(now_()) {}

Progress::~Progress() { finish(); }

bool Progress::visible(double now) {
  if (s_.quiet) return false;
  if (!shown_ && now - start_ >= s_.delay_s) shown_ = true;
  return shown_;
}

std::string Progress::status(double now) const {
  const double el = now - start_;
  std::string s = fmt::format("{}: {}", label_, done_);
  if (total_ > 0) s += fmt::format("/{}", total_);
  s += " " + unit_;
  if (total_ > 0) s += fmt::format(" ({:.0f}%)", 100.0 * static_cast<double>(done_) / static_cast<double>(total_));
  if (el > 0 && done_ > 0) {
    const double rate = static_cast<double>(done_) / el;
    s += fmt::format(", {:.3g} {}/s", rate, unit_);
    if (total_ > 0) s += ", ETA " + format_duration(static_cast<double>(total_ - std::min(done_, total_)) / rate);
  }
  if (!detail_.empty()) s += ", " + detail_;
  return s;
}

void Progress::emit(const std::string& line, double now) {
  if (s_.tty) {
    // A line longer than the terminal wraps, and \r would redraw only its last row.
    const size_t fit = s_.width > 1 ? static_cast<size_t>(s_.width - 1) : line.size();
    fmt::print(out_, "\r\033[K{}", line.size() > fit ? line.substr(0, fit) : line);
    open_line_ = true;
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
  last_print_ = now;
}

void Progress::update(size_t done, std::string_view detail) {
  done_ = done;
  detail_ = detail;
  const double now = now_();
  if (!visible(now)) return;
  const bool last = total_ > 0 && done_ >= total_;
  if (s_.tty) {
    if (last || last_print_ < 0 || now - last_print_ >= kRedraw_s) emit(status(now), now);
    return;
  }
  const long tenth = total_ > 0 ? static_cast<long>(10 * done_ / total_) : -1;
  if (last_print_ < 0 || tenth > last_tenth_ || now - last_print_ >= kPipeEvery_s) {
    last_tenth_ = tenth;
    emit(status(now), now);
  }
}

void Progress::step(std::string_view what) {
  const double now = now_();
  if (!visible(now)) return;
  if (s_.tty) {
    emit(fmt::format("{} | {}", status(now), what), now);
  } else {
    emit(fmt::format("{}: {}", label_, what), now);
  }
}

void Progress::finish() {
  if (open_line_) {
    fmt::print(out_, "\n");
    std::fflush(out_);
    open_line_ = false;
  }
}

}  // namespace hs
