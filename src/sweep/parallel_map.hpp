// Runs eval(i) for i = 0..count-1 on `jobs` threads and hands each result to commit(i, result) on the
// calling thread in index order, as soon as every earlier index is committed. The order of commits,
// and so whatever commit writes, is the same for any number of jobs. An exception thrown by eval stops
// the remaining work and is rethrown here after the threads have finished.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace hs::sweep {

template <class R, class Eval, class Commit>
void parallel_map_ordered(size_t count, int jobs, Eval eval, Commit commit) {
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(count)));
  std::vector<std::optional<R>> done(count);
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  auto worker = [&] {
    while (!stop) {
      const size_t i = next++;
      if (i >= count) break;
      try {
        R r = eval(i);
        std::lock_guard<std::mutex> lock(mu);
        done[i] = std::move(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        stop = true;
      }
      cv.notify_one();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  size_t committed = 0;
  while (committed < count) {
    std::optional<R> r;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done[committed].has_value() || stop; });
      if (!done[committed]) break;  // stopped by an error
      r = std::move(done[committed]);
      done[committed].reset();
    }
    try {
      commit(committed, std::move(*r));
    } catch (...) {
      stop = true;
      for (auto& t : threads) t.join();
      throw;
    }
    ++committed;
  }
  stop = stop || committed < count;
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace hs::sweep
