// Weight decoders of the tiled int8 kernels (q8_tile.hpp): one struct per format that turns
// a row's pair p (elements 64p..64p+63, i.e. the 32-element chunks 2p and 2p+1 of the order
// in dot_q8.cpp) into 64 byte levels plus its scales, with 256-bit AVX2 intrinsics that
// every kernel level has. What a K-quant super-block's 4 pairs share (scales, mins) is
// decoded once into its Block; legacy formats have one pair per (empty) Block. Levels are unsigned with a bias (q = u - kBias, so maddubs and
// VNNI's unsigned x signed product apply) or, for Q8_0 and I8, signed (kSigned).
//
// Included only by the per-ISA kernel files, each of which defines BRISK_Q8_ISA first: the
// namespace keeps each file's copy of these inline functions apart, so the linker can never
// hand code compiled for AVX-512 to a caller on an AVX2 machine.
#pragma once

#ifndef BRISK_Q8_ISA
#error "define BRISK_Q8_ISA (the kernel level's namespace) before including q8_formats.hpp"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace brisk::quant::BRISK_Q8_ISA {

// A row's pair: chunk 2p in c0, chunk 2p+1 in c1, the f16 block scales as floats, and the
// integer lane scales (lanes 0-3, 4-7 of chunk 2p, then of chunk 2p+1) where the format has them.
struct WPair {
  __m256i c0, c1;
  float fs0, fs1;
  __m128i isc;
};

struct NoBlock {};

inline float half_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(v)));
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 bytes of nibbles as 32 bytes in element order: low nibbles, then high nibbles.
inline __m256i nibbles_in_order(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
}

// Byte j = 0x10 where bit j of the little-endian u32 at p is set.
inline __m256i fifth_bits(const uint8_t* p) {
  uint32_t qh;
  std::memcpy(&qh, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(qh)), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                   2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// The 8 6-bit scales and 8 mins (one byte each) of a Q4_K / Q5_K super-block's 12 packed
// bytes (blocks.hpp's scale_min_k4, 4 at a time).
inline void k4_scales_mins(const uint8_t* q, uint64_t* scales, uint64_t* mins) {
  uint32_t u[3];
  std::memcpy(u, q, 12);
  const uint32_t sc_lo = u[0] & 0x3f3f3f3f, mn_lo = u[1] & 0x3f3f3f3f;
  const uint32_t sc_hi = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
  const uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
  *scales = sc_lo | uint64_t(sc_hi) << 32;
  *mins = mn_lo | uint64_t(mn_hi) << 32;
}

// ---- legacy blocks (one per chunk) and I8; `half`: the row ends after chunk 2p -----------

template <int kBlockBytes>
struct Legacy {
  static constexpr bool kLaneScales = false, kMins = false;
  static constexpr int kPairsPerBlock = 1;
  using Block = NoBlock;
  static Block block(const uint8_t*, int64_t) { return {}; }
  static const uint8_t* block(const uint8_t* row, int64_t p, int k) { return row + (2 * p + k) * kBlockBytes; }
  template <typename Levels>
  static WPair pair(const uint8_t* row, int64_t p, bool half, Levels levels) {
    const uint8_t* b0 = block(row, p, 0);
    WPair w{levels(b0), _mm256_setzero_si256(), half_at(b0), 0.f, _mm_setzero_si128()};
    if (!half) {
      const uint8_t* b1 = block(row, p, 1);
      w.c1 = levels(b1);
      w.fs1 = half_at(b1);
    }
    return w;
  }
};

struct FmtQ8_0 : Legacy<34> {
  static constexpr bool kSigned = true;
  static constexpr int kBias = 0;
  static WPair decode(const uint8_t* row, const Block&, int64_t p, bool half) {
    return pair(row, p, half, [](const uint8_t* b) { return load256(b + 2); });
  }
};

struct FmtQ4_0 : Legacy<18> {
  static constexpr bool kSigned = false;
  static constexpr int kBias = 8;
  static WPair decode(const uint8_t* row, const Block&, int64_t p, bool half) {
    return pair(row, p, half, [](const uint8_t* b) { return nibbles_in_order(b + 2); });
  }
};

struct FmtQ5_0 : Legacy<22> {
  static constexpr bool kSigned = false;
  static constexpr int kBias = 16;
  static WPair decode(const uint8_t* row, const Block&, int64_t p, bool half) {
    return pair(row, p, half, [](const uint8_t* b) { return _mm256_or_si256(nibbles_in_order(b + 6), fifth_bits(b + 2)); });
  }
};

// brisk's I8: plain int8 values (the row's float scale is applied by the caller).
struct FmtI8 {
  static constexpr bool kSigned = true, kLaneScales = false, kMins = false;
  static constexpr int kBias = 0, kPairsPerBlock = 1;
  using Block = NoBlock;
  static Block block(const uint8_t*, int64_t) { return {}; }
  static WPair decode(const uint8_t* row, const Block&, int64_t p, bool half) {
    const uint8_t* b = row + 64 * p;
    return WPair{load256(b), half ? _mm256_setzero_si256() : load256(b + 32), 1.f, half ? 0.f : 1.f,
                 _mm_setzero_si128()};
  }
};

// ---- K-quants: 4 pairs per 256-element super-block, never a half pair -------------------

template <bool kFive>
struct FmtK45 {
  static constexpr bool kSigned = false, kLaneScales = true, kMins = true;
  static constexpr int kBias = 0, kPairsPerBlock = 4;
  static constexpr int kBlockBytes = kFive ? 176 : 144;
  struct Block {
    const uint8_t* base;
    float d, dmin;
    uint64_t scales, mins;  // byte j: sub-block j's
  };
  static Block block(const uint8_t* row, int64_t b) {
    Block k{row + b * kBlockBytes, 0, 0, 0, 0};
    k.d = half_at(k.base);
    k.dmin = half_at(k.base + 2);
    k4_scales_mins(k.base + 4, &k.scales, &k.mins);
    return k;
  }
  static __m256i mins(const Block& b) { return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(b.mins))); }
  static WPair decode(const uint8_t*, const Block& b, int64_t p, bool) {
    const int j = int(p % 4);  // sub-blocks 2j (low nibbles) and 2j+1 (high nibbles)
    const __m256i raw = load256(b.base + (kFive ? 48 : 16) + 32 * j);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
    if (kFive) {
      const __m256i hb = load256(b.base + 16), s16 = _mm256_set1_epi8(0x10);
      const __m256i b0 = _mm256_set1_epi8(char(1 << (2 * j))), b1 = _mm256_set1_epi8(char(2 << (2 * j)));
      lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, b0), b0), s16));
      hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, b1), b1), s16));
    }
    // lanes 0-3 and 4-7 take scale 2j, lanes 8-15 scale 2j+1
    const uint32_t s2 = uint32_t(b.scales >> (16 * j));
    const uint32_t four = (s2 & 0xFF) * 0x0101u | ((s2 >> 8) & 0xFF) * 0x01010000u;
    return WPair{lo, hi, b.d, b.d, _mm_cvtepu8_epi32(_mm_cvtsi32_si128(int(four)))};
  }
};

struct FmtQ6_K {
  static constexpr bool kSigned = false, kLaneScales = true, kMins = false;
  static constexpr int kBias = 32, kPairsPerBlock = 4;
  struct Block {
    const uint8_t* base;
    float d;
  };
  static Block block(const uint8_t* row, int64_t b) {
    const uint8_t* blk = row + b * 210;
    return Block{blk, half_at(blk + 208)};
  }
  static WPair decode(const uint8_t*, const Block& b, int64_t p, bool) {
    const int j = int(p % 4), h = j / 2, k = 2 * (j % 2);  // quarters k and k+1 of half h
    const __m256i ql0 = load256(b.base + 64 * h), ql1 = load256(b.base + 64 * h + 32);
    const __m256i qh = load256(b.base + 128 + 32 * h);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    auto level = [&](__m256i ql, int q) {
      const __m256i lo = k ? _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4) : _mm256_and_si256(ql, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * q)), m2);
      return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    };
    int32_t sc4;  // the int8 scales of the 4 sixteens: 8h + 2k .. 8h + 2k + 3 = 4j ..
    std::memcpy(&sc4, b.base + 192 + 4 * j, 4);
    return WPair{level(ql0, k), level(ql1, k + 1), b.d, b.d, _mm_cvtepi8_epi32(_mm_cvtsi32_si128(sc4))};
  }
};

}  // namespace brisk::quant::BRISK_Q8_ISA
