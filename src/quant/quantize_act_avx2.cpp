// quantize_activations on AVX2: one 32-element block in four registers, the same bits as
// the portable loop of dot_q8.cpp (the same float products, and round half away from zero
// done exactly: trunc, then +-1 where the exact fraction is at least a half), without its
// libm roundf call per element. Compiled with -mavx2 -mfma -mf16c.
#if defined(__AVX2__)

#include <immintrin.h>

#include "quant/dot.hpp"

#pragma GCC optimize("fp-contract=off")

namespace brisk::quant {
namespace {

// Levels of s rounded half away from zero, as int32 (|s| <= 127.5 here).
inline __m256i round_away(__m256 s) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(s, t));  // exact
  const __m256 step = _mm256_or_ps(_mm256_and_ps(s, sign), _mm256_set1_ps(1.0f));
  const __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step);
  return _mm256_cvttps_epi32(_mm256_add_ps(t, up));
}

}  // namespace

void quantize_activations_avx2(const float* x, int64_t n, int8_t* q, float* d, int32_t* sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    const float amax = _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
    const float db = amax / 127;
    const __m256 id = _mm256_set1_ps(db != 0.0f ? 1.0f / db : 0.0f);
    __m256i l[4];
    for (int k = 0; k < 4; ++k) l[k] = round_away(_mm256_mul_ps(v[k], id));
    // int32 -> int8: the packs interleave 4-element groups; the permute puts them back in order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(l[0], l[1]), _mm256_packs_epi32(l[2], l[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b),
                        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(l[0], l[1]), _mm256_add_epi32(l[2], l[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    d[b] = db;
    sum[b] = _mm_cvtsi128_si32(s4);
  }
}

}  // namespace brisk::quant

#endif
