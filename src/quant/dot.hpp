// The one reduction order every dot_row follows, shared by the scalar and AVX2 kernels so
// that both give the same bits (on a machine with FMA). Internal to src/quant.
//
// Order: weights are first decoded to exactly the floats dequantize_row gives. The row is
// cut into 32-element chunks (zero-padded at the end); element i is fused-multiply-added
// into lane i % 32 of 32 float32 accumulators, chunk after chunk. Then, with a[k][l] =
// lane 8k + l: s[l] = (a0[l] + a1[l]) + (a2[l] + a3[l]); t[l] = s[l] + s[l+4] (l < 4);
// u[l] = t[l] + t[l+2] (l < 2); result = u[0] + u[1]. It depends only on n and the type.
#pragma once

#include <cstdint>

#include "quant/dtype.hpp"
#include "quant/quantize.hpp"

namespace brisk::quant {

constexpr int kDotLanes = 32;

// Scalar implementation of the order above (also the fallback without AVX2).
float dot_row_scalar(DType type, const void* w_row, const float* x, int64_t n);

// dot_row_q8 in the order documented in dot_q8.cpp.
float dot_row_q8_scalar(DType type, const void* w_row, const QuantizedActivations& x);

#if defined(__AVX2__) && defined(__FMA__)
float dot_row_avx2(DType type, const void* w_row, const float* x, int64_t n);
float dot_row_q8_avx2(DType type, const void* w_row, const QuantizedActivations& x);
#endif

}  // namespace brisk::quant
