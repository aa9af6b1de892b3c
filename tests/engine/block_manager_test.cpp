// The KV block pool on its own: reference counts, the prefix cache's matching (whole blocks
// only, checked against the tokens), least-recently-used reuse, and exhaustion.
#include "engine/block_manager.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "base/error.hpp"

namespace brisk {
namespace {

std::vector<int32_t> tokens(int n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(BlockManager, AllocateAndReleaseCountBlocks) {
  BlockManager pool(6, 4);
  EXPECT_EQ(pool.blocks_for(0), 0);
  EXPECT_EQ(pool.blocks_for(4), 1);
  EXPECT_EQ(pool.blocks_for(5), 2);
  auto a = pool.allocate(4);
  EXPECT_EQ(pool.used(), 4);
  EXPECT_EQ(pool.available(), 2);
  EXPECT_THROW(pool.allocate(3), Error);
  pool.release(a);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(pool.available(), 6);
  EXPECT_THROW(pool.release(a), Error) << "a second release is a bug, not a silent underflow";
}

TEST(BlockManager, PublishedPrefixIsSharedWholeBlocksOnly) {
  BlockManager pool(8, 4);
  const auto prompt = tokens(10, 100);  // two whole blocks and a partial one
  auto a = pool.allocate(3);
  pool.publish(a, prompt, 2);
  // The same prompt finds both whole blocks; a prompt that differs in block 1 finds one.
  auto hit = pool.match_prefix(prompt, 8);
  ASSERT_EQ(hit.size(), 2u);
  EXPECT_EQ(hit[0], a[0]);
  EXPECT_EQ(hit[1], a[1]);
  auto other = prompt;
  other[6] = 7;
  auto partial = pool.match_prefix(other, 8);
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_EQ(partial[0], a[0]);
  // A different first block shares nothing, even if later blocks are equal.
  auto shifted = prompt;
  shifted[0] = 1;
  EXPECT_TRUE(pool.match_prefix(shifted, 8).empty());
  // max_blocks caps the match.
  EXPECT_EQ(pool.match_prefix(prompt, 1).size(), 1u);
  // Shared blocks count once as used.
  EXPECT_EQ(pool.used(), 3);
}

TEST(BlockManager, UnusedCachedBlocksAreReusedLeastRecentlyUsedFirst) {
  BlockManager pool(4, 2);
  const auto p1 = tokens(2, 10), p2 = tokens(2, 20), p3 = tokens(2, 30);
  auto a = pool.allocate(1), b = pool.allocate(1), c = pool.allocate(1);
  pool.publish(a, p1, 1);
  pool.publish(b, p2, 1);
  pool.publish(c, p3, 1);
  pool.release(b);  // b goes first: least recently used
  pool.release(a);
  pool.release(c);
  EXPECT_EQ(pool.cached(), 3);
  EXPECT_EQ(pool.available(), 4);
  auto fresh = pool.allocate(1);  // the never-used block, not a cached one
  EXPECT_EQ(pool.cached(), 3);
  auto evict = pool.allocate(1);
  EXPECT_EQ(evict[0], b[0]);
  EXPECT_TRUE(pool.match_prefix(p2, 1).empty()) << "an evicted block leaves the cache";
  auto again = pool.match_prefix(p1, 1);  // a hit takes a cached block out of the LRU list
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], a[0]);
  EXPECT_EQ(pool.cached(), 1);
  auto last = pool.allocate(1);
  EXPECT_EQ(last[0], c[0]);
  EXPECT_THROW(pool.allocate(1), Error);
}

TEST(BlockManager, SecondCopyOfAPrefixStaysPrivate) {
  BlockManager pool(4, 2);
  const auto p = tokens(4, 50);
  auto a = pool.allocate(2), b = pool.allocate(2);
  pool.publish(a, p, 2);
  pool.publish(b, p, 2);  // computed concurrently: the first copy is the cached one
  pool.release(b);
  EXPECT_EQ(pool.cached(), 0) << "b's blocks are free, not cached";
  pool.release(a);
  EXPECT_EQ(pool.cached(), 2);
  EXPECT_EQ(pool.match_prefix(p, 2), a);
}

}  // namespace
}  // namespace brisk
