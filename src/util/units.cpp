#include "util/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace hs {

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kTime: return "time";
    case Dimension::kBytes: return "size";
    case Dimension::kBandwidth: return "bandwidth";
    case Dimension::kFlopRate: return "compute rate";
  }
  return "?";
}

std::string_view dimension_examples(Dimension d) {
  switch (d) {
    case Dimension::kTime: return "1.5us, 20ms or 3s";
    case Dimension::kBytes: return "80GiB, 141GB or 512MiB";
    case Dimension::kBandwidth: return "400Gbps, 46GB/s or 2.04TB/s";
    case Dimension::kFlopRate: return "989TFLOPS or 312TFLOP/s";
  }
  return "";
}

namespace {

struct UnitEntry {
  std::string_view name;
  Dimension dim;
  double factor;
};

// Longest names first is not required: we match the whole suffix exactly.
constexpr std::array kUnits = {
    UnitEntry{"s", Dimension::kTime, 1.0},
    UnitEntry{"ms", Dimension::kTime, 1e-3},
    UnitEntry{"us", Dimension::kTime, 1e-6},
    UnitEntry{"ns", Dimension::kTime, 1e-9},
    UnitEntry{"B", Dimension::kBytes, 1.0},
    UnitEntry{"KB", Dimension::kBytes, 1e3},
    UnitEntry{"kB", Dimension::kBytes, 1e3},
    UnitEntry{"MB", Dimension::kBytes, 1e6},
    UnitEntry{"GB", Dimension::kBytes, 1e9},
    UnitEntry{"TB", Dimension::kBytes, 1e12},
    UnitEntry{"KiB", Dimension::kBytes, 1024.0},
    UnitEntry{"MiB", Dimension::kBytes, 1024.0 * 1024},
    UnitEntry{"GiB", Dimension::kBytes, 1024.0 * 1024 * 1024},
    UnitEntry{"TiB", Dimension::kBytes, 1024.0 * 1024 * 1024 * 1024},
    UnitEntry{"B/s", Dimension::kBandwidth, 1.0},
    UnitEntry{"KB/s", Dimension::kBandwidth, 1e3},
    UnitEntry{"MB/s", Dimension::kBandwidth, 1e6},
    UnitEntry{"GB/s", Dimension::kBandwidth, 1e9},
    UnitEntry{"TB/s", Dimension::kBandwidth, 1e12},
    UnitEntry{"GiB/s", Dimension::kBandwidth, 1024.0 * 1024 * 1024},
    UnitEntry{"bps", Dimension::kBandwidth, 1.0 / 8},
    UnitEntry{"Kbps", Dimension::kBandwidth, 1e3 / 8},
    UnitEntry{"Mbps", Dimension::kBandwidth, 1e6 / 8},
    UnitEntry{"Gbps", Dimension::kBandwidth, 1e9 / 8},
    UnitEntry{"Tbps", Dimension::kBandwidth, 1e12 / 8},
    UnitEntry{"Gb/s", Dimension::kBandwidth, 1e9 / 8},
    UnitEntry{"FLOPS", Dimension::kFlopRate, 1.0},
    UnitEntry{"GFLOPS", Dimension::kFlopRate, 1e9},
    UnitEntry{"TFLOPS", Dimension::kFlopRate, 1e12},
    UnitEntry{"PFLOPS", Dimension::kFlopRate, 1e15},
    UnitEntry{"GFLOP/s", Dimension::kFlopRate, 1e9},
    UnitEntry{"TFLOP/s", Dimension::kFlopRate, 1e12},
    UnitEntry{"PFLOP/s", Dimension::kFlopRate, 1e15},
};

}  // namespace

std::optional<double> parse_quantity(std::string_view text, Dimension d) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  std::string_view unit(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty() || !std::isfinite(number) || number < 0) return std::nullopt;
  for (const auto& u : kUnits) {
    if (u.name == unit) {
      if (u.dim != d) return std::nullopt;
      return number * u.factor;
    }
  }
  return std::nullopt;
}

std::string format_time(Seconds s) {
  double v = s.value();
  double a = std::fabs(v);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.3g} ns", v * 1e9);
  if (a < 1e-3) return fmt::format("{:.4g} us", v * 1e6);
  if (a < 1.0) return fmt::format("{:.4g} ms", v * 1e3);
  return fmt::format("{:.4g} s", v);
}

std::string format_bytes(Bytes b) {
  double v = b.value();
  double a = std::fabs(v);
  if (a < 1024) return fmt::format("{:.0f} B", v);
  if (a < 1024.0 * 1024) return fmt::format("{:.1f} KiB", v / 1024);
  if (a < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", v / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", v / (1024.0 * 1024 * 1024));
}

std::string format_bandwidth(Bandwidth bw) { return fmt::format("{:.1f} GB/s", bw.value() / 1e9); }

}  // namespace hs
