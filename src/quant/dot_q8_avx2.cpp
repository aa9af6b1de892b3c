// AVX2 kernels of dot_row_q8: 32 weights become 32 int8 levels in one register, their
// products with the int8 activations are summed exactly (maddubs, then madd with the lane
// scales), and each 32-element chunk costs one float FMA. Bit-identical to
// dot_row_q8_scalar (order documented in dot_q8.cpp).
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "base/half.hpp"
#include "quant/blocks.hpp"
#include "quant/dot.hpp"

#pragma GCC optimize("fp-contract=off")

namespace brisk::quant {
namespace {

inline float half_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
#if defined(__F16C__)
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(v)));
#else
  return f16_to_f32(v);
#endif
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 8 int32 lanes: lane l = sum_{k<4} w[4l+k] * x[4l+k] times the int16 scale of its pairs.
// Signed w: |w| * sign(x, w) keeps maddubs' unsigned operand (|w| <= 128, no saturation).
inline __m256i lanes_signed(__m256i w, __m256i x, __m256i scale16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), scale16);
}
inline __m256i lanes_unsigned(__m256i w, __m256i x, __m256i scale16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), scale16);
}

// Two named accumulators (even and odd chunks): an indexed array would live on the stack
// and put a store-load round trip into every FMA's dependency chain.
struct Acc {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 macc = _mm256_setzero_ps();  // K-quant mins, lane = sub-block
  template <int kParity>
  inline void add(float f, __m256i lanes) {
    __m256& a = kParity ? a1 : a0;
    a = _mm256_fmadd_ps(_mm256_set1_ps(f), _mm256_cvtepi32_ps(lanes), a);
  }
  static float hsum(__m256 v) {
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
  }
  float sum() const { return hsum(_mm256_add_ps(a0, a1)) - hsum(macc); }
};

// Legacy formats: chunk = block. Pairs of blocks keep the parity a compile-time constant.
template <int kBlockBytes, typename Lanes>
float legacy(const uint8_t* w, const QuantizedActivations& x, Lanes lanes) {
  Acc acc;
  const int64_t nc = x.n / 32;
  const int8_t* xq = x.q.data();
  const float* xd = x.d.data();
  int64_t c = 0;
  for (; c + 2 <= nc; c += 2, w += 2 * kBlockBytes) {
    acc.add<0>(half_at(w) * xd[c], lanes(w, xq + 32 * c));
    acc.add<1>(half_at(w + kBlockBytes) * xd[c + 1], lanes(w + kBlockBytes, xq + 32 * c + 32));
  }
  if (c < nc) acc.add<0>(half_at(w) * xd[c], lanes(w, xq + 32 * c));
  return acc.sum();
}

// 16 bytes of nibbles as 32 bytes in element order: low nibbles, then high nibbles.
inline __m256i nibbles_in_order(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
}

// Byte j = 0xFF where bit j of qh is set.
inline __m256i bits_to_bytes(uint32_t qh) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(qh)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

float q8_0(const uint8_t* w, const QuantizedActivations& x) {
  const __m256i ones = _mm256_set1_epi16(1);
  return legacy<34>(w, x, [ones](const uint8_t* b, const int8_t* xq) {
    return lanes_signed(load256(b + 2), load256(xq), ones);
  });
}

float q4_0(const uint8_t* w, const QuantizedActivations& x) {
  const __m256i ones = _mm256_set1_epi16(1);
  return legacy<18>(w, x, [ones](const uint8_t* b, const int8_t* xq) {
    const __m256i q = _mm256_sub_epi8(nibbles_in_order(b + 2), _mm256_set1_epi8(8));
    return lanes_signed(q, load256(xq), ones);
  });
}

float q5_0(const uint8_t* w, const QuantizedActivations& x) {
  const __m256i ones = _mm256_set1_epi16(1);
  return legacy<22>(w, x, [ones](const uint8_t* b, const int8_t* xq) {
    uint32_t qh;
    std::memcpy(&qh, b + 2, 4);
    const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10));
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles_in_order(b + 6), hi), _mm256_set1_epi8(16));
    return lanes_signed(q, load256(xq), ones);
  });
}

// Q4_K and Q5_K: chunk 8b + s is sub-block s; even sub-blocks (low nibbles) land in
// accumulator 0, odd ones (high nibbles) in accumulator 1.
template <bool kFive>
float qk45(const uint8_t* w, const QuantizedActivations& x) {
  Acc acc;
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const int64_t block_bytes = kFive ? 176 : 144;
  for (int64_t b = 0; b < x.n / 256; ++b, w += block_bytes) {
    const float d = half_at(w), dmin = half_at(w + 2);
    const uint8_t* qs = w + (kFive ? 48 : 16);
    const __m256i hb = kFive ? load256(w + 16) : _mm256_setzero_si256();
    uint8_t sc[8], mn[8];
    for (int s = 0; s < 8; ++s) scale_min_k4(s, w + 4, &sc[s], &mn[s]);
    uint64_t mn64;
    std::memcpy(&mn64, mn, 8);
    // All 8 mins of the super-block in one FMA: lane s += (dmin * xd) * float(m * xsum).
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_loadu_ps(x.d.data() + 8 * b));
    const __m256i msum = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(mn64))),
                                            load256(x.sum.data() + 8 * b));
    acc.macc = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(msum), acc.macc);
    for (int p = 0; p < 4; ++p) {
      const int64_t c = 8 * b + 2 * p;
      const __m256i raw = load256(qs + 32 * p);
      __m256i lo = _mm256_and_si256(raw, m4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
      if (kFive) {
        const __m256i b0 = _mm256_set1_epi8(char(1 << (2 * p))), b1 = _mm256_set1_epi8(char(2 << (2 * p)));
        const __m256i s16 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, b0), b0), s16));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, b1), b1), s16));
      }
      const int8_t* xq = x.q.data() + 32 * c;
      acc.add<0>(d * x.d[size_t(c)], lanes_unsigned(lo, load256(xq), _mm256_set1_epi16(sc[2 * p])));
      acc.add<1>(d * x.d[size_t(c + 1)], lanes_unsigned(hi, load256(xq + 32), _mm256_set1_epi16(sc[2 * p + 1])));
    }
  }
  return acc.sum();
}

float q6_k(const uint8_t* w, const QuantizedActivations& x) {
  Acc acc;
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  const __m256i bias = _mm256_set1_epi8(32);
  for (int64_t b = 0; b < x.n / 256; ++b, w += 210) {
    const float d = half_at(w + 208);
    const auto* sc = reinterpret_cast<const int8_t*>(w + 192);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(w + 64 * h), ql1 = load256(w + 64 * h + 32);
      const __m256i qh = load256(w + 128 + 32 * h);
      auto chunk = [&](int k) {  // quarter k of the half: chunk 8b + 4h + k
        const int64_t c = 8 * b + 4 * h + k;
        const __m256i raw = (k & 1) ? ql1 : ql0;
        const __m256i lo = (k >> 1) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4) : _mm256_and_si256(raw, m4);
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), m2), 4);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, hi), bias);
        const __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[8 * h + 2 * k + 1]), _mm_set1_epi16(sc[8 * h + 2 * k]));
        return std::pair(d * x.d[size_t(c)], lanes_signed(q, load256(x.q.data() + 32 * c), s16));
      };
      for (int k = 0; k < 4; k += 2) {
        const auto [f0, l0] = chunk(k);
        acc.add<0>(f0, l0);
        const auto [f1, l1] = chunk(k + 1);
        acc.add<1>(f1, l1);
      }
    }
  }
  return acc.sum();
}

}  // namespace

float dot_row_q8_avx2(DType type, const void* w_row, const QuantizedActivations& x) {
  const auto* w = static_cast<const uint8_t*>(w_row);
  switch (type) {
    case DType::Q8_0: return q8_0(w, x);
    case DType::Q4_0: return q4_0(w, x);
    case DType::Q5_0: return q5_0(w, x);
    case DType::Q4_K: return qk45<false>(w, x);
    case DType::Q5_K: return qk45<true>(w, x);
    case DType::Q6_K: return q6_k(w, x);
    default: return dot_row_q8_scalar(type, w_row, x);
  }
}

}  // namespace brisk::quant

#endif  // AVX2 && FMA
