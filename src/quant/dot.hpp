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

// The kernels of each level, defined only in the files compiled for it (CMakeLists.txt);
// call them only when active_cpu_isa() is at least their level (cpu_isa.hpp).
float dot_row_avx2(DType type, const void* w_row, const float* x, int64_t n);
float dot_row_q8_avx2(DType type, const void* w_row, const QuantizedActivations& x);
void axpy_avx2(float a, const float* x, float* y, int64_t n);
void quantize_activations_avx2(const float* x, int64_t n, int8_t* q, float* d, int32_t* sum);
// out = act(gate) * up, SiLU or (gelu) GELU's tanh form, with a vectorized exp (act_mul_avx2.cpp).
void act_mul_fast_avx2(const float* gate, const float* up, int64_t n, bool gelu, float* out);

// One token's quantized activations as plain pointers, for matmul_q8's kernels (no
// std::vector member functions in the files compiled for wider vectors).
struct Q8Row {
  const int8_t* q;      // cols levels
  const float* d;       // cols / 32 scales
  const int32_t* sum;   // cols / 32 sums of the levels
};

// y[t * ldy + r] = dot of weight row r and token t, in dot_q8.cpp's order; false for a
// type without an int8 path. One per level (matmul_q8_<isa>.cpp).
namespace avx2 {
bool matmul_q8(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
               int64_t cols, float* y, int64_t ldy);
}
namespace avxvnni {
bool matmul_q8(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
               int64_t cols, float* y, int64_t ldy);
}
namespace avx512 {
bool matmul_q8(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
               int64_t cols, float* y, int64_t ldy);
}

}  // namespace brisk::quant
