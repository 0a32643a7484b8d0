#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "collective/byte_matrix.hpp"
#include "util/diagnostics.hpp"

using namespace hs;
using collective::parse_byte_matrix;

namespace {

// The one error parsing `text` against 4 GPUs gives; fails the test when there is none.
Diagnostic error_of(const std::string& text) {
  try {
    parse_byte_matrix(text, "m", 4);
  } catch (const InputError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    return e.diagnostics()[0];
  }
  FAIL("no error for: " << text);
  return {};
}

void expect_error(const std::string& text, int line, const std::string& what) {
  const Diagnostic d = error_of(text);
  CHECK(d.where.file == "m");
  CHECK_MESSAGE(d.where.line == line, to_string(d));
  CHECK_MESSAGE(to_string(d).find(what) != std::string::npos, to_string(d));
}

}  // namespace

TEST_CASE("byte matrix: text and JSON give the same row-major matrix; pairs not given send nothing") {
  std::vector<double> want(16, 0.0);
  want[0 * 4 + 1] = 1048576;
  want[1 * 4 + 0] = 2097152;
  want[3 * 4 + 2] = 4500;
  CHECK(parse_byte_matrix("# src dst bytes\n0 1 1048576\n\n1 0 2097152  # back\n3 2 4.5e3\n", "m", 4) == want);
  CHECK(parse_byte_matrix("{\"pairs\": [[0, 1, 1048576], [1, 0, 2097152],\n [3, 2, 4.5e3]]}", "m", 4) == want);
  CHECK(parse_byte_matrix("\xEF\xBB\xBF{\"pairs\": [[0, 1, 1048576], [1, 0, 2097152], [3, 2, 4500]]}", "m", 4) == want);
  // Tabs, CRLF line ends, a leading '+', no newline at the end.
  CHECK(parse_byte_matrix("0\t1 +1048576\r\n1 0\t2097152\r\n\r\n3 +2 4.5e3", "m", 4) == want);
  CHECK(parse_byte_matrix("", "m", 4) == std::vector<double>(16, 0.0));
  CHECK(parse_byte_matrix("{\"pairs\": []}", "m", 4) == std::vector<double>(16, 0.0));
}

TEST_CASE("byte matrix: every problem names the line of its pair") {
  expect_error("0 1 100\n0 1 200\n", 2, "pair 0 -> 1 given twice");
  expect_error("0 9 100\n", 1, "rank out of range");
  expect_error("0 1 -5\n", 1, "non-negative");
  expect_error("0 1 nan\n", 1, "non-negative");
  expect_error("0 1 inf\n", 1, "non-negative");
  expect_error("0 1 1e300\n", 1, "at most 2^53");
  expect_error("0 1 1e999\n", 1, "out of range");
  expect_error("\n0 99999999999999999999 1\n", 2, "out of range");
  expect_error("0 1\n", 1, "expected `src dst bytes`");
  expect_error("0 1 2 3\n", 1, "expected `src dst bytes`");
  expect_error("0 0x1 2\n", 1, "expected integers");
  expect_error("0 1 2\n1 +-2 2\n", 2, "expected integers");
  expect_error("0 1 12abc\n", 1, "expected integers");
  expect_error("# one\n0 1 2 # two\n2 1 ++3\n", 3, "expected integers");
  expect_error("{\"pairs\": [[0, 1, 100],\n [0, 1]]}", 2, "pairs[1]");
  expect_error("{\"pairs\": [[0, 1, 100],\n [0, 1, 2, 3]]}", 2, "expected [src, dst, bytes]");
  expect_error("{\"pairs\": [[0.5, 1, 100]]}", 1, "integer ranks");
  expect_error("{\"pairs\": [[1e300, 1, 100]]}", 1, "integer ranks");
  expect_error("{\"pairs\": [[0, 1, 1e300]]}", 1, "at most 2^53");
  expect_error("{\"pairs\": [[0, 1, 100]],\n \"pairs\": []}", 2, "key given twice");
  expect_error("{\"pairs\": [],\n \"pears\": []}", 2, "unknown key");
  expect_error("{\"pair\": []}", 1, "unknown key");
  expect_error("{}", 1, "missing");
  expect_error("{\"pairs\": [[0, 1, 100]]}\n[1]", 1, "malformed JSON");
  expect_error("[[0, 1, 100]]", 1, "expected {\"pairs\"");
  expect_error("{\"pairs\": [[0, 1, 100]", 1, "");
  expect_error("{\"pairs\": 7}", 1, "expected a list");
}
