// matmul_q8 on AVX2 + FMA: the tiled kernel of q8_tile.hpp with 256-bit registers, 2 x 2
// tiles (16 registers), maddubs for the integer dots. Compiled with -mavx2 -mfma -mf16c.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#define BRISK_Q8_ISA avx2
#include "quant/q8_policy256.hpp"

namespace brisk::quant::avx2 {

bool matmul_q8(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
               int64_t cols, float* y, int64_t ldy) {
  return matmul_any<P256<false>>(type, w, row_bytes, rows, x, n, cols, y, ldy);
}

}  // namespace brisk::quant::avx2

#endif
