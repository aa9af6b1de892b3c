// The CudaBackend class (internal to src/backend/cuda): one device, one stream, one
// cuBLASLt handle, the scratch the GEMM path and decode attention need, and graph capture.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/gemm.hpp"
#include "backend/cuda/kernels.cuh"

namespace brisk::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const CudaOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return name_; }
  DeviceWeight upload(const WeightView& w) override;
  void upload_adjacent(const WeightView* const* ws, int count, DeviceWeight* out) override;
  void* alloc_bytes(uint64_t bytes) override;
  void release_bytes(void* p) override;
  void copy_to_host(const void* src, void* host_dst, uint64_t bytes) override;
  void copy_from_host(const void* host_src, void* dst, uint64_t bytes) override;
  void synchronize() override;
  // bf16 in the fast mode (attention converts to bf16 anyway); float32 in the exact mode.
  int kv_elem_bytes() const override { return exact_ ? 4 : 2; }

  void embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) override;
  void rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) override;
  void matmul(const float* x, int64_t n, const DeviceWeight& w, float* y, const DeviceWeight* bias,
              bool accumulate) override;
  void matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                    const DeviceWeight* const* biases, int count) override;
  void matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up, Activation act,
                    float* out, float* scratch) override;
  void rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) override;
  void qkv_rope_kv_write(const float* x, int64_t n, const DeviceWeight* const* ws, const DeviceWeight* const* biases,
                         float* const* qkv, int n_heads, const int32_t* positions, const int32_t* seqs,
                         const RopeConfig& cfg, KvCache& kv, int layer) override;
  void rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                     const int32_t* seqs, const RopeConfig& cfg, KvCache& kv, int layer) override;
  void kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n, const int32_t* positions,
                const int32_t* seqs) override;
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

  bool can_capture() const override { return true; }
  StepDefaults step_defaults() const override { return {64, 2048, 64, true}; }
  void begin_capture() override;
  int end_capture() override;
  void replay(int graph) override;
  uint64_t memory_peak() const override { return peak_bytes_; }
  uint64_t memory_in_use() const override { return live_bytes_; }
  double measure_bandwidth() override;
  void profile(bool on) override;
  double measure_matmul_rate() override;

  static GpuMatrix matrix(const DeviceWeight& w);

 private:
  // Grow-only scratch buffers, by purpose.
  enum Slot : size_t { kSlotX16, kSlotW16, kSlotAttn, kSlotXQ, kSlotFused, kSlotSplitK, kSlotX8, kSlotOut16 /* FP8 products written aside */,
                       kSlotRounded, kSlotMask, kSlotCount };
  void* device_alloc(uint64_t bytes, const std::string& what);
  DeviceWeight describe(const WeightView& w) const;  // checks w; no data yet
  void copy_rows(const WeightView& w, const DeviceWeight& d, uint8_t* dst);
  const void* gemm_input(const float* x, int64_t n, const DeviceWeight& w);
  bool one_product(const DeviceWeight* const* ws, int count) const;
  __nv_bfloat16* offer16(int64_t rows, int64_t elems);
  void gemm(const void* xs, int64_t n, const DeviceWeight& w, int64_t rows, float* y, bool accumulate);
  bool use_gemv(const DeviceWeight& w, int64_t n) const;
  // x quantized for the integer GEMV when w's format has one (null: float products).
  const Q8Activations* quantized_input(const DeviceWeight& w, const float* x, int64_t n);
  const Q8Activations& quantize_input(const float* x, int64_t n, int64_t cols);  // into the XQ scratch
  bool use_mmq(const DeviceWeight& w, int64_t n) const;
  void run_mmq(const DeviceWeight& w, const Q8Activations& xq, int64_t n, float* y, const float* bias, bool accumulate);
  void* scratch(std::vector<void*>& slot, size_t index, uint64_t bytes);
  // FP8 E4M3 weights (cuda_backend_fp8.cu): on the FP8 tensor cores above the GEMV's batch
  // (sm_89+, where cuBLASLt has the product); a static activation scale rounds every input.
  bool use_fp8_gemm(const DeviceWeight& w, int64_t n);
  const Fp8Activations& quantize_fp8_input(const float* x, int64_t n, const DeviceWeight& w);  // into X8
  void run_fp8_gemm(const DeviceWeight& w, const Fp8Activations& xq, int64_t n, float* y, const float* bias,
                    bool accumulate);
  const float* fp8_static_input(const float* x, int64_t n, const DeviceWeight& w);  // x, or x rounded
  const float* upload_fp8_blocks(const WeightView& w);  // the 128 x 128 block scales, or null
  const float* inv_freq(const RopeConfig& cfg);

  int device_ = 0;
  bool exact_ = false;  // float32 GEMMs and attention everywhere (oracle comparisons)
  bool mmq_ = true;     // CudaOptions::mmq
  int cc_major_ = 0, cc_minor_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  void* staging_ = nullptr;  // pinned host memory for uploads
  static constexpr uint64_t kStagingBytes = 64ull << 20;
  std::map<void*, uint64_t> sizes_;
  uint64_t live_bytes_ = 0, peak_bytes_ = 0;
  std::vector<void*> uploads_;                 // weights (and their aux data), freed at the end
  std::vector<void*> scratch_slots_;           // grow-only scratch, indexed by purpose
  std::vector<uint64_t> scratch_sizes_;
  std::map<std::vector<float>, float*> inv_freq_;
  std::vector<cudaGraphExec_t> graphs_;
  bool capturing_ = false;
  Q8Activations q8_view_;
  Fp8Activations fp8_view_;
  // The X16 scratch holds x16_of_ as bf16 (x16_elems_ values) when the op that wrote x16_of_
  // left that copy for the product that reads it next; every other op forgets it.
  const float* x16_of_ = nullptr;
  int64_t x16_elems_ = 0;
  int64_t gemm16_rows_ = -1;  // tokens of the last product whose input went to bf16
};

}  // namespace brisk::cuda
