// Safe interruption: SIGINT and SIGTERM remove every temporary output file still being written
// (outputs are written to PATH.tmp.PID and renamed into place, util/atomic_file.hpp), print one line
// on stderr and exit with 130 (SIGINT) or 143 (SIGTERM), the shells' 128 + signal. No output file is
// ever left half-written: a finished one was renamed whole, an unfinished one is removed.
#pragma once

#include <string>

namespace hs {

inline constexpr int kExitInterrupted = 130;  // SIGINT; SIGTERM gives 143

void install_interrupt_handlers();

// Registers a temporary file for removal on interruption while it exists; release() (or the
// destructor) unregisters it once it was renamed or removed.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::string& path);
  ~TempFileGuard() { release(); }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  void release();

 private:
  int slot_ = -1;
};

}  // namespace hs
