// CPU dequantize / quantize for every DType, bit-compatible with GGUF's block layouts
// (ggml's reference quantizers), plus the row dot product the CPU backend's matmul is built on.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/dtype.hpp"

namespace brisk {

// dst[0..n) = value of src's first n elements. n must be a multiple of the block size.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

// Encode n floats into type's layout (round-trip tested). n must be a multiple of the block size.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

// sum_i w[i] * x[i] over one weight row of n elements in `type` against float activations.
// The reduction order is fixed (it depends only on n and the type, never on threads), the
// accumulation is float32; SIMD (AVX2/FMA) when built with it.
float dot_row(DType type, const void* w_row, const float* x, int64_t n);

// y[i] = fma(a, x[i], y[i]) for i < n (attention's weighted sum of values): the same bits
// on every kernel level.
void axpy(float a, const float* x, float* y, int64_t n);

// The fast mode's gated activation: out[i] = act(gate[i]) * up[i], SiLU or (gelu) GELU's tanh
// form, through a polynomial exp within a few ulp of libm's; the same bits on every level.
void act_mul_fast(const float* gate, const float* up, int64_t n, bool gelu, float* out);

// I8: dst = round(src / scale) with scale = max|src| / 127; returns the scale.
float quantize_row_i8(const float* src, int8_t* dst, int64_t n);

// The int8 alternative (llama.cpp's approach): quantize x once per matvec into 32-element
// blocks (float scale, int8 levels), then each row's dot is integer products per block and
// one float FMA per block. Faster than dot_row for the block formats, less exact (x is
// rounded to 8 bits per block); the order is fixed (quant/dot_q8.cpp documents it).
struct QuantizedActivations {
  int64_t n = 0;             // elements, a multiple of 32
  std::vector<int8_t> q;     // n levels, x[i] ~ d[i / 32] * q[i]
  std::vector<float> d;      // n / 32 scales
  std::vector<int32_t> sum;  // n / 32 sums of q (the K-quant mins need them)
};

// As quantize_row Q8_0 (amax / 127 scale, round half away), with the scale kept in float32.
void quantize_activations(const float* x, int64_t n, QuantizedActivations* out);

// True for Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, I8 (whose row scale the caller applies);
// dot_row_q8 and matmul_q8 throw for other types.
bool dot_row_q8_supported(DType type);

// sum_i w[i] * x[i] with x given quantized; x.n is the row length.
float dot_row_q8(DType type, const void* w_row, const QuantizedActivations& x);

// y[t * ldy + r] = dot_row_q8(type, row r, x[t]) for r < rows, t < n, with rows row_bytes
// apart from w: the same bits as one dot at a time, on every kernel level, but tiled (the
// weights are decoded once per few tokens and the activations loaded once per few rows).
// Every x[t] has the row length x[0].n.
void matmul_q8(DType type, const void* w, uint64_t row_bytes, int64_t rows, const QuantizedActivations* x,
               int64_t n, float* y, int64_t ldy);

}  // namespace brisk
