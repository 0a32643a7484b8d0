#include "util/interrupt.hpp"

#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace hs {

namespace {

// Fixed slots: the handler may only use async-signal-safe calls (unlink, write, _exit) and no
// allocation, so paths live in static buffers claimed with an atomic flag.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
std::atomic<int> used[kSlots];
char paths[kSlots][kPathMax];

extern "C" void on_signal(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (used[i].load() == 2) unlink(paths[i]);
  const char* msg = sig == SIGINT ? "hecate-sim: interrupted (SIGINT): unfinished outputs removed\n"
                                  : "hecate-sim: terminated (SIGTERM): unfinished outputs removed\n";
  [[maybe_unused]] auto n = write(2, msg, std::strlen(msg));
  _exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

TempFileGuard::TempFileGuard(const std::string& path) {
  if (path.size() >= kPathMax) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (used[i].compare_exchange_strong(expected, 1)) {
      std::memcpy(paths[i], path.c_str(), path.size() + 1);
      used[i].store(2);  // complete: the handler may use it
      slot_ = i;
      return;
    }
  }
}

void TempFileGuard::release() {
  if (slot_ >= 0) used[slot_].store(0);
  slot_ = -1;
}

}  // namespace hs
