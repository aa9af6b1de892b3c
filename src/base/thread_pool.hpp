// A fixed pool of worker threads for splitting independent outputs across cores.
// parallel_for hands each worker a contiguous range of indices; since every output is
// computed whole by one worker, results never depend on how many threads there are.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace brisk {

class ThreadPool {
 public:
  // n_threads <= 0: one per hardware core. Throws Error(kLimit) when the system refuses to
  // start that many threads.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(begin, end) over [0, n) split into at most size() contiguous chunks of at least
  // `grain` items; blocks until all chunks are done. Not reentrant.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker(int index);
  void stop_workers();

  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace brisk
