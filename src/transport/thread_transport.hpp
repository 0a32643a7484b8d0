// An in-process transport: one thread per rank, a mailbox per destination rank. Sends are eager
// (the data is copied into the destination's mailbox at once, never blocking), receives wait for
// the first message from their source, so the plan executor's logic is testable without MPI and
// with every message accounted for (ThreadFabric::log, undelivered).
//
// A receive that waits longer than the fabric's timeout throws instead of hanging a test, and a rank
// that fails aborts the fabric: the other ranks' waits throw at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/transport.hpp"

namespace hs::transport {

class ThreadFabric {
 public:
  explicit ThreadFabric(int ranks, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  int size() const { return static_cast<int>(boxes_.size()); }

  struct Message {
    int src = 0, dst = 0;
    std::size_t floats = 0;
  };
  // Every message sent so far (across threads the order is that of posting, not deterministic).
  std::vector<Message> log() const;
  // Messages sent but never received.
  std::size_t undelivered() const;
  // Wakes every waiting receive with an error (a rank failed).
  void abort();

  void post(int src, int dst, std::span<const float> data);
  // Waits for the first message from `src` in `dst`'s mailbox and removes it.
  std::vector<float> take(int src, int dst);

 private:
  struct Mailbox {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::pair<int, std::vector<float>>> queue;  // (src, data) in arrival order
  };
  std::vector<std::unique_ptr<Mailbox>> boxes_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex log_m_;
  std::vector<Message> log_;
  std::atomic<bool> aborted_{false};
};

class ThreadTransport final : public Transport {
 public:
  ThreadTransport(ThreadFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return fabric_.size(); }
  void group_start() override;
  void send(int dst, std::span<const float> data) override;
  void recv(int src, std::span<float> data) override;
  void group_end() override;

 private:
  void complete(int src, std::span<float> data);
  ThreadFabric& fabric_;
  int rank_;
  bool in_group_ = false;
  std::vector<std::pair<int, std::span<float>>> pending_;  // receives posted in the open group
};

// Runs fn on one thread per rank of `fabric`, each with its ThreadTransport; waits for all and
// rethrows the exception of the lowest failing rank (which aborted the fabric for the others).
void run_on_threads(ThreadFabric& fabric, const std::function<void(Transport&)>& fn);

}  // namespace hs::transport
