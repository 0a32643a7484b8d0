#include "transport/thread_transport.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <thread>
#include <fmt/format.h>

namespace hs::transport {

ThreadFabric::ThreadFabric(int ranks, std::chrono::milliseconds timeout) : timeout_(timeout) {
  if (ranks < 1) throw std::invalid_argument("ThreadFabric: at least one rank");
  for (int r = 0; r < ranks; ++r) boxes_.push_back(std::make_unique<Mailbox>());
}

std::vector<ThreadFabric::Message> ThreadFabric::log() const {
  std::lock_guard lk(log_m_);
  return log_;
}

std::size_t ThreadFabric::undelivered() const {
  std::size_t n = 0;
  for (const auto& b : boxes_) {
    std::lock_guard lk(b->m);
    n += b->queue.size();
  }
  return n;
}

namespace {

// What a rank waiting on a message throws when another rank failed: not a failure of its own.
struct Aborted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

void ThreadFabric::abort() {
  aborted_ = true;
  for (auto& b : boxes_) {
    std::lock_guard lk(b->m);  // a waiter checks the flag under its mailbox lock: no lost wake-up
    b->cv.notify_all();
  }
}

void ThreadFabric::post(int src, int dst, std::span<const float> data) {
  if (dst < 0 || dst >= size()) throw std::out_of_range(fmt::format("rank {} sends to rank {} of {}", src, dst, size()));
  {
    std::lock_guard lk(log_m_);
    log_.push_back({src, dst, data.size()});
  }
  Mailbox& b = *boxes_[dst];
  {
    std::lock_guard lk(b.m);
    b.queue.emplace_back(src, std::vector<float>(data.begin(), data.end()));
  }
  b.cv.notify_all();
}

std::vector<float> ThreadFabric::take(int src, int dst) {
  if (src < 0 || src >= size()) throw std::out_of_range(fmt::format("rank {} receives from rank {} of {}", dst, src, size()));
  Mailbox& b = *boxes_[dst];
  std::unique_lock lk(b.m);
  std::vector<float> out;
  bool aborted = false;
  const bool got = b.cv.wait_for(lk, timeout_, [&] {
    if ((aborted = aborted_.load())) return true;
    auto it = std::find_if(b.queue.begin(), b.queue.end(), [&](const auto& m) { return m.first == src; });
    if (it == b.queue.end()) return false;
    out = std::move(it->second);
    b.queue.erase(it);
    return true;
  });
  if (aborted) throw Aborted(fmt::format("rank {}: another rank failed while waiting for rank {}", dst, src));
  if (!got)
    throw std::runtime_error(fmt::format("rank {}: no message from rank {} within {} ms (deadlock or missing send)", dst,
                                         src, timeout_.count()));
  return out;
}

void ThreadTransport::group_start() {
  if (in_group_) throw std::logic_error("group_start inside a group");
  in_group_ = true;
}

void ThreadTransport::send(int dst, std::span<const float> data) { fabric_.post(rank_, dst, data); }

void ThreadTransport::recv(int src, std::span<float> data) {
  if (in_group_) pending_.emplace_back(src, data);
  else complete(src, data);
}

void ThreadTransport::group_end() {
  if (!in_group_) throw std::logic_error("group_end without group_start");
  in_group_ = false;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [src, data] : pending) complete(src, data);
}

void ThreadTransport::complete(int src, std::span<float> data) {
  const std::vector<float> m = fabric_.take(src, rank_);
  if (m.size() != data.size())
    throw std::runtime_error(
        fmt::format("rank {}: message from rank {} has {} floats, expected {}", rank_, src, m.size(), data.size()));
  std::copy(m.begin(), m.end(), data.begin());
}

void run_on_threads(ThreadFabric& fabric, const std::function<void(Transport&)>& fn) {
  const int n = fabric.size();
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ThreadTransport t(fabric, r);
      try {
        fn(t);
      } catch (...) {
        errors[r] = std::current_exception();
        fabric.abort();
      }
    });
  for (auto& th : threads) th.join();
  // The lowest rank that failed for a reason of its own (not aborted by another): deterministic.
  std::exception_ptr aborted;
  for (auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Aborted&) {
      if (!aborted) aborted = e;
    } catch (...) {
      throw;
    }
  }
  if (aborted) std::rethrow_exception(aborted);
}

}  // namespace hs::transport
