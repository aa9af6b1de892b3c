// Where a key or value row lives in the paged KV cache, as host and device code both compute
// it. The pool is [layer][block][kv_head][block_size][head_dim] elements (float32, or bf16 in
// the CUDA fast mode; offsets here count elements); a sequence slot's row of the block table
// names the pool block holding its positions [i * block_size, (i + 1) * block_size). Within
// a block one head's rows are contiguous, so a kernel reads a block's keys as one run and
// looks the table up once per block (or per row where simpler).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define BRISK_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define BRISK_HOST_DEVICE inline
#endif

namespace brisk {

// One layer's view of the cache, passed to kernels by value.
struct KvPages {
  const int32_t* table = nullptr;  // [n_seqs][table_stride], backend memory
  int64_t layer_off = 0;           // elements from the pool's start to this layer
  int64_t block_stride = 0;        // elements per block (all heads)
  int32_t table_stride = 0;        // blocks per sequence
  int32_t block_shift = 0;         // log2(block_size)
  int32_t head_dim = 0;

  // Offset in elements of the row (seq, kv head, position).
  BRISK_HOST_DEVICE int64_t row(int64_t seq, int64_t kvh, int64_t pos) const {
    const int64_t block = table[seq * table_stride + (pos >> block_shift)];
    const int64_t in_block = (kvh << block_shift) | (pos & ((int64_t(1) << block_shift) - 1));
    return layer_off + block * block_stride + in_block * head_dim;
  }
  // Rows of one head left in the block that holds `pos` (a contiguous run from row(pos)).
  BRISK_HOST_DEVICE int64_t run(int64_t pos) const {
    return (int64_t(1) << block_shift) - (pos & ((int64_t(1) << block_shift) - 1));
  }
};

}  // namespace brisk
