#include "util/atomic_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/diagnostics.hpp"
#include "util/interrupt.hpp"

namespace hs {

void write_file_atomically(const std::string& path, std::string_view content) {
  if (path == "-") {
    fwrite(content.data(), 1, content.size(), stdout);
    fflush(stdout);
    return;
  }
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  TempFileGuard guard(tmp);  // removed if the process is interrupted before the rename
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    gzFile g = gzopen(tmp.c_str(), "wb6");
    if (!g) throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    size_t off = 0;
    bool ok = true;
    while (ok && off < content.size()) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(content.size() - off, 1u << 30));
      ok = gzwrite(g, content.data() + off, chunk) == static_cast<int>(chunk);
      off += chunk;
    }
    ok = (gzclose(g) == Z_OK) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("{}: cannot write compressed output", path));
    }
    return;
  }
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot write: {}", path, why));
  }
}

std::string read_file(const std::string& path) {
  // fopen opens a directory and the first read fails (EISDIR): say what is wrong before that.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(SourceLocation{path, 0, 0}, "", "is a directory, expected a file");
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::string out;
  if (gz) {
    gzFile g = gzopen(path.c_str(), "rb");
    if (!g) throw InputError(SourceLocation{path, 0, 0}, "", fmt::format("cannot open: {}", std::strerror(errno)));
    char buf[1 << 16];
    int n;
    while ((n = gzread(g, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    int err = 0;
    const char* msg = gzerror(g, &err);
    const std::string why = msg ? msg : "?";  // gzerror's text belongs to the gzFile: copy it before gzclose
    gzclose(g);
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
      throw InputError(SourceLocation{path, 0, 0}, "", fmt::format("corrupt gzip data: {}", why));
    return out;
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(SourceLocation{path, 0, 0}, "", fmt::format("cannot open: {}", std::strerror(errno)));
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int why = errno;
  const bool err = std::ferror(f);
  std::fclose(f);
  if (err) throw InputError(SourceLocation{path, 0, 0}, "", fmt::format("read error: {}", std::strerror(why)));
  return out;
}

}  // namespace hs
