// The engine's view of the paged KV pool (vLLM's BlockManager): which blocks are
// free, which a running sequence holds (reference-counted, since sequences with a common
// prompt prefix share its full blocks), and which hold a prefix that no sequence uses now
// but a later prompt may reuse. Those cached blocks are taken back least recently used
// first, only when no free block is left. A cached block is found by the hash of its
// tokens chained with its parent's, and checked against its own tokens and parent hash.
// Blocks are taken as a sequence grows: its prompt's at admission, one more each time
// decoding crosses into a new block; nothing is reserved for tokens not yet generated.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace brisk {

struct Sequence;

class BlockManager {
 public:
  BlockManager(int64_t n_blocks, int block_size);

  int block_size() const { return block_size_; }
  int64_t total() const { return int64_t(blocks_.size()); }
  int64_t used() const { return used_; }                  // held by at least one sequence
  int64_t cached() const { return int64_t(lru_.size()); }  // unreferenced, holding a known prefix
  int64_t available() const { return total() - used_; }   // free or cached: what allocate can give

  // Blocks needed for `positions` positions.
  int64_t blocks_for(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }

  // The cached blocks that hold the longest run of whole blocks starting `tokens`, at most
  // max_blocks of them; each is referenced once more (release them with the rest).
  std::vector<int32_t> match_prefix(std::span<const int32_t> tokens, int64_t max_blocks);

  // n more blocks, referenced once: free ones first, then the least recently used cached
  // ones (which leave the cache). Throws Error(kInternal) when fewer than n are available.
  std::vector<int32_t> allocate(int64_t n);

  // blocks[i] holds tokens [i * block_size, (i + 1) * block_size) of `tokens`; the first
  // n_full of them are complete and now shareable. A block whose prefix is already cached
  // under another block stays private.
  void publish(std::span<const int32_t> blocks, std::span<const int32_t> tokens, int64_t n_full);

  // Drops one reference to each block; unreferenced cached blocks become the most recently
  // used, the others free.
  void release(std::span<const int32_t> blocks);

  // Sequence-level steps. The blocks a sequence needs to run now: its tokens' (less the
  // cached prefix found, with prefix_cache) and one to grow into.
  bool can_allocate(const Sequence& s, bool prefix_cache);
  // Gives a waiting sequence its tokens' blocks, the cached prefix first (never the block of
  // its last token, whose logits a prefill must produce); sets s.computed past that prefix.
  void allocate(Sequence& s, bool prefix_cache);
  // Whether the next decode step of s has a block for its position (taking one if needed
  // and possible).
  bool grow(Sequence& s);
  // Publishes the full blocks of s's computed tokens (with prefix_cache), so a recompute or
  // a later prompt with the same prefix skips them; then gives all its blocks back.
  void deallocate(Sequence& s, bool prefix_cache);

 private:
  struct Block {
    int32_t refs = 0;
    bool cached = false;
    uint64_t hash = 0, parent = 0;
    std::vector<int32_t> tokens;
    std::list<int32_t>::iterator lru;  // valid when cached and refs == 0
  };
  uint64_t chain(uint64_t parent, std::span<const int32_t> block_tokens) const;
  void uncache(int32_t id);

  int block_size_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // front: least recently used
  std::unordered_map<uint64_t, int32_t> by_hash_;
  int64_t used_ = 0;
};

}  // namespace brisk
