#include "util/output_path.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "util/diagnostics.hpp"

namespace {
std::filesystem::path scratch() {
  static const auto d = std::filesystem::temp_directory_path() / ("hecate-output-path-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("output paths: what stops a write is found before it, and nothing is created") {
  const std::string dir = scratch().string();
  CHECK_FALSE(hs::output_path_problem("-"));
  CHECK_FALSE(hs::output_path_problem(dir + "/new.json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/new.json"));  // checking creates nothing
  CHECK(hs::output_path_problem(dir).value() == "is a directory, expected a file");
  CHECK(hs::output_path_problem(dir + "/missing/x.json").value() == "directory " + dir + "/missing does not exist");
  std::ofstream(dir + "/file") << "x";
  CHECK(hs::output_path_problem(dir + "/file/x.json").value() == dir + "/file is not a directory");
  CHECK_FALSE(hs::output_path_problem(dir + "/file"));  // an existing file is replaced
  if (::geteuid() != 0) {  // root may write anywhere
    std::filesystem::create_directories(dir + "/ro");
    std::filesystem::permissions(dir + "/ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    CHECK(hs::output_path_problem(dir + "/ro/x.json").value().find("is not writable") != std::string::npos);
    std::filesystem::permissions(dir + "/ro", std::filesystem::perms::owner_all);
  }
  try {
    hs::check_output_path(dir + "/missing/x.json", "--out");
    FAIL("no error");
  } catch (const hs::InputError& e) {
    CHECK(hs::to_string(e.diagnostics().front()) ==
          "--out: error: " + dir + "/missing/x.json: directory " + dir + "/missing does not exist");
  }
  CHECK_NOTHROW(hs::check_output_path("", "--report"));  // not given
  std::filesystem::remove_all(dir);
}
