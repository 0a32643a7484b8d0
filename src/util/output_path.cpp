#include "util/output_path.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/diagnostics.hpp"

namespace hs {

std::optional<std::string> output_path_problem(const std::string& path) {
  if (path == "-") return std::nullopt;
  if (path.empty()) return std::string("empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return std::string("is a directory, expected a file");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return fmt::format("directory {} does not exist", dir);
    if (errno == ENOTDIR) return fmt::format("{} is not a directory", dir);
    return fmt::format("directory {}: {}", dir, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir);
  // The temporary file is created in this directory and renamed over the target.
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("directory {} is not writable ({})", dir, std::strerror(errno));
  return std::nullopt;
}

void check_output_path(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  if (auto why = output_path_problem(path)) throw InputError({option, 0, 0}, path, *why);
}

}  // namespace hs
