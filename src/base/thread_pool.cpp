#include "base/thread_pool.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "base/error.hpp"

namespace brisk {
namespace {

// The generation the destructor publishes: workers that see it return.
constexpr uint64_t kStop = ~uint64_t(0);
// Polls of an atomic before sleeping on it: with a pause each (40-150 cycles, by CPU), some
// 30-100 microseconds: longer than the gap between two products of a decode step, far shorter
// than a scheduler tick.
constexpr int kSpins = 1 << 11;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Waits until `a` no longer holds `old`: spins first, then sleeps in the kernel.
template <typename T>
T wait_for_change(const std::atomic<T>& a, T old) {
  for (int i = 0; i < kSpins; ++i) {
    T now = a.load(std::memory_order_acquire);
    if (now != old) return now;
    cpu_relax();
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    T now = a.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

void run_chunk(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int chunks, int index) {
  if (index >= chunks) return;
  int64_t begin = n * index / chunks;
  int64_t end = n * (index + 1) / chunks;
  if (begin < end) fn(begin, end);
}

}  // namespace

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
  generation_.store(kStop, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_change(generation_, seen);
    if (seen == kStop) return;
    run_chunk(*job_, job_n_, job_chunks_, index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
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
  job_ = &fn;
  job_n_ = n;
  job_chunks_ = chunks;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(2, std::memory_order_release);  // even steps: never reaches kStop
  generation_.notify_all();
  run_chunk(fn, n, chunks, 0);
  for (int left = pending_.load(std::memory_order_acquire); left != 0;)
    left = wait_for_change(pending_, left);
}

}  // namespace brisk
