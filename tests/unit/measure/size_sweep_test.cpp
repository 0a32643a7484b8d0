#include <doctest/doctest.h>

#include <stdexcept>

#include "measure/size_sweep.hpp"

using namespace hs::measure;

TEST_CASE("sizes take nccl-tests' suffixes: powers of 1024, either case, optional B") {
  CHECK(parse_size("8", "-b") == 8);
  CHECK(parse_size("64K", "-b") == 65536);        // 64 x 2^10
  CHECK(parse_size("1m", "-b") == 1048576);       // 2^20
  CHECK(parse_size("8G", "-e") == 8589934592ULL);  // 8 x 2^30
  CHECK(parse_size("2KB", "-e") == 2048);
}

TEST_CASE("a bad size names the flag and the value") {
  for (const char* bad : {"", "K", "8X", "-8", "0", "1.5M", "99999999999999999999", "20000000000G"}) {
    CAPTURE(bad);
    try {
      parse_size(bad, "-e");
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("-e") != std::string::npos);
      CHECK(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
}

TEST_CASE("-b 8 -e 8G -f 2 doubles from 8 bytes to 8 GiB inclusive") {
  const auto s = size_sweep(8, 8ULL << 30, 2);
  // 8 = 2^3 ... 8 GiB = 2^33: 31 sizes.
  REQUIRE(s.size() == 31);
  CHECK(s.front() == 8);
  CHECK(s[1] == 16);
  CHECK(s.back() == 8ULL << 30);
}

TEST_CASE("the sweep stops before passing the maximum, and at a single size when min == max") {
  // 1, 4, 16, 64 (256 > 100).
  CHECK(size_sweep(1, 100, 4) == std::vector<std::uint64_t>{1, 4, 16, 64});
  CHECK(size_sweep(1024, 1024, 2) == std::vector<std::uint64_t>{1024});
  // No overflow near the top of the range: 2^62, then 2^63, then stop (2^64 does not fit).
  CHECK(size_sweep(1ULL << 62, ~0ULL, 2).size() == 2);
  CHECK_THROWS_AS(size_sweep(16, 8, 2), std::invalid_argument);
  CHECK_THROWS_AS(size_sweep(8, 16, 1), std::invalid_argument);
}
