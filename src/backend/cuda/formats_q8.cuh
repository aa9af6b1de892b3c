// Integer dot products of weight units (formats.cuh) against activations quantized to int8
// blocks (Q8Activations, kernels.cuh): the decode GEMV's path for the 8-bit and K-quant
// formats, where decoding every weight to float and multiplying by float activations costs
// more ALU and L1 traffic than streaming the weights from HBM. Q8Dot<Fmt>::prep turns one
// loaded unit into int8 words and float scales once; dot() then takes any number of token
// rows with dp4a (four products per instruction) and a few float operations per 16 values.
// The arithmetic is ggml's vec_dot_*_q8_1 idea: sum_j w_j x_j = d_w d_x sum_j q_j xq_j, with
// a K-quant's minimum folded in through the activations' per-16 sums.
#pragma once

#include "backend/cuda/formats.cuh"

namespace brisk::cuda {

__device__ __forceinline__ int4 ldg_int4(const int8_t* p) { return __ldg(reinterpret_cast<const int4*>(p)); }

__device__ __forceinline__ int dp4a4(const int4& w, const int4& x, int acc) {
  acc = __dp4a(w.x, x.x, acc);
  acc = __dp4a(w.y, x.y, acc);
  acc = __dp4a(w.z, x.z, acc);
  return __dp4a(w.w, x.w, acc);
}

// Word i of a 16-byte value in registers (i a compile-time constant in unrolled loops).
__device__ __forceinline__ uint32_t word_at(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// Bytes of v (each 0..63) minus 32, as signed bytes, without borrows between bytes.
__device__ __forceinline__ int sub32_bytes(uint32_t v) { return int(((v | 0x80808080u) - 0x20202020u) ^ 0x80808080u); }

template <class Fmt>
struct Q8Dot {
  static constexpr bool kOk = false;
};

// Planar int8 (Q8_0 repacked, I8): a unit is 16 weights of one scale group, half an x block.
template <>
struct Q8Dot<FmtI8> {
  static constexpr bool kOk = true;
  struct Prep {
    int4 w;
    float s;
    int64_t off;
  };
  __device__ static Prep prep(const uint4& v, int64_t r, int64_t u, const RowAux& aux) {
    return {make_int4(int(v.x), int(v.y), int(v.z), int(v.w)),
            __ldg(aux.scales + r * aux.groups + (u * 16) / aux.group_elems), u * 16};
  }
  __device__ static float dot(const Prep& p, const int8_t* xq, const float* xd, const float*) {
    return float(dp4a4(p.w, ldg_int4(xq + p.off), 0)) * p.s * __ldg(xd + (p.off >> 5));
  }
};

// Q4_K and Q5_K: a unit is 16 values of sub-block 2g (at off) and 16 of 2g+1 (at off + 32).
struct Q8PrepK {
  int4 lo, hi;
  float d0, m0, d1, m1;
  int64_t off;
};

__device__ __forceinline__ float q8_dot_k(const Q8PrepK& p, const int8_t* xq, const float* xd, const float* xs) {
  const int ia = dp4a4(p.lo, ldg_int4(xq + p.off), 0), ib = dp4a4(p.hi, ldg_int4(xq + p.off + 32), 0);
  const int64_t b = p.off >> 5, h = p.off >> 4;
  return p.d0 * float(ia) * __ldg(xd + b) - p.m0 * __ldg(xs + h) + p.d1 * float(ib) * __ldg(xd + b + 1) -
         p.m1 * __ldg(xs + h + 2);
}

// Q4_K is Q5_K without the fifth bits (qh all zero, which the compiler folds away).
__device__ __forceinline__ Q8PrepK q8_prep_k(const uint4& hdr, const uint4& q, const uint4& qh, int64_t u) {
  const int part = int(u & 7), g = part >> 1, half = part & 1;
  const float d = f16_bits_to_float(uint16_t(hdr.x & 0xffffu)), dmin = f16_bits_to_float(uint16_t(hdr.x >> 16));
  int sc0, mn0, sc1, mn1;
  scale_min_k4(2 * g, hdr, sc0, mn0);
  scale_min_k4(2 * g + 1, hdr, sc1, mn1);
  Q8PrepK p;
  p.d0 = d * float(sc0), p.m0 = dmin * float(mn0), p.d1 = d * float(sc1), p.m1 = dmin * float(mn1);
  p.off = (u >> 3) * 256 + g * 64 + half * 16;
  const uint32_t m = 0x0F0F0F0Fu, one = 0x01010101u;
  auto lo = [&](uint32_t w, uint32_t h) { return int((w & m) | (((h >> (2 * g)) & one) << 4)); };
  auto hi = [&](uint32_t w, uint32_t h) { return int(((w >> 4) & m) | (((h >> (2 * g + 1)) & one) << 4)); };
  p.lo = make_int4(lo(q.x, qh.x), lo(q.y, qh.y), lo(q.z, qh.z), lo(q.w, qh.w));
  p.hi = make_int4(hi(q.x, qh.x), hi(q.y, qh.y), hi(q.z, qh.z), hi(q.w, qh.w));
  return p;
}

template <>
struct Q8Dot<FmtQ4_K> {
  static constexpr bool kOk = true;
  using Prep = Q8PrepK;
  __device__ static Prep prep(const FmtQ4_K::Raw& raw, int64_t, int64_t u, const RowAux&) {
    return q8_prep_k(raw.hdr, raw.q, make_uint4(0, 0, 0, 0), u);
  }
  __device__ static float dot(const Prep& p, const int8_t* xq, const float* xd, const float* xs) {
    return q8_dot_k(p, xq, xd, xs);
  }
};

template <>
struct Q8Dot<FmtQ5_K> {
  static constexpr bool kOk = true;
  using Prep = Q8PrepK;
  __device__ static Prep prep(const FmtQ5_K::Raw& raw, int64_t, int64_t u, const RowAux&) {
    return q8_prep_k(raw.hdr, raw.q, raw.qh, u);
  }
  __device__ static float dot(const Prep& p, const int8_t* xq, const float* xd, const float* xs) {
    return q8_dot_k(p, xq, xd, xs);
  }
};

// Q6_K: a unit is four runs of 16 values at off, off + 32, off + 64, off + 96.
template <>
struct Q8Dot<FmtQ6_K> {
  static constexpr bool kOk = true;
  struct Prep {
    int4 v[4];
    float s[4];
    int64_t off;
  };
  __device__ static Prep prep(const FmtQ6_K::Raw& raw, int64_t, int64_t u, const RowAux&) {
    const int hh = int((u >> 1) & 1), l0 = int(u & 1) * 16, si = 8 * hh + l0 / 16;
    const float d = f16_bits_to_float(uint16_t(raw.d.x & 0xffffu));
    Prep p;
#pragma unroll
    for (int k = 0; k < 4; ++k) p.s[k] = d * float(int8_t(byte_at(raw.s, si + 2 * k)));
    const uint32_t m = 0x0F0F0F0Fu, three = 0x03030303u;
    int w[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t a = word_at(raw.a, i), b = word_at(raw.b, i), h = word_at(raw.h, i);
      w[0][i] = sub32_bytes((a & m) | ((h & three) << 4));
      w[1][i] = sub32_bytes((b & m) | (((h >> 2) & three) << 4));
      w[2][i] = sub32_bytes(((a >> 4) & m) | (((h >> 4) & three) << 4));
      w[3][i] = sub32_bytes(((b >> 4) & m) | (((h >> 6) & three) << 4));
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) p.v[k] = make_int4(w[k][0], w[k][1], w[k][2], w[k][3]);
    p.off = (u >> 2) * 256 + 128 * hh + l0;
    return p;
  }
  __device__ static float dot(const Prep& p, const int8_t* xq, const float* xd, const float*) {
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      acc += p.s[k] * __ldg(xd + ((p.off + 32 * k) >> 5)) * float(dp4a4(p.v[k], ldg_int4(xq + p.off + 32 * k), 0));
    return acc;
  }
};

}  // namespace brisk::cuda
