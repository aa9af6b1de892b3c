// A fixed pool of worker threads for splitting independent outputs across cores.
// parallel_for hands each worker a contiguous range of indices; since every output is
// computed whole by one worker, results never depend on how many threads there are.
//
// A decode step dispatches a few hundred small jobs, so a wake-up through a mutex and a
// condition variable (tens of microseconds each) would cost a good share of it. Workers
// therefore spin on an atomic job counter for a short while after each job and only then
// sleep on it (C++20 atomic wait: a futex); the caller spins on the pending count likewise.
// The spin is bounded, so an idle pool sleeps and an oversubscribed machine is not starved.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
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
  // The job, written by parallel_for before it bumps generation_ (release) and read by the
  // workers after they see the new generation (acquire).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  alignas(64) std::atomic<uint64_t> generation_{0};  // +2 per job, so only stop makes it kStop (odd)
  alignas(64) std::atomic<int> pending_{0};          // workers still running this generation
};

}  // namespace brisk
