// The CPU backend: the reference oracle every other backend is checked against, and a usable
// CPU runtime. Plain loops in a fixed reduction order with float32 accumulation; threads split
// independent outputs only, so results never depend on the thread count.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "base/thread_pool.hpp"

namespace brisk {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int n_threads, bool int8_activations);

  std::string name() const override { return int8_activations_ ? "cpu (int8 activations)" : "cpu"; }
  int threads() const { return pool_.size(); }

  DeviceWeight upload(const WeightView& w) override;
  float* alloc(int64_t n_floats) override;
  void release(float* p) override;
  void to_host(const float* src, float* host_dst, int64_t n) override;
  void from_host(const float* host_src, float* dst, int64_t n) override;
  KvCache alloc_kv(int n_layers, int n_kv_heads, int head_dim, int64_t capacity) override;
  void release_kv(KvCache& kv) override;

  void embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) override;
  void rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) override;
  void matmul(const float* x, int64_t n, const DeviceWeight& w, float* y, const DeviceWeight* bias,
              bool accumulate) override;
  void rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) override;
  void kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n,
                const int32_t* positions) override;
  void attention(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                 const AttentionConfig& cfg, float* out) override;
  void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out) override;
  void add(float* x, const float* y, int64_t n) override;

 private:
  void matmul_int8(const float* x, int64_t n, const DeviceWeight& w, float* y, const float* bias, bool accumulate);

  ThreadPool pool_;
  bool int8_activations_;
};

// The inverse frequencies of a rope configuration, one per rotated pair (head_dim / 2),
// with Llama 3 scaling applied. Shared so every backend rotates by the same angles.
void rope_inverse_frequencies(const RopeConfig& cfg, float* inv_freq);

}  // namespace brisk
