// AVX2+FMA dot_row: each block is decoded straight into registers (8 floats per vector,
// exactly the values dequantize_row gives) and fused-multiply-added with x into four
// 8-lane accumulators, reproducing the order of dot.hpp bit for bit. This is the inner
// loop of the CPU matmul.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cstring>

#include "base/half.hpp"
#include "quant/blocks.hpp"
#include "quant/dot.hpp"

// Decoding must round like the scalar codec (mul, then sub); only the accumulation fuses.
#pragma GCC optimize("fp-contract=off")

namespace brisk::quant {
namespace {

struct Acc {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();

  // One 32-element chunk: w0..w3 are elements 0-7, 8-15, 16-23, 24-31 of it.
  inline void add(__m256 w0, __m256 w1, __m256 w2, __m256 w3, const float* x) {
    a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), a0);
    a1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), a1);
    a2 = _mm256_fmadd_ps(w2, _mm256_loadu_ps(x + 16), a2);
    a3 = _mm256_fmadd_ps(w3, _mm256_loadu_ps(x + 24), a3);
  }

  float sum() const {
    const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
  }
};

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// 8 unsigned bytes at p, zero-extended to 8 int32 lanes.
inline __m256i u8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 to_f32(__m256i v) { return _mm256_cvtepi32_ps(v); }

// f16 scale at p. Inline F16C: an out-of-line call would spill the accumulators each block.
inline float half_at(const uint8_t* p) {
#if defined(__F16C__)
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(load_u16(p))));
#else
  return f16_to_f32(load_u16(p));
#endif
}

// ---- plain floats: the tail (n % 32) is zero-padded through a small buffer -------------

template <typename Load8, typename Load1>
float dot_plain(const float* x, int64_t n, Load8 load8, Load1 load1) {
  Acc acc;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) acc.add(load8(i), load8(i + 8), load8(i + 16), load8(i + 24), x + i);
  if (i < n) {
    alignas(32) float w[32] = {}, xp[32] = {};
    for (int64_t k = i; k < n; ++k) {
      w[k - i] = load1(k);
      xp[k - i] = x[k];
    }
    acc.add(_mm256_load_ps(w), _mm256_load_ps(w + 8), _mm256_load_ps(w + 16),
            _mm256_load_ps(w + 24), xp);
  }
  return acc.sum();
}

float dot_f32(const uint8_t* w, const float* x, int64_t n) {
  return dot_plain(
      x, n, [w](int64_t i) { return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i); },
      [w](int64_t i) {
        float v;
        std::memcpy(&v, w + 4 * i, 4);
        return v;
      });
}

float dot_f16(const uint8_t* w, const float* x, int64_t n) {
  return dot_plain(
      x, n,
      [w](int64_t i) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * i)));
      },
      [w](int64_t i) { return f16_to_f32(load_u16(w + 2 * i)); });
}

float dot_bf16(const uint8_t* w, const float* x, int64_t n) {
  return dot_plain(
      x, n,
      [w](int64_t i) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
      },
      [w](int64_t i) { return bf16_to_f32(load_u16(w + 2 * i)); });
}

// ---- legacy 32-element blocks ----------------------------------------------------------

float dot_q8_0(const uint8_t* w, const float* x, int64_t n) {
  Acc acc;
  for (int64_t b = 0; b < n / kQK; ++b, w += sizeof(BlockQ8_0), x += kQK) {
    const __m256 d = _mm256_set1_ps(half_at(w));
    const uint8_t* qs = w + 2;
    auto q = [&](int g) {
      return _mm256_mul_ps(to_f32(_mm256_cvtepi8_epi32(
                               _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * g)))),
                           d);
    };
    acc.add(q(0), q(1), q(2), q(3), x);
  }
  return acc.sum();
}

// Low and high nibbles of 16 bytes as 4 x 8 int32: elements 0-7, 8-15 (low), 16-23, 24-31 (high).
struct Nibbles32 {
  __m256i v[4];
  explicit Nibbles32(const uint8_t* qs) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(raw, m);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m);
    v[0] = _mm256_cvtepu8_epi32(lo);
    v[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8));
    v[2] = _mm256_cvtepu8_epi32(hi);
    v[3] = _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8));
  }
};

float dot_q4_0(const uint8_t* w, const float* x, int64_t n) {
  Acc acc;
  const __m256i eight = _mm256_set1_epi32(8);
  for (int64_t b = 0; b < n / kQK; ++b, w += sizeof(BlockQ4_0), x += kQK) {
    const __m256 d = _mm256_set1_ps(half_at(w));
    const Nibbles32 q(w + 2);
    auto f = [&](int g) { return _mm256_mul_ps(to_f32(_mm256_sub_epi32(q.v[g], eight)), d); };
    acc.add(f(0), f(1), f(2), f(3), x);
  }
  return acc.sum();
}

float dot_q5_0(const uint8_t* w, const float* x, int64_t n) {
  Acc acc;
  const __m256i sixteen = _mm256_set1_epi32(16);
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  for (int64_t b = 0; b < n / kQK; ++b, w += sizeof(BlockQ5_0), x += kQK) {
    const __m256 d = _mm256_set1_ps(half_at(w));
    uint32_t qh;
    std::memcpy(&qh, w + 2, 4);
    const Nibbles32 q(w + 6);
    auto f = [&](int g) {
      // 5th bit of elements 8g..8g+7: bit (8g + lane) of qh, spread over the lanes.
      const __m256i bits = _mm256_set1_epi32(int((qh >> (8 * g)) & 0xFF));
      const __m256i h = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, bit), bit), sixteen);
      return _mm256_mul_ps(to_f32(_mm256_sub_epi32(_mm256_or_si256(q.v[g], h), sixteen)), d);
    };
    acc.add(f(0), f(1), f(2), f(3), x);
  }
  return acc.sum();
}

// ---- K-quant 256-element super-blocks --------------------------------------------------

// Per sub-block float scale and min of a Q4_K / Q5_K super-block, as dequantize computes them.
inline void k4_scales(const uint8_t* blk, float* ds, float* ms) {
  const float d = half_at(blk), dmin = half_at(blk + 2);
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    scale_min_k4(s, blk + 4, &sc, &m);
    ds[s] = d * sc;
    ms[s] = dmin * m;
  }
}

float dot_q4_k(const uint8_t* w, const float* x, int64_t n) {
  Acc acc;
  const __m256i m4 = _mm256_set1_epi32(0x0F);
  for (int64_t b = 0; b < n / kQKK; ++b, w += sizeof(BlockQ4_K)) {
    float ds[8], ms[8];
    k4_scales(w, ds, ms);
    const uint8_t* qs = w + 16;
    for (int p = 0; p < 4; ++p, qs += 32, x += 64) {  // sub-blocks 2p (low) and 2p+1 (high)
      __m256i raw[4];
      for (int g = 0; g < 4; ++g) raw[g] = u8x8(qs + 8 * g);
      const __m256 d0 = _mm256_set1_ps(ds[2 * p]), m0 = _mm256_set1_ps(ms[2 * p]);
      const __m256 d1 = _mm256_set1_ps(ds[2 * p + 1]), m1 = _mm256_set1_ps(ms[2 * p + 1]);
      auto lo = [&](int g) { return _mm256_sub_ps(_mm256_mul_ps(to_f32(_mm256_and_si256(raw[g], m4)), d0), m0); };
      auto hi = [&](int g) { return _mm256_sub_ps(_mm256_mul_ps(to_f32(_mm256_srli_epi32(raw[g], 4)), d1), m1); };
      acc.add(lo(0), lo(1), lo(2), lo(3), x);
      acc.add(hi(0), hi(1), hi(2), hi(3), x + 32);
    }
  }
  return acc.sum();
}

float dot_q5_k(const uint8_t* w, const float* x, int64_t n) {
  Acc acc;
  const __m256i m4 = _mm256_set1_epi32(0x0F);
  const __m256i one = _mm256_set1_epi32(1);
  for (int64_t b = 0; b < n / kQKK; ++b, w += sizeof(BlockQ5_K)) {
    float ds[8], ms[8];
    k4_scales(w, ds, ms);
    const uint8_t* qh = w + 16;
    const uint8_t* qs = w + 48;
    __m256i hb[4];  // the 32 qh bytes, one int32 per element of a sub-block
    for (int g = 0; g < 4; ++g) hb[g] = u8x8(qh + 8 * g);
    for (int p = 0; p < 4; ++p, qs += 32, x += 64) {
      __m256i raw[4];
      for (int g = 0; g < 4; ++g) raw[g] = u8x8(qs + 8 * g);
      const __m128i c0 = _mm_cvtsi32_si128(2 * p), c1 = _mm_cvtsi32_si128(2 * p + 1);
      const __m256 d0 = _mm256_set1_ps(ds[2 * p]), m0 = _mm256_set1_ps(ms[2 * p]);
      const __m256 d1 = _mm256_set1_ps(ds[2 * p + 1]), m1 = _mm256_set1_ps(ms[2 * p + 1]);
      auto high = [&](int g, __m128i c) {
        return _mm256_slli_epi32(_mm256_and_si256(_mm256_srl_epi32(hb[g], c), one), 4);
      };
      auto lo = [&](int g) {
        const __m256i q = _mm256_or_si256(_mm256_and_si256(raw[g], m4), high(g, c0));
        return _mm256_sub_ps(_mm256_mul_ps(to_f32(q), d0), m0);
      };
      auto hi = [&](int g) {
        const __m256i q = _mm256_or_si256(_mm256_srli_epi32(raw[g], 4), high(g, c1));
        return _mm256_sub_ps(_mm256_mul_ps(to_f32(q), d1), m1);
      };
      acc.add(lo(0), lo(1), lo(2), lo(3), x);
      acc.add(hi(0), hi(1), hi(2), hi(3), x + 32);
    }
  }
  return acc.sum();
}

float dot_q6_k(const uint8_t* w, const float* x, int64_t n) {
  Acc acc;
  const __m256i m4 = _mm256_set1_epi32(0x0F);
  const __m256i three = _mm256_set1_epi32(3);
  const __m256i bias = _mm256_set1_epi32(32);
  for (int64_t b = 0; b < n / kQKK; ++b, w += sizeof(BlockQ6_K)) {
    const float d = half_at(w + 208);
    const auto* sc = reinterpret_cast<const int8_t*>(w + 192);
    for (int h = 0; h < 2; ++h) {  // halves of 128: ql w+64h, qh w+128+32h, scales sc+8h
      const uint8_t* ql = w + 64 * h;
      const uint8_t* qh = w + 128 + 32 * h;
      __m256i hb[4];
      for (int g = 0; g < 4; ++g) hb[g] = u8x8(qh + 8 * g);
      for (int k = 0; k < 4; ++k, x += 32) {  // quarter k: elements 32k..32k+31 of the half
        __m256i raw[4];
        for (int g = 0; g < 4; ++g) raw[g] = u8x8(ql + 32 * (k & 1) + 8 * g);
        const __m128i csh = _mm_cvtsi32_si128(2 * k);
        const __m256 s0 = _mm256_set1_ps(d * sc[8 * h + 2 * k]);
        const __m256 s1 = _mm256_set1_ps(d * sc[8 * h + 2 * k + 1]);
        auto f = [&](int g) {
          const __m256i lo = (k >> 1) ? _mm256_srli_epi32(raw[g], 4) : _mm256_and_si256(raw[g], m4);
          const __m256i hi = _mm256_slli_epi32(_mm256_and_si256(_mm256_srl_epi32(hb[g], csh), three), 4);
          const __m256i q = _mm256_sub_epi32(_mm256_or_si256(lo, hi), bias);
          return _mm256_mul_ps(to_f32(q), g < 2 ? s0 : s1);
        };
        acc.add(f(0), f(1), f(2), f(3), x);
      }
    }
  }
  return acc.sum();
}

}  // namespace

float dot_row_avx2(DType type, const void* w_row, const float* x, int64_t n) {
  const auto* w = static_cast<const uint8_t*>(w_row);
  switch (type) {
    case DType::F32: return dot_f32(w, x, n);
    case DType::F16: return dot_f16(w, x, n);
    case DType::BF16: return dot_bf16(w, x, n);
    case DType::Q8_0: return dot_q8_0(w, x, n);
    case DType::Q4_0: return dot_q4_0(w, x, n);
    case DType::Q5_0: return dot_q5_0(w, x, n);
    case DType::Q4_K: return dot_q4_k(w, x, n);
    case DType::Q5_K: return dot_q5_k(w, x, n);
    case DType::Q6_K: return dot_q6_k(w, x, n);
    case DType::I8: case DType::F8_E4M3: break;  // dot_row decodes these rows to F32 first
  }
  return dot_row_scalar(type, w_row, x, n);
}

}  // namespace brisk::quant

#endif  // AVX2 && FMA
