// The CUDA attention kernels (split-K decode, float and tensor-core, and flash-attention
// prefill) against the CPU oracle.
// Tolerances and helpers: cuda_ops_util.hpp. Without a GPU (CI) the tests skip.
#include "backend/cuda_ops_util.hpp"

#if BRISK_WITH_CUDA
namespace brisk {
namespace {
using namespace brisk::test;

struct AttnCase {
  int heads, kv_heads, hd, window, seqs;
  int64_t n, start;  // queries; first position (prefill continues a cache)
};

TEST_F(CudaOps, AttentionDecodeAndPrefill) {
  const AttnCase cases[] = {
      {8, 8, 64, 0, 1, 1, 0},       {28, 4, 128, 0, 1, 1, 700},  {8, 1, 128, 0, 3, 3, 40},
      {16, 8, 256, 5, 2, 2, 33},    {32, 2, 128, 0, 1, 1, 260},  {28, 4, 128, 0, 64, 64, 100},
      {28, 4, 128, 0, 1, 77, 0},    {28, 4, 128, 0, 1, 130, 300}, {8, 2, 64, 16, 1, 100, 9},
      {4, 4, 256, 0, 1, 65, 0},     {16, 8, 256, 512, 1, 200, 400}, {32, 2, 128, 0, 1, 64, 0},
      {40, 2, 64, 0, 2, 2, 50}};  // a group of 20: the float kernel over the fast mode's bf16 cache
  uint32_t seed = 11;
  for (const AttnCase& c : cases) {
    const int64_t cap = c.start + c.n + 3;
    const int layers = 2, layer = 1;
    // A pool with spare blocks, each slot given a scattered set of them (the same on both).
    KvCache gk = gpu_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, 0, 16);
    const int64_t pool = gk.n_blocks + 5;
    gpu_->release_kv(gk);
    gk = gpu_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, pool, 16);
    KvCache ek = exact_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, pool, 16);
    KvCache ck = cpu_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, pool, 16);
    ASSERT_EQ(gk.elem_bytes, 2);
    ASSERT_EQ(ek.elem_bytes, 4);
    std::vector<int32_t> table(static_cast<size_t>(pool));
    for (int64_t i = 0; i < pool; ++i) table[size_t(i)] = int32_t(i);
    std::shuffle(table.begin(), table.end(), std::mt19937(seed));
    for (int s = 0; s < c.seqs; ++s) {
      const int32_t* row = table.data() + int64_t(s) * gk.blocks_per_seq;
      gpu_->set_kv_blocks(gk, s, row, gk.blocks_per_seq);
      exact_->set_kv_blocks(ek, s, row, ek.blocks_per_seq);
      cpu_->set_kv_blocks(ck, s, row, ck.blocks_per_seq);
    }
    // Fill every sequence's cache up to the positions used, then the queries' own keys.
    const bool prefill = c.seqs == 1 && c.n > 1;
    std::vector<int32_t> pos, seq;
    for (int s = 0; s < c.seqs; ++s)
      for (int64_t p = 0; p < (prefill ? c.start + c.n : c.start + 1 + s); ++p) pos.push_back(int32_t(p)), seq.push_back(s);
    const int64_t m = int64_t(pos.size()), kvd = int64_t(c.kv_heads) * c.hd;
    auto k = gaussian(size_t(m * kvd), seed++), v = gaussian(size_t(m * kvd), seed++);
    gpu_->kv_write(gk, layer, dev(*gpu_, k), dev(*gpu_, v), m, dev_ids(*gpu_, pos), dev_ids(*gpu_, seq));
    exact_->kv_write(ek, layer, dev(*exact_, k), dev(*exact_, v), m, dev_ids(*exact_, pos), dev_ids(*exact_, seq));
    cpu_->kv_write(ck, layer, dev(*cpu_, k), dev(*cpu_, v), m, dev_ids(*cpu_, pos), dev_ids(*cpu_, seq));
    // Queries: the last c.n positions of the prefill, or each sequence's last position.
    std::vector<int32_t> qpos, qseq;
    if (prefill) {
      for (int64_t i = 0; i < c.n; ++i) qpos.push_back(int32_t(c.start + i)), qseq.push_back(0);
    } else {
      for (int s = 0; s < c.seqs; ++s) qpos.push_back(int32_t(c.start + s)), qseq.push_back(s);
    }
    const int64_t n = int64_t(qpos.size());
    auto q = gaussian(size_t(n * c.heads * c.hd), seed++);
    AttentionConfig cfg{c.heads, c.kv_heads, c.hd, 1.f / std::sqrt(float(c.hd)), c.window, prefill};
    const size_t out_n = size_t(n * c.heads * c.hd);
    float* co = poisoned(*cpu_, out_n);
    cpu_->attention(dev(*cpu_, q), ck, layer, n, dev_ids(*cpu_, qpos), dev_ids(*cpu_, qseq), cfg, co);
    auto ref = host(*cpu_, co, out_n);
    float* go = poisoned(*gpu_, out_n);
    const float* dq = dev(*gpu_, q);
    const int32_t *dpos = dev_ids(*gpu_, qpos), *dseq = prefill ? nullptr : dev_ids(*gpu_, qseq);
    gpu_->attention(dq, gk, layer, n, dpos, dseq, cfg, go);
    EXPECT_LT(rel_err(host(*gpu_, go, out_n), ref), 2e-2)
        << "fast " << c.heads << "/" << c.kv_heads << " hd " << c.hd << " window " << c.window << " n " << n;
    // Exact mode: the float32 split kernel over a float32 cache, with the same queries.
    gpu_->synchronize();
    float* eo = poisoned(*exact_, out_n);
    exact_->attention(dq, ek, layer, n, dpos, dseq, cfg, eo);
    EXPECT_LT(rel_err(host(*exact_, eo, out_n), ref), 1e-5)
        << "exact " << c.heads << "/" << c.kv_heads << " hd " << c.hd << " window " << c.window << " n " << n;
    // The KV caches themselves: the exact one byte for byte, the fast one rounded to bf16.
    const size_t kv_n = size_t(gk.layer_stride() * layers);
    const std::vector<float> ckh = host(*cpu_, static_cast<float*>(ck.k), kv_n);
    const std::vector<float> ekh = kv_host(*exact_, ek, ek.k, kv_n), gkh = kv_host(*gpu_, gk, gk.k, kv_n);
    KvPages host_pages = gk.pages(layer);
    host_pages.table = table.data();
    for (int s = 0; s < c.seqs; ++s)
      for (int h = 0; h < c.kv_heads; ++h)
        for (int64_t p = 0; p <= c.start; ++p) {
          const int64_t off = host_pages.row(s, h, p);
          const std::vector<float> want(ckh.begin() + off, ckh.begin() + off + c.hd);
          ASSERT_EQ(0, std::memcmp(ekh.data() + off, want.data(), size_t(c.hd) * 4)) << s << " " << h << " " << p;
          ASSERT_EQ(std::vector<float>(gkh.begin() + off, gkh.begin() + off + c.hd), bf16_rounded(want))
              << s << " " << h << " " << p;
        }
    gpu_->release_kv(gk);
    exact_->release_kv(ek);
    cpu_->release_kv(ck);
  }
}

}  // namespace
}  // namespace brisk
#endif  // BRISK_WITH_CUDA
