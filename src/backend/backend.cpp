#include "backend/backend.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace brisk {

KvPages KvCache::pages(int layer) const {
  int shift = 0;
  while ((1 << shift) < block_size) ++shift;
  return KvPages{table, int64_t(layer) * layer_stride(), block_stride(), blocks_per_seq, shift, head_dim};
}

void Backend::check_kv_block_size(int block_size) {
  if (block_size < 1 || (block_size & (block_size - 1)) != 0 || block_size > kMaxKvBlockSize)
    throw Error(ErrorCode::kInvalidArgument,
                "the KV block size must be a power of two up to " + std::to_string(kMaxKvBlockSize) + ", got " +
                    std::to_string(block_size),
                "kv_block_size");
}

KvCache Backend::alloc_kv(int n_layers, int n_kv_heads, int head_dim, int64_t capacity, int n_seqs, int64_t n_blocks,
                          int block_size) {
  check_kv_block_size(block_size);
  if (capacity < 1 || n_seqs < 1) throw Error(ErrorCode::kInvalidArgument, "the KV cache needs a sequence and a position");
  KvCache kv;
  kv.n_layers = n_layers, kv.n_kv_heads = n_kv_heads, kv.head_dim = head_dim;
  kv.n_seqs = n_seqs;
  kv.block_size = block_size;
  const int64_t per_seq = (capacity + block_size - 1) / block_size;
  kv.n_blocks = n_blocks > 0 ? n_blocks : per_seq * n_seqs;
  if (per_seq > INT32_MAX || kv.n_blocks > INT32_MAX)
    throw Error(ErrorCode::kLimit, "the KV cache for " + std::to_string(n_seqs) + " x " + std::to_string(capacity) +
                                       " positions needs more blocks than a block table can name; use a shorter "
                                       "context (-c) or larger blocks");
  kv.blocks_per_seq = int(per_seq);
  kv.capacity = per_seq * block_size;
  kv.elem_bytes = kv_elem_bytes();
  const uint64_t bytes = uint64_t(kv.layer_stride()) * uint64_t(n_layers) * uint64_t(kv.elem_bytes);
  const uint64_t table_bytes = uint64_t(per_seq) * uint64_t(n_seqs) * 4;
  try {
    kv.k = alloc_bytes(bytes);
    kv.v = alloc_bytes(bytes);
    kv.table = static_cast<int32_t*>(alloc_bytes(table_bytes));
  } catch (const Error& e) {
    release_kv(kv);
    throw Error(ErrorCode::kLimit, "the KV cache of " + std::to_string(kv.n_blocks) + " blocks of " +
                                       std::to_string(block_size) + " positions (2 x " + std::to_string(bytes >> 20) +
                                       " MiB) does not fit on " + name() + ": " + e.what() +
                                       "; use a shorter context (-c) or less KV memory");
  }
  // Slot s's own run of blocks where the pool has room; entries past the pool wrap to 0
  // (a pool smaller than n_seqs * blocks_per_seq is meant for set_kv_blocks).
  std::vector<int32_t> identity(size_t(per_seq) * size_t(n_seqs));
  for (size_t i = 0; i < identity.size(); ++i) identity[i] = int64_t(i) < kv.n_blocks ? int32_t(i) : 0;
  copy_from_host(identity.data(), kv.table, table_bytes);
  return kv;
}

void Backend::release_kv(KvCache& kv) {
  if (kv.k) release_bytes(kv.k);
  if (kv.v) release_bytes(kv.v);
  if (kv.table) release_bytes(kv.table);
  kv.k = kv.v = nullptr;
  kv.table = nullptr;
}

void Backend::set_kv_blocks(KvCache& kv, int seq, const int32_t* blocks, int count) {
  if (seq < 0 || seq >= kv.n_seqs || count < 0 || count > kv.blocks_per_seq)
    throw Error(ErrorCode::kInternal, "KV block table row out of range");
  for (int i = 0; i < count; ++i)
    if (blocks[i] < 0 || blocks[i] >= kv.n_blocks) throw Error(ErrorCode::kInternal, "KV block outside the pool");
  copy_from_host(blocks, kv.table + int64_t(seq) * kv.blocks_per_seq, uint64_t(count) * 4);
}

void Backend::upload_adjacent(const WeightView* const* ws, int count, DeviceWeight* out) {
  for (int i = 0; i < count; ++i) out[i] = ws[i]->data ? upload(*ws[i]) : DeviceWeight{};
}

void Backend::mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows,
                          int64_t n) {
  std::vector<float> row(static_cast<size_t>(vocab));
  const int64_t words = (vocab + 63) / 64;
  for (int64_t i = 0; i < n; ++i) {
    float* dst = logits + int64_t(rows[i]) * stride;
    to_host(dst, row.data(), vocab);
    apply_token_mask(row.data(), vocab, bits + i * words);
    copy_from_host(row.data(), dst, uint64_t(vocab) * 4);
  }
}

void apply_token_mask(float* row, int64_t vocab, const uint64_t* mask) {
  for (int64_t t = 0; t < vocab; ++t)
    if (!((mask[t >> 6] >> (t & 63)) & 1)) row[t] = -INFINITY;
}

void Backend::matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                           const DeviceWeight* const* biases, int count) {
  for (int i = 0; i < count; ++i) matmul(x, n, *ws[i], ys[i], biases[i]);
}

void Backend::qkv_rope_kv_write(const float* x, int64_t n, const DeviceWeight* const* ws,
                                const DeviceWeight* const* biases, float* const* qkv, int n_heads,
                                const int32_t* positions, const int32_t* seqs, const RopeConfig& cfg, KvCache& kv,
                                int layer) {
  matmul_multi(x, n, ws, qkv, biases, 3);
  rope_kv_write(qkv[0], qkv[1], qkv[2], n, n_heads, positions, seqs, cfg, kv, layer);
}

void Backend::matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up,
                           Activation act, float* out, float* scratch) {
  matmul(x, n, gate, out);
  matmul(x, n, up, scratch);
  act_mul(out, scratch, n * gate.rows, act, out);
}

void Backend::rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                            const int32_t* seqs, const RopeConfig& cfg, KvCache& kv, int layer) {
  rope(q, n, n_heads, positions, cfg);
  rope(k, n, kv.n_kv_heads, positions, cfg);
  kv_write(kv, layer, k, v, n, positions, seqs);
}

}  // namespace brisk
