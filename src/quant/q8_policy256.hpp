// The 256-bit policy of q8_tile.hpp (AVX2, and AVX-VNNI when kVnni): a pair of chunks is two
// registers. Without VNNI the 4-element dots are maddubs + madd (levels <= 63, so no int16
// saturation) and signed weights use the sign trick; with VNNI they are vpdpbusd as on AVX-512.
#pragma once

#include "quant/q8_tile.hpp"

namespace brisk::quant::BRISK_Q8_ISA {

template <bool kVnni>
struct P256 {
  static constexpr int kRows = 2, kTokens = 2;
  static constexpr bool kSignedByBias = kVnni;
  struct I {
    __m256i a, b;
  };
  struct F {
    __m256 a, b;
  };
  template <typename Op>
  static I each(I x, I y, Op op) { return I{op(x.a, y.a), op(x.b, y.b)}; }

  static I join(__m256i a, __m256i b) { return I{a, b}; }
  static I load_x(const int8_t* q, bool half) { return I{load256(q), half ? _mm256_setzero_si256() : load256(q + 32)}; }
  static __m256i dot1(__m256i u, __m256i x) {
#if defined(__AVXVNNI__)
    if constexpr (kVnni) return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, x);
#endif
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
  }
  static I dot(I u, I x) { return each(u, x, dot1); }
  static I sum4(I x) { return dot(I{_mm256_set1_epi8(1), _mm256_set1_epi8(1)}, x); }
  static I sub(I a, I b) { return each(a, b, [](__m256i p, __m256i q) { return _mm256_sub_epi32(p, q); }); }
  static I slli(I a, int s) { return I{_mm256_slli_epi32(a.a, s), _mm256_slli_epi32(a.b, s)}; }
  static I prep_signed(I w) {
    if constexpr (kVnni) return each(w, w, [](__m256i p, __m256i) { return _mm256_xor_si256(p, _mm256_set1_epi8(char(0x80))); });
    return w;
  }
  static I signed_lanes(I u, I x, I xs128) {
    if constexpr (kVnni) return sub(dot(u, x), xs128);
    return each(u, x, [](__m256i w, __m256i v) {
      return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(v, w)), _mm256_set1_epi16(1));
    });
  }

  static F zero() { return F{_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static F cvt(I v) { return F{_mm256_cvtepi32_ps(v.a), _mm256_cvtepi32_ps(v.b)}; }
  static F mul(F x, F y) { return F{_mm256_mul_ps(x.a, y.a), _mm256_mul_ps(x.b, y.b)}; }
  static F fma(F x, F y, F z) { return F{_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b)}; }
  static F splat2(float a, float b) { return F{_mm256_set1_ps(a), _mm256_set1_ps(b)}; }
  // Integer scales of lanes 0-3, 4-7 (first register), 8-11, 12-15 (second) as floats.
  static F scales4(__m128i s) {
    const __m256 f = _mm256_castps128_ps256(_mm_cvtepi32_ps(s));
    return F{_mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)),
             _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3))};
  }
  static __m256 fold(F v) { return _mm256_add_ps(v.a, v.b); }
};

}  // namespace brisk::quant::BRISK_Q8_ISA
