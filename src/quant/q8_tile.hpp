// The tiled int8 matmul behind matmul_q8: R weight rows x T tokens per tile, each row's
// blocks decoded once per tile and each token's int8 levels loaded once, so the decode is
// shared by T tokens and the activation loads by R rows. Written once against a policy P
// (the kernel level's vector width and int8 dot product) and instantiated per level by
// matmul_q8_<isa>.cpp.
//
// Every (row, token) result follows the order of dot_q8.cpp exactly: a "pair" vector holds
// chunks 2p and 2p+1 (lanes 0-7 and 8-15), so one accumulator of 16 lanes is the two parity
// accumulators side by side. lane = sum of 4 products (exact int, minus kBias * sum of the 4
// x when the levels are biased), times the lane scale in float (exact: |product| < 2^24),
// then fma(fs * xd, lane, acc). So a token's result is the same bits alone or in any batch,
// and the same as dot_row_q8_scalar on every level.
#pragma once

#include "quant/dot.hpp"
#include "quant/q8_formats.hpp"

// Fixed-count loops over the tile's rows and tokens, fully unrolled so the accumulators
// stay in registers (an array indexed in a loop would live on the stack).
#define BRISK_UNROLL _Pragma("GCC unroll 16")

namespace brisk::quant::BRISK_Q8_ISA {

template <class P, class Fm, int R, int T>
struct Tile {
  using I = typename P::I;
  using F = typename P::F;
  using Block = typename Fm::Block;
  static constexpr bool kXSums = Fm::kSigned ? P::kSignedByBias : Fm::kBias != 0;
  static constexpr int kShift = Fm::kSigned ? 7 : Fm::kBias == 8 ? 3 : Fm::kBias == 16 ? 4 : 5;

  F acc[R][T];
  __m256 macc[R][T];

  // The lanes of one (row, token) pair: exact integer dot of each 4 elements.
  static I lanes(I u, I x, I xs) {
    if constexpr (Fm::kSigned) return P::signed_lanes(u, x, xs);
    else if constexpr (Fm::kBias != 0) return P::sub(P::dot(u, x), xs);
    else return P::dot(u, x);
  }

  // Pair p of every (row, token); kHalf: the rows end after chunk 2p.
  template <bool kHalf>
  void step(const uint8_t* const* rows, const Block* blk, const Q8Row* const* toks, int64_t p) {
    constexpr bool half = kHalf;
    I x[T], xs[T];
    F xd[T];
    BRISK_UNROLL
    for (int t = 0; t < T; ++t) {
      x[t] = P::load_x(toks[t]->q + 64 * p, half);
      xd[t] = P::splat2(toks[t]->d[2 * p], half ? 0.f : toks[t]->d[2 * p + 1]);
      if constexpr (kXSums) xs[t] = P::slli(P::sum4(x[t]), kShift);
    }
    BRISK_UNROLL
    for (int r = 0; r < R; ++r) {
      const WPair w = Fm::decode(rows[r], blk[r], p, half);
      I u = P::join(w.c0, w.c1);
      if constexpr (Fm::kSigned) u = P::prep_signed(u);
      const F fs = P::splat2(w.fs0, w.fs1);
      [[maybe_unused]] F sc;
      if constexpr (Fm::kLaneScales) sc = P::scales4(w.isc);
      BRISK_UNROLL
      for (int t = 0; t < T; ++t) {
        F v = P::cvt(lanes(u, x[t], xs[t]));
        if constexpr (Fm::kLaneScales) v = P::mul(v, sc);
        acc[r][t] = P::fma(P::mul(fs, xd[t]), v, acc[r][t]);
      }
    }
  }

  // K-quant mins of super-block b: macc += (dmin * xd) * float(m * xsum), 8 sub-blocks at once.
  void mins(const Block* blk, const Q8Row* const* toks, int64_t b) {
    BRISK_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m256i m8 = Fm::mins(blk[r]);
      const __m256 dmin = _mm256_set1_ps(blk[r].dmin);
      BRISK_UNROLL
      for (int t = 0; t < T; ++t) {
        const __m256 dm = _mm256_mul_ps(dmin, _mm256_loadu_ps(toks[t]->d + 8 * b));
        const __m256i ms = _mm256_mullo_epi32(m8, load256(toks[t]->sum + 8 * b));
        macc[r][t] = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(ms), macc[r][t]);
      }
    }
  }

  static float hsum8(__m256 v) {
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
  }

  // out[r * T + t] = dot of rows[r] and toks[t] over cols elements.
  void run(const uint8_t* const* rows, const Q8Row* const* toks, int64_t cols, float* out) {
    BRISK_UNROLL
    for (int r = 0; r < R; ++r)
      BRISK_UNROLL
      for (int t = 0; t < T; ++t) {
        acc[r][t] = P::zero();
        macc[r][t] = _mm256_setzero_ps();
      }
    const int64_t chunks = cols / 32, whole_pairs = chunks / 2;
    constexpr int kPairs = Fm::kPairsPerBlock;
    Block blk[R];
    for (int64_t p = 0; p < whole_pairs; p += kPairs) {
      BRISK_UNROLL
      for (int r = 0; r < R; ++r) blk[r] = Fm::block(rows[r], p / kPairs);
      if constexpr (Fm::kMins) mins(blk, toks, p / kPairs);
      BRISK_UNROLL
      for (int j = 0; j < kPairs; ++j) step<false>(rows, blk, toks, p + j);
    }
    if constexpr (kPairs == 1) {  // legacy formats and I8 (their Block is empty) may end in half a pair
      if (chunks % 2) step<true>(rows, blk, toks, whole_pairs);
    }
    BRISK_UNROLL
    for (int r = 0; r < R; ++r)
      BRISK_UNROLL
      for (int t = 0; t < T; ++t) {
        float s = hsum8(P::fold(acc[r][t]));
        if constexpr (Fm::kMins) s -= hsum8(macc[r][t]);
        out[r * T + t] = s;
      }
  }
};

// The next row group while this one is computed: decode streams rows from memory, and the
// hardware prefetcher alone leaves single-token products short of the bandwidth (measured:
// 7.2 -> 8.2 GB/s for one thread through 262144 x 640 Q8_0; further ahead gained nothing).
inline void prefetch_rows(const uint8_t* p, uint64_t bytes) {
  for (uint64_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// y[t * ldy + r] for every row and token: tiles of P::kRows x P::kTokens, then the leftover
// tokens one at a time; a short last row group repeats its last row (results dropped).
template <class P, class Fm>
void matmul(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n, int64_t cols,
            float* y, int64_t ldy) {
  constexpr int R = P::kRows, T = P::kTokens;
  for (int64_t r0 = 0; r0 < rows; r0 += R) {
    const uint8_t* rp[R];
    for (int i = 0; i < R; ++i) rp[i] = w + uint64_t(r0 + i < rows ? r0 + i : rows - 1) * row_bytes;
    const int nr = int(rows - r0 < R ? rows - r0 : R);
    if (r0 + 2 * R <= rows) prefetch_rows(w + uint64_t(r0 + R) * row_bytes, R * row_bytes);
    float out[R * T];
    int64_t t0 = 0;
    for (; t0 + T <= n; t0 += T) {
      const Q8Row* tp[T];
      for (int i = 0; i < T; ++i) tp[i] = x + t0 + i;
      Tile<P, Fm, R, T>().run(rp, tp, cols, out);
      for (int i = 0; i < nr; ++i)
        for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + i] = out[i * T + t];
    }
    for (; t0 < n; ++t0) {
      const Q8Row* tp[1] = {x + t0};
      Tile<P, Fm, R, 1>().run(rp, tp, cols, out);
      for (int i = 0; i < nr; ++i) y[t0 * ldy + r0 + i] = out[i];
    }
  }
}

// The format switch every level shares; false for a type without an int8 path.
template <class P>
bool matmul_any(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Row* x, int64_t n,
                int64_t cols, float* y, int64_t ldy) {
  switch (type) {
    case DType::Q8_0: matmul<P, FmtQ8_0>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    case DType::Q4_0: matmul<P, FmtQ4_0>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    case DType::Q5_0: matmul<P, FmtQ5_0>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    case DType::Q4_K: matmul<P, FmtK45<false>>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    case DType::Q5_K: matmul<P, FmtK45<true>>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    case DType::Q6_K: matmul<P, FmtQ6_K>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    case DType::I8: matmul<P, FmtI8>(w, row_bytes, rows, x, n, cols, y, ldy); return true;
    default: return false;
  }
}

}  // namespace brisk::quant::BRISK_Q8_ISA
