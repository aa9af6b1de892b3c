#include "base/thread_pool.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "base/error.hpp"

namespace brisk {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  // The system may refuse a thread (address space, process limits): the ones already running
  // are stopped and joined, and the caller gets an Error instead of a pool that waits forever.
  try {
    threads_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
  } catch (const std::system_error& e) {
    const size_t started = threads_.size() + 1;
    stop_workers();
    throw Error(ErrorCode::kLimit, "could start only " + std::to_string(started) + " of " +
                                       std::to_string(n_threads_) + " threads (" + e.what() +
                                       "): ask for fewer with -t");
  } catch (...) {
    stop_workers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

static void run_chunk(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int chunks, int index) {
  if (index >= chunks) return;
  int64_t begin = n * index / chunks;
  int64_t end = n * (index + 1) / chunks;
  if (begin < end) fn(begin, end);
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int chunks;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    run_chunk(*job, n, chunks, index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  int chunks = int(std::min<int64_t>(n_threads_, max_chunks));
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  run_chunk(fn, n, chunks, 0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace brisk
