#include "engine/block_manager.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "engine/sequence.hpp"

namespace brisk {

BlockManager::BlockManager(int64_t n_blocks, int block_size) : block_size_(block_size) {
  if (n_blocks < 1 || n_blocks > INT32_MAX || block_size < 1)
    throw Error(ErrorCode::kInvalidArgument, "the KV pool needs at least one block");
  blocks_.resize(size_t(n_blocks));
  free_.reserve(size_t(n_blocks));
  for (int64_t i = n_blocks - 1; i >= 0; --i) free_.push_back(int32_t(i));  // block 0 first
}

uint64_t BlockManager::chain(uint64_t parent, std::span<const int32_t> block_tokens) const {
  // FNV-1a over the tokens, seeded with the parent's hash, then a splitmix finaliser.
  uint64_t h = parent ^ 0xcbf29ce484222325ull;
  for (int32_t t : block_tokens) {
    for (int b = 0; b < 4; ++b) h = (h ^ ((uint32_t(t) >> (8 * b)) & 0xff)) * 0x100000001b3ull;
  }
  h ^= h >> 30, h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27, h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

std::vector<int32_t> BlockManager::match_prefix(std::span<const int32_t> tokens, int64_t max_blocks) {
  std::vector<int32_t> out;
  uint64_t parent = 0;
  const int64_t whole = std::min<int64_t>(max_blocks, int64_t(tokens.size()) / block_size_);
  for (int64_t i = 0; i < whole; ++i) {
    auto part = tokens.subspan(size_t(i * block_size_), size_t(block_size_));
    const uint64_t h = chain(parent, part);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    Block& b = blocks_[size_t(it->second)];
    if (b.parent != parent || !std::equal(part.begin(), part.end(), b.tokens.begin(), b.tokens.end())) break;
    if (b.refs++ == 0) {
      lru_.erase(b.lru);
      ++used_;
    }
    out.push_back(it->second);
    parent = h;
  }
  return out;
}

void BlockManager::uncache(int32_t id) {
  Block& b = blocks_[size_t(id)];
  by_hash_.erase(b.hash);
  b.cached = false;
  b.tokens.clear();
  b.tokens.shrink_to_fit();
}

std::vector<int32_t> BlockManager::allocate(int64_t n) {
  if (n < 0 || n > available()) throw Error(ErrorCode::kInternal, "KV pool exhausted");
  std::vector<int32_t> out;
  out.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = lru_.front();
      lru_.pop_front();
      uncache(id);
    }
    blocks_[size_t(id)].refs = 1;
    ++used_;
    out.push_back(id);
  }
  return out;
}

void BlockManager::publish(std::span<const int32_t> blocks, std::span<const int32_t> tokens, int64_t n_full) {
  n_full = std::min<int64_t>({n_full, int64_t(blocks.size()), int64_t(tokens.size()) / block_size_});
  uint64_t parent = 0;
  for (int64_t i = 0; i < n_full; ++i) {
    auto part = tokens.subspan(size_t(i * block_size_), size_t(block_size_));
    const uint64_t h = chain(parent, part);
    Block& b = blocks_[size_t(blocks[size_t(i)])];
    if (!b.cached && !by_hash_.contains(h)) {
      b.cached = true;
      b.hash = h;
      b.parent = parent;
      b.tokens.assign(part.begin(), part.end());
      by_hash_.emplace(h, blocks[size_t(i)]);
    }
    parent = h;
  }
}

void BlockManager::release(std::span<const int32_t> blocks) {
  for (int32_t id : blocks) {
    Block& b = blocks_[size_t(id)];
    if (b.refs <= 0) throw Error(ErrorCode::kInternal, "KV block released twice");
    if (--b.refs > 0) continue;
    --used_;
    if (b.cached) b.lru = lru_.insert(lru_.end(), id);
    else free_.push_back(id);
  }
}

}  // namespace brisk

namespace brisk {

bool BlockManager::can_allocate(const Sequence& s, bool prefix_cache) {
  const int64_t n = int64_t(s.tokens.size());
  std::vector<int32_t> hit;
  if (prefix_cache) hit = match_prefix(s.tokens, (n - 1) / block_size_);
  // (one to grow into, unless that is more than the whole pool: then it must end first)
  const int64_t fresh = std::min(blocks_for(n + 1), total()) - int64_t(hit.size());
  // The matched blocks count as available while cached; they stay so after this probe.
  int64_t reusable = 0;
  for (int32_t id : hit) reusable += blocks_[size_t(id)].refs == 1;
  release(hit);
  return fresh <= available() - reusable;
}

void BlockManager::allocate(Sequence& s, bool prefix_cache) {
  const int64_t n = int64_t(s.tokens.size());
  s.blocks.clear();
  if (prefix_cache) s.blocks = match_prefix(s.tokens, (n - 1) / block_size_);
  s.computed = int64_t(s.blocks.size()) * block_size_;
  const std::vector<int32_t> more = allocate(blocks_for(n) - int64_t(s.blocks.size()));
  s.blocks.insert(s.blocks.end(), more.begin(), more.end());
}

bool BlockManager::grow(Sequence& s) {
  if (blocks_for(s.decode_position() + 1) <= int64_t(s.blocks.size())) return true;
  if (available() < 1) return false;
  s.blocks.push_back(allocate(1).front());
  return true;
}

void BlockManager::deallocate(Sequence& s, bool prefix_cache) {
  if (prefix_cache) publish(s.blocks, s.tokens, s.computed / block_size_);
  release(s.blocks);
  s.blocks.clear();
  s.computed = 0;
}

}  // namespace brisk
