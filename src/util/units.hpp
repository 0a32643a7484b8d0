// Strong unit types and the one place where unit strings are parsed.
//
// Every physical quantity in hecate-sim is held in SI base units as a double inside a tagged type:
// time in seconds, data in bytes, bandwidth in bytes/second, compute in FLOP, throughput in FLOP/s.
// The tag keeps a bandwidth from being passed where a time is expected; arithmetic between tags
// that makes physical sense (bytes / bandwidth = time, ...) is spelled out below.
//
// Unit strings ("400Gbps", "46GB/s", "1.5us", "989TFLOPS", "80GiB") are parsed only at the input
// boundary (parse_quantity). Decimal prefixes are powers of 1000 (GB = 1e9 B, Gbps = 1e9 bit/s);
// binary prefixes (KiB, MiB, GiB, TiB) powers of 1024. "b"/"bps" means bits, "B" bytes.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace hs {

template <class Tag>
struct Quantity {
  double v = 0.0;
  constexpr Quantity() = default;
  constexpr explicit Quantity(double x) : v(x) {}
  constexpr double value() const { return v; }
  constexpr Quantity& operator+=(Quantity o) { v += o.v; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v -= o.v; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v + b.v); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v - b.v); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.v * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.v * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.v / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v / b.v; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;
};

struct SecondsTag {};
struct BytesTag {};
struct BandwidthTag {};
struct FlopsTag {};
struct FlopRateTag {};

using Seconds = Quantity<SecondsTag>;        // s
using Bytes = Quantity<BytesTag>;            // B
using Bandwidth = Quantity<BandwidthTag>;    // B/s
using Flops = Quantity<FlopsTag>;            // FLOP
using FlopRate = Quantity<FlopRateTag>;      // FLOP/s

constexpr Seconds operator/(Bytes b, Bandwidth bw) { return Seconds(b.v / bw.v); }
constexpr Seconds operator/(Flops f, FlopRate r) { return Seconds(f.v / r.v); }
constexpr Bytes operator*(Bandwidth bw, Seconds t) { return Bytes(bw.v * t.v); }

enum class Dimension { kTime, kBytes, kBandwidth, kFlopRate };

std::string_view dimension_name(Dimension d);
// Examples of accepted spellings, for error messages ("expected a bandwidth such as 400Gbps or 46GB/s").
std::string_view dimension_examples(Dimension d);

// Parses "<number><unit>" (optional space between) of the given dimension into SI base units.
// Returns nullopt on anything else: missing unit, unit of another dimension, negative, non-finite.
std::optional<double> parse_quantity(std::string_view text, Dimension d);

// Human-readable formatting with an SI prefix chosen for 3-4 significant digits.
std::string format_time(Seconds s);
std::string format_bytes(Bytes b);          // binary prefixes: KiB, MiB, GiB
std::string format_bandwidth(Bandwidth bw); // GB/s

}  // namespace hs
