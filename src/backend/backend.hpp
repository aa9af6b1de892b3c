// The Backend op interface: the whole set of operations the transformer forward pass may
// call. The CPU backend (backend/cpu) implements it as the reference oracle; the CUDA backend
// implements exactly the same set. Activations are float32, row-major [rows, dim], in memory
// the backend allocated; weights stay in their checkpoint dtype once uploaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "quant/dtype.hpp"

namespace brisk {

// A weight in host memory as the model layer found it (usually inside a file mapping).
// Matrices are [rows = outputs, cols = inputs] with cols contiguous; vectors have rows = 1.
struct WeightView {
  std::string name;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
};

// A weight resident on the backend, still in its dtype.
struct DeviceWeight {
  std::string name;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t row_bytes = 0;
  const void* data = nullptr;
  bool present() const { return data != nullptr; }
};

enum class Activation { SiLU, GeluTanh };

// How a head's dimensions pair up for rotation. HF checkpoints rotate (i, i + d/2);
// llama-architecture GGUF files were permuted by their converter to rotate (2i, 2i + 1).
enum class RopeStyle { Half, Interleaved };

struct RopeConfig {
  int head_dim = 0;
  float theta = 10000.f;
  RopeStyle style = RopeStyle::Half;
  float linear_factor = 1.f;  // positions divided by this (Gemma 3's global layers on 4B+)
  // Llama 3 frequency scaling; off when llama3_factor == 0.
  float llama3_factor = 0.f;
  float llama3_low_freq_factor = 1.f;
  float llama3_high_freq_factor = 4.f;
  int llama3_original_context = 8192;
  // Per-pair divisors of the inverse frequencies (a GGUF file's rope_freqs tensor, which is
  // how llama.cpp's converter stores Llama 3 scaling); host memory, head_dim / 2 floats, or null.
  const float* freq_factors = nullptr;
};

struct AttentionConfig {
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  float scale = 1.f;  // applied to q.k
  int window = 0;     // sliding window: a query at p sees keys in (p - window, p]; 0 = unbounded
};

// Keys and values of one sequence, all layers: [layer][kv_head][position][head_dim], float32.
struct KvCache {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int64_t capacity = 0;  // positions
  float* k = nullptr;
  float* v = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Make a weight resident. The CPU backend keeps the caller's memory (zero copy), so the
  // view's data must outlive the backend's use of it.
  virtual DeviceWeight upload(const WeightView& w) = 0;

  virtual float* alloc(int64_t n_floats) = 0;
  virtual void release(float* p) = 0;
  virtual void to_host(const float* src, float* host_dst, int64_t n) = 0;
  virtual void from_host(const float* host_src, float* dst, int64_t n) = 0;

  virtual KvCache alloc_kv(int n_layers, int n_kv_heads, int head_dim, int64_t capacity) = 0;
  virtual void release_kv(KvCache& kv) = 0;

  // out[t] = table[ids[t]] * scale, dequantized. ids are host memory, checked against rows.
  virtual void embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) = 0;
  // out[r] = x[r] / rms(x[r]) * w, over `rows` rows of w.cols elements (w is an F32 vector).
  virtual void rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) = 0;
  // y[t] = W x[t] (+ bias) (+ y[t] when accumulate), for t < n. bias is an F32 vector or null.
  virtual void matmul(const float* x, int64_t n, const DeviceWeight& w, float* y,
                      const DeviceWeight* bias = nullptr, bool accumulate = false) = 0;
  // Rotate each of n_heads heads of each of n tokens in place by its token's position.
  virtual void rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) = 0;
  virtual void kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n,
                        const int32_t* positions) = 0;
  // Causal attention of n queries (at `positions`) over the layer's cache. q and out are
  // [n, n_heads * head_dim]; every key at a position <= the query's must already be written.
  virtual void attention(const float* q, const KvCache& kv, int layer, int64_t n,
                         const int32_t* positions, const AttentionConfig& cfg, float* out) = 0;
  // out = act(gate) * up, elementwise over n values.
  virtual void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out) = 0;
  // x += y over n values.
  virtual void add(float* x, const float* y, int64_t n) = 0;
};

// int8_activations: decode-time matmuls against quantized weights quantize the activations
// to int8 blocks and use integer dot products (as llama.cpp does): about twice as fast, at a
// small cost in accuracy. Off, the backend is the exact float32 oracle.
std::unique_ptr<Backend> make_cpu_backend(int n_threads, bool int8_activations = false);

}  // namespace brisk
