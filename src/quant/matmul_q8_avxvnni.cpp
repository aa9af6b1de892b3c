// matmul_q8 with AVX-VNNI (256-bit vpdpbusd without AVX-512: Alder Lake and later client
// cores, Zen 5): as the AVX2 kernel, the integer dots in one instruction. Compiled with
// -mavx2 -mfma -mf16c -mavxvnni.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)

#define BRISK_Q8_ISA avxvnni
#include "quant/q8_policy256.hpp"

namespace brisk::quant::avxvnni {

bool matmul_q8(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
               int64_t cols, float* y, int64_t ldy) {
  return matmul_any<P256<true>>(type, w, row_bytes, rows, x, n, cols, y, ldy);
}

}  // namespace brisk::quant::avxvnni

#endif
