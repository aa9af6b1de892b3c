// matmul_q8 on AVX-512 with VNNI: a pair of chunks fills one 512-bit register, vpdpbusd does
// the 4-element integer dots (signed weights are biased by 128 and the bias taken back with
// the activations' 4-element sums), and 4 x 4 tiles keep 16 accumulators in the 32 registers.
// Compiled with -mavx512f/bw/vl/vnni (CMakeLists.txt); called only when cpu_isa says so.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)

// GCC 12 takes the deliberately undefined upper halves of its cast intrinsics for uninitialized reads.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define BRISK_Q8_ISA avx512
#include "quant/q8_tile.hpp"

namespace brisk::quant::avx512 {
namespace {

struct P512 {
  static constexpr int kRows = 4, kTokens = 4;
  static constexpr bool kSignedByBias = true;
  using I = __m512i;
  using F = __m512;

  static I join(__m256i a, __m256i b) { return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1); }
  static I load_x(const int8_t* q, bool half) {
    return half ? _mm512_maskz_loadu_epi8(0xFFFFFFFFull, q) : _mm512_loadu_si512(q);
  }
  static I dot(I u, I x) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x); }
  static I sum4(I x) { return dot(_mm512_set1_epi8(1), x); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I slli(I a, int s) { return _mm512_slli_epi32(a, unsigned(s)); }
  static I prep_signed(I w) { return _mm512_xor_si512(w, _mm512_set1_epi8(char(0x80))); }
  // u = w + 128: sum (w + 128) x - 128 * sum x.
  static I signed_lanes(I u, I x, I xs128) { return sub(dot(u, x), xs128); }

  static F zero() { return _mm512_setzero_ps(); }
  static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F splat2(float a, float b) { return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(a), _mm512_set1_ps(b)); }
  // Integer scales of lanes 0-3, 4-7, 8-11, 12-15 as floats.
  static F scales4(__m128i s) {
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_cvtepi32_ps(s)));
  }
  // Lanes 0-7 (even chunks) + lanes 8-15 (odd chunks).
  static __m256 fold(F v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  }
};

}  // namespace

bool matmul_q8(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
               int64_t cols, float* y, int64_t ldy) {
  return matmul_any<P512>(type, w, row_bytes, rows, x, n, cols, y, ldy);
}

}  // namespace brisk::quant::avx512

#endif
