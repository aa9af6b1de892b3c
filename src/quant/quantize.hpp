// CPU dequantize / quantize for every DType, bit-compatible with GGUF's block layouts
// (ggml's reference quantizers), plus the row dot product the CPU backend's matmul is built on.
#pragma once

#include <cstdint>

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

}  // namespace brisk
