#include <doctest/doctest.h>

#include "util/units.hpp"
#include "support/approx.hpp"

using hs::Dimension;
using hs::parse_quantity;

TEST_CASE("unit strings parse to SI base units") {
  // 400 Gbps = 400e9 bit/s = 50e9 B/s.
  CHECK(*parse_quantity("400Gbps", Dimension::kBandwidth) == hs::test::approx(50e9));
  CHECK(*parse_quantity("46GB/s", Dimension::kBandwidth) == hs::test::approx(46e9));
  CHECK(*parse_quantity("2.04TB/s", Dimension::kBandwidth) == hs::test::approx(2.04e12));
  // 1.5 us = 1.5e-6 s.
  CHECK(*parse_quantity("1.5us", Dimension::kTime) == hs::test::approx(1.5e-6));
  CHECK(*parse_quantity("20 ms", Dimension::kTime) == hs::test::approx(0.02));
  CHECK(*parse_quantity("989TFLOPS", Dimension::kFlopRate) == hs::test::approx(989e12));
  // 80 GiB = 80 * 2^30 B; 141 GB = 141e9 B.
  CHECK(*parse_quantity("80GiB", Dimension::kBytes) == hs::test::approx(80.0 * 1073741824.0));
  CHECK(*parse_quantity("141GB", Dimension::kBytes) == hs::test::approx(141e9));
}

TEST_CASE("unit strings of the wrong dimension or malformed are rejected") {
  CHECK_FALSE(parse_quantity("400Gbps", Dimension::kTime));
  CHECK_FALSE(parse_quantity("80GiB", Dimension::kBandwidth));
  CHECK_FALSE(parse_quantity("400", Dimension::kBandwidth));   // unit is mandatory
  CHECK_FALSE(parse_quantity("fast", Dimension::kBandwidth));
  CHECK_FALSE(parse_quantity("-3us", Dimension::kTime));
  CHECK_FALSE(parse_quantity("3 parsecs", Dimension::kTime));
  CHECK_FALSE(parse_quantity("", Dimension::kTime));
}

TEST_CASE("quantities combine with physical meaning") {
  // 1 GB over 50 GB/s takes 20 ms.
  hs::Seconds t = hs::Bytes(1e9) / hs::Bandwidth(50e9);
  CHECK(t.value() == hs::test::approx(0.02));
}
