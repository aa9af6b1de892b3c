// The thread pool: every index is handed out exactly once, in contiguous chunks that depend
// only on n, grain and the pool's size; back-to-back jobs (the decode step's pattern) and jobs
// after an idle pause (workers asleep) all complete.
#include "base/thread_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace brisk {
namespace {

std::vector<int> coverage(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
  }, grain);
  std::vector<int> out;
  for (auto& h : hits) out.push_back(h.load());
  return out;
}

TEST(ThreadPool, EveryIndexOnceForAnySizeAndGrain) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001})
      for (int64_t grain : {1, 4, 100}) {
        auto hits = coverage(pool, n, grain);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)], 1) << threads << " " << n << " " << grain << " " << i;
      }
  }
}

TEST(ThreadPool, ChunksAreContiguousAndAtMostOnePerThread) {
  ThreadPool pool(4);
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.parallel_for(10, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace_back(b, e);
  });
  ASSERT_EQ(chunks.size(), 4u);
  std::sort(chunks.begin(), chunks.end());
  EXPECT_EQ(chunks.front().first, 0);
  for (size_t i = 1; i < chunks.size(); ++i) EXPECT_EQ(chunks[i].first, chunks[i - 1].second);
  EXPECT_EQ(chunks.back().second, 10);
  chunks.clear();
  pool.parallel_for(10, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace_back(b, e);
  }, 5);  // a grain of 5: two chunks
  EXPECT_EQ(chunks.size(), 2u);
}

TEST(ThreadPool, ManyBackToBackJobsAndJobsAfterSleeping) {
  ThreadPool pool(3);
  int64_t total = 0;
  for (int round = 0; round < 20000; ++round) {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(30, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
    });
    total += sum.load();
    if (round % 5000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers go to sleep
  }
  EXPECT_EQ(total, int64_t(20000) * (29 * 30 / 2));
}

TEST(ThreadPool, WritesOfTheWorkersAreVisibleAfterTheCall) {
  ThreadPool pool(4);
  std::vector<int64_t> out(4096);
  for (int round = 1; round <= 200; ++round) {
    pool.parallel_for(int64_t(out.size()), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[size_t(i)] = i * round;  // plain stores
    });
    for (size_t i = 0; i < out.size(); i += 97) ASSERT_EQ(out[i], int64_t(i) * round);
  }
}

TEST(ThreadPool, DestroyedWhileIdleAndRightAfterAJob) {
  for (int k = 0; k < 50; ++k) {
    ThreadPool idle(4);
    ThreadPool busy(4);
    std::atomic<int> n{0};
    busy.parallel_for(8, [&](int64_t b, int64_t e) { n.fetch_add(int(e - b)); });
    EXPECT_EQ(n.load(), 8);
  }
}

}  // namespace
}  // namespace brisk
