// axpy on AVX2 + FMA: 16 elements per iteration, the tail fused one at a time (the same bits
// as the portable loop of axpy.cpp). Compiled with -mavx2 -mfma -mf16c.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "quant/dot.hpp"

namespace brisk::quant {

void axpy_avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    _mm256_storeu_ps(y + i + 8, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8)));
  }
  for (; i < n; ++i) y[i] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(x[i]), _mm_set_ss(y[i])));
}

}  // namespace brisk::quant

#endif
