// The CPU backend: the reference oracle every other backend is checked against, and a usable
// CPU runtime. Plain loops in a fixed reduction order with float32 accumulation; threads split
// independent outputs only, so results never depend on the thread count.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "base/thread_pool.hpp"
#include "quant/quantize.hpp"

namespace brisk {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int n_threads, bool int8_activations);

  // "cpu (int8 activations, avx512-vnni)": the mode and the kernel level (quant/cpu_isa.hpp).
  std::string name() const override;
  int threads() const { return pool_.size(); }

  DeviceWeight upload(const WeightView& w) override;
  void* alloc_bytes(uint64_t bytes) override;
  void release_bytes(void* p) override;
  void copy_to_host(const void* src, void* host_dst, uint64_t bytes) override;
  void copy_from_host(const void* host_src, void* dst, uint64_t bytes) override;

  void embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) override;
  void rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) override;
  void matmul(const float* x, int64_t n, const DeviceWeight& w, float* y, const DeviceWeight* bias,
              bool accumulate) override;
  void matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                    const DeviceWeight* const* biases, int count) override;
  void matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up, Activation act,
                    float* out, float* scratch) override;
  void rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) override;
  void kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n,
                const int32_t* positions, const int32_t* seqs) override;
  void attention(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                 const int32_t* seqs, const AttentionConfig& cfg, float* out) override;
  void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out) override;
  void add(float* x, const float* y, int64_t n) override;
  void take_tokens(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n) override;
  void edit_logits(float* logits, int64_t stride, const LogitEdit* edits, int64_t n) override;
  void mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows,
                   int64_t n) override;
  void sample(const float* logits, int64_t rows, int64_t stride, int64_t vocab, const RowSampling* params,
              int32_t* ids) override;
  // Memory read bandwidth and this backend's Q8_0 product rate (cpu_ceilings.cpp).
  double measure_bandwidth() override;
  double measure_matmul_rate() override;

 private:
  // The int8 path (cpu_matmul_int8.cpp): whether w takes it, its row groups (pool indices),
  // the calling thread's quantized tokens, and row groups [g0, g1) of one product.
  bool int8_path(const DeviceWeight& w) const;
  static int64_t int8_groups(const DeviceWeight& w);
  static const std::vector<QuantizedActivations>& quantize_tokens(const float* x, int64_t n, int64_t cols);
  static void int8_rows(const QuantizedActivations* qx, int64_t n, const DeviceWeight& w, float* y,
                        const float* bias, bool accumulate, int64_t g0, int64_t g1);

  ThreadPool pool_;
  bool int8_activations_;
};

}  // namespace brisk
