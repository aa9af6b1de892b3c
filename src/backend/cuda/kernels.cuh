// Host-side entry points of the CUDA kernels, one family per .cu file (gemv, gemm,
// attention_decode, attention_prefill, norm, rope, sampling). All take a stream and
// launch asynchronously; none allocates, so each can be captured into a CUDA graph.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cuda/formats.cuh"
#include "backend/cuda/launch.cuh"

namespace brisk::cuda {

// A weight as the kernels see it.
struct GpuMatrix {
  GpuLayout layout = GpuLayout::F32;
  const uint8_t* data = nullptr;
  uint64_t row_bytes = 0;
  int64_t rows = 0, cols = 0;
  RowAux aux;
};

// Most tokens the GEMV takes in one pass over the weights; more go through the GEMM.
constexpr int64_t kGemvMaxTokens = 8;
// Most tokens a product on planar int8 weights takes on the integer tensor cores (mmq);
// more go through the GEMM.
constexpr int64_t kMmqMaxTokens = 64;

// Activations quantized for the integer GEMV (as llama.cpp's q8_1): per block of 32 values
// an int8 vector and a float scale d = max|x| / 127, plus the sum of each 16 values
// (d * sum q), which the K-quant minimums need. Rows of cols values; cols % 32 == 0.
struct Q8Activations {
  const int8_t* q = nullptr;    // [n][cols]
  const float* d = nullptr;     // [n][cols / 32]
  const float* sum = nullptr;   // [n][cols / 16]
};
// Bytes of scratch for n rows of cols values, and the views into it.
uint64_t q8_activation_bytes(int64_t n, int64_t cols);
Q8Activations q8_activations_in(void* scratch, int64_t n, int64_t cols);
void quantize_activations(const float* x, int64_t n, int64_t cols, const Q8Activations& out, cudaStream_t s);
// Whether a layout has an integer dot product against Q8Activations.
bool has_q8_dot(GpuLayout layout);

// y[t][r] = W[r] . x[t] (+ bias[r]) (+ y[t][r] when accumulate), t < n <= kGemvMaxTokens.
// With xq (not null; see has_q8_dot) the dot products use the quantized activations instead
// of x: integer arithmetic, a quarter of the activation traffic.
void gemv(const GpuMatrix& w, const float* x, int64_t n, float* y, const float* bias, bool accumulate,
          cudaStream_t s, const Q8Activations* xq = nullptr);
// Several matrices of one layout and width against the same x in one launch (count <= 3).
void gemv_multi(const GpuMatrix* const* ws, float* const* ys, const float* const* biases, int count, const float* x,
                int64_t n, bool accumulate, cudaStream_t s, const Q8Activations* xq = nullptr);
// out[t][r] = act(gate[r] . x[t]) * (up[r] . x[t]): the MLP's two projections in one pass.
void gemv_gated(const GpuMatrix& gate, const GpuMatrix& up, const float* x, int64_t n, Activation act, float* out,
                cudaStream_t s, const Q8Activations* xq = nullptr);
// y[t][r] = W[r] . x[t] (+ bias[r]) (+ y[t][r] when accumulate) on the integer tensor
// cores, for planar int8 and Q4_K weights (has_mmq) and any n; meant for decode batches above
// kGemvMaxTokens. With splits > 1 (mmq_splits) the columns are split across blocks and
// partial holds splits * n * rows floats.
bool has_mmq(GpuLayout layout, int cc_major);
int mmq_splits(int64_t rows, int64_t n, int64_t cols);
void mmq(const GpuMatrix& w, const Q8Activations& x, int64_t n, float* y, const float* bias, bool accumulate,
         int splits, float* partial, cudaStream_t s);
// FP8 E4M3 activations for the FP8 GEMM (fp8_activations.cu): q [n][cols], and one float
// scale per group of columns of each token, at scales[g * group_stride + t * token_stride].
// A group is scaled by static_scale when it is > 0, else by max|x| / 448 (quantize_row_fp8).
struct Fp8Activations {
  uint8_t* q = nullptr;
  float* scales = nullptr;
  int64_t group_stride = 0, token_stride = 1;
};
void quantize_fp8_activations(const float* x, int64_t n, int64_t cols, int64_t group, float static_scale,
                              const Fp8Activations& out, cudaStream_t s);
// out = fp8(x / scale) * scale (round_through_fp8 of quant/fp8.hpp), count values.
void round_through_fp8(const float* x, int64_t count, float scale, float* out, cudaStream_t s);
// y = src (bf16) + (y when accumulate), count values: the epilogue of a bf16-output FP8 GEMM.
void add_bf16(const void* src, float* y, int64_t count, bool accumulate, cudaStream_t s);
// out[r][c] = W[r][c] as bf16 (F16 weights as f16; float32 when to_f32), for the GEMM path.
void dequantize_matrix(const GpuMatrix& w, void* out, bool to_f32, cudaStream_t s);
// out[t] = W[ids[t]] * scale, float32.
void embed_rows(const GpuMatrix& w, const int32_t* ids, int64_t n, float scale, float* out, cudaStream_t s);
// dst = float -> bf16 or f16 (f16 when to_half), n values.
void convert_activations(const float* src, void* dst, int64_t n, bool to_half, cudaStream_t s);
void add_bias(float* y, const float* bias, int64_t n, int64_t rows, cudaStream_t s);
// The product of adjacent matrices, y [n][sum of rows], split into one output per matrix
// (outs[i] [n][rows[i]]), each plus its bias where it has one. At most 3 parts.
struct RowSplit {
  int count = 0;
  int64_t rows[3] = {};
  float* outs[3] = {};
  const float* biases[3] = {};
};
void split_rows(const float* y, int64_t n, const RowSplit& parts, cudaStream_t s);

// out16 (optional): the output again as bf16, for the GEMM that reads it next; rmsnorm
// returns whether it wrote it (only its vectorised kernel does).
bool rmsnorm(const float* x, int64_t rows, int64_t dim, const float* w, float eps, float* out, cudaStream_t s,
             __nv_bfloat16* out16 = nullptr);
void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out, cudaStream_t s,
             __nv_bfloat16* out16 = nullptr);
void add(float* x, const float* y, int64_t n, cudaStream_t s);

// inv_freq: head_dim / 2 device floats (rope_inverse_frequencies).
void rope(float* x, int64_t n, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          float linear_factor, RopeStyle style, cudaStream_t s);
void rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                   const int32_t* seqs, const float* inv_freq, float linear_factor, RopeStyle style,
                   const KvCache& kv, int layer, cudaStream_t s);
// The same from one product's output y [n][q | k | v] (plus biases, each null or a vector):
// the split, the biases, the rotations and the cache writes in one pass (v is not kept).
void qkv_rope_kv_write(const float* y, const float* const* biases, float* q, float* k, int64_t n, int n_heads,
                       const int32_t* positions, const int32_t* seqs, const float* inv_freq, float linear_factor,
                       RopeStyle style, const KvCache& kv, int layer, cudaStream_t s);
void kv_write(const KvCache& kv, int layer, const float* k, const float* v, int64_t n, const int32_t* positions,
              const int32_t* seqs, cudaStream_t s);

// Split-K flash decoding: any number of queries, each over its own sequence's cache.
// partial holds attention_decode_scratch_floats(...) floats.
int attention_decode_splits(int64_t n, int n_kv_heads);
int64_t attention_decode_scratch_floats(int64_t n, const AttentionConfig& cfg);
// tensor_cores: the fast mode on sm_80+, bf16 products (attention_decode_mma) where the
// group and head size allow; otherwise float32 throughout.
void attention_decode(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                      const int32_t* seqs, const AttentionConfig& cfg, bool tensor_cores, float* partial, float* out,
                      cudaStream_t s, __nv_bfloat16* out16 = nullptr);
// The tensor-core split kernel (partial results only); false where it does not apply
// (more than 16 query heads per KV head, head sizes other than 64/128/256).
bool attention_decode_mma(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                          const int32_t* seqs, const AttentionConfig& cfg, int splits, float* partial, cudaStream_t s);
// Tensor-core flash attention for prefill (one sequence per call's tokens: seqs may be null).
// Returns false when this GPU or head size has no such kernel (then use attention_decode).
bool attention_prefill(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                       const int32_t* seqs, const AttentionConfig& cfg, float* out, int cc_major, cudaStream_t s);

void take_tokens(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n, cudaStream_t s);
void edit_logits(float* logits, int64_t stride, const LogitEdit* edits, int64_t n, cudaStream_t s);
// Grammar masks (Backend::mask_logits), bits and rows in device memory.
void mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows, int64_t n,
                 cudaStream_t s);
void sample(const float* logits, int64_t rows, int64_t stride, int64_t vocab, const RowSampling* params, int32_t* ids,
            cudaStream_t s);

}  // namespace brisk::cuda

namespace brisk::cuda {
// n random bf16 values in [-1, 1) from a seed (benchmark inputs; never zeros).
void fill_random(void* bf16, uint64_t n, uint64_t seed, cudaStream_t s);
// Whether this binary holds machine code (or PTX) the current device can run.
bool has_kernel_image();
}  // namespace brisk::cuda
