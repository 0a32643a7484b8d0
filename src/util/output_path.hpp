// Output paths are checked before any work starts, so a typo in --out fails in a second rather than
// after an hour of simulation. Checking creates nothing: outputs are still written at the end,
// atomically (atomic_file.hpp), into the same directory.
#pragma once

#include <optional>
#include <string>

namespace hs {

// What stops `path` from being written by write_file_atomically, or nullopt when nothing does:
// "-" (stdout) is always fine; otherwise the path must not be an existing directory and its
// directory ("." for a bare name) must exist, be a directory and be writable and searchable.
std::optional<std::string> output_path_problem(const std::string& path);

// Throws InputError located at `option` (e.g. "--out") naming the path and the reason when
// output_path_problem finds one; an empty path (option not given) is fine.
void check_output_path(const std::string& path, const std::string& option);

}  // namespace hs
