// Outputs are written atomically: to a temporary file in the same directory, then renamed over the
// target, so a reader never sees half a file and a failed run leaves the old file intact.
#pragma once

#include <string>
#include <string_view>

namespace hs {

// Writes `content` to `path` atomically. "-" means stdout. Throws std::runtime_error on I/O failure.
void write_file_atomically(const std::string& path, std::string_view content);

// Reads a whole file; a path ending in ".gz" is decompressed. Throws InputError naming the file (a
// directory: "is a directory, expected a file").
std::string read_file(const std::string& path);

}  // namespace hs
