// How each weight format looks to a CUDA kernel: a row is a sequence of "units", each one
// 16-byte-aligned load (or one legacy block) that decodes to kRuns runs of kRunLen
// consecutive elements. The GEMV, the dequantize-to-bf16 pass of the GEMM and the embedding
// gather all walk rows through these decoders, so a format is written once.
//
// Layouts on the GPU (cuda_upload.cpp makes them):
//   F32, F16, BF16, Q4_0, Q5_0, Q4_K, Q5_K: as in the GGUF file.
//   Q8_0 and I8: planar int8 [rows][cols] + float scales [rows][groups] in aux (Q8_0's
//     blocks split so every 16 values are one aligned load; I8 has one group per row).
//   F8_E4M3: as in the file, + float scales [rows][groups] in aux (one group per row, or
//     per 128 columns for block scales, expanded to rows as the loader gives them).
//   Q6_K: each 210-byte block padded to 224 bytes so its parts stay 16-byte aligned.
// The arithmetic per element follows ggml's dequantize_row_* (and quant/blocks_*.cpp).
#pragma once

#include <cuda_fp8.h>

#include "backend/cuda/cuda_check.cuh"

namespace brisk::cuda {

struct RowAux {
  const float* scales = nullptr;  // planar int8: [rows][groups]
  int64_t groups = 0;             // scales per row
  int group_elems = 0;            // elements per scale
};

constexpr int kQ6KPaddedBytes = 224;

__device__ __forceinline__ uint4 load16(const uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

// Byte i of a 16-byte value held in registers. A run-time i selects among the four words
// instead of indexing memory, which would move the value to local memory.
__device__ __forceinline__ uint32_t byte_at(const uint4& v, int i) {
  const uint32_t w = i < 8 ? (i < 4 ? v.x : v.y) : (i < 12 ? v.z : v.w);
  return (w >> ((i & 3) * 8)) & 0xffu;
}

struct FmtF32 {
  static constexpr int kRuns = 1, kRunLen = 4;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 4; }
  using Raw = uint4;
  __device__ static Raw load(const uint8_t* row, int64_t u) { return load16(row + u * 16); }
  __device__ static void decode(const Raw& v, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    w[0] = __uint_as_float(v.x), w[1] = __uint_as_float(v.y), w[2] = __uint_as_float(v.z), w[3] = __uint_as_float(v.w);
    start[0] = u * 4;
  }
};

struct FmtF16 {
  static constexpr int kRuns = 1, kRunLen = 8;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 8; }
  using Raw = uint4;
  __device__ static Raw load(const uint8_t* row, int64_t u) { return load16(row + u * 16); }
  __device__ static void decode(const Raw& v, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f = __half22float2(h[i]);
      w[2 * i] = f.x, w[2 * i + 1] = f.y;
    }
    start[0] = u * 8;
  }
};

struct FmtBF16 {
  static constexpr int kRuns = 1, kRunLen = 8;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 8; }
  using Raw = uint4;
  __device__ static Raw load(const uint8_t* row, int64_t u) { return load16(row + u * 16); }
  __device__ static void decode(const Raw& v, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w[2 * i] = __uint_as_float(p[i] << 16);
      w[2 * i + 1] = __uint_as_float(p[i] & 0xffff0000u);
    }
    start[0] = u * 8;
  }
};

// Eight-bit values with a float scale per group of a row ([rows][groups] in aux): planar
// int8 (Q8_0 repacked, and brisk's I8) and FP8 E4M3; 16 values per load.
template <class Values>
struct FmtScaled8 {
  static constexpr int kRuns = 1, kRunLen = 16;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 16; }
  using Raw = uint4;
  __device__ static Raw load(const uint8_t* row, int64_t u) { return load16(row + u * 16); }
  __device__ static void decode(const Raw& v, int64_t r, int64_t u, const RowAux& aux, float* w, int64_t* start) {
    Values::decode16(v, __ldg(aux.scales + r * aux.groups + (u * 16) / aux.group_elems), w);
    start[0] = u * 16;
  }
};

struct Int8Values {
  __device__ static void decode16(const uint4& v, float s, float* w) {
#pragma unroll
    for (int i = 0; i < 16; ++i) w[i] = float(int8_t(byte_at(v, i))) * s;
  }
};

// Two values per conversion (hardware on sm_89+, cuda_fp8.h's emulation below): exactly the
// table of quant/fp8.cpp.
struct Fp8Values {
  __device__ static void decode16(const uint4& v, float s, float* w) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t((p[i / 2] >> (16 * (i & 1))) & 0xffffu), __NV_E4M3);
      const float2 f = __half22float2(__half2(h));
      w[2 * i] = f.x * s, w[2 * i + 1] = f.y * s;
    }
  }
};

using FmtI8 = FmtScaled8<Int8Values>;
using FmtF8 = FmtScaled8<Fp8Values>;

struct FmtQ4_0 {
  static constexpr int kRuns = 2, kRunLen = 16;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 32; }
  using Raw = const uint8_t*;  // 18-byte blocks: read in place
  __device__ static Raw load(const uint8_t* row, int64_t u) { return row + u * 18; }
  __device__ static void decode(const Raw& b, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const float d = f16_bits_to_float(uint16_t(b[0] | (b[1] << 8)));
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = b[2 + j];
      w[j] = float(int(q & 0xF) - 8) * d;
      w[16 + j] = float(int(q >> 4) - 8) * d;
    }
    start[0] = u * 32, start[1] = u * 32 + 16;
  }
};

struct FmtQ5_0 {
  static constexpr int kRuns = 2, kRunLen = 16;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 32; }
  using Raw = const uint8_t*;  // 22-byte blocks: read in place
  __device__ static Raw load(const uint8_t* row, int64_t u) { return row + u * 22; }
  __device__ static void decode(const Raw& b, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const float d = f16_bits_to_float(uint16_t(b[0] | (b[1] << 8)));
    const uint32_t qh = uint32_t(b[2]) | (uint32_t(b[3]) << 8) | (uint32_t(b[4]) << 16) | (uint32_t(b[5]) << 24);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = b[6 + j];
      const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
      w[j] = float(int((q & 0xF) | h0) - 16) * d;
      w[16 + j] = float(int((q >> 4) | h1) - 16) * d;
    }
    start[0] = u * 32, start[1] = u * 32 + 16;
  }
};

// Q4_K / Q5_K scale and min of sub-block j (ggml's get_scale_min_k4); the 12 packed bytes
// are bytes 4..15 of the block's first 16.
__device__ __forceinline__ void scale_min_k4(int j, const uint4& hdr, int& sc, int& m) {
  auto q = [&](int i) { return int(byte_at(hdr, 4 + i)); };
  if (j < 4) {
    sc = q(j) & 63, m = q(j + 4) & 63;
  } else {
    sc = (q(j + 4) & 0xF) | ((q(j - 4) >> 6) << 4);
    m = (q(j + 4) >> 4) | ((q(j) >> 6) << 4);
  }
}

// A Q4_K unit is 16 bytes of qs: 16 low nibbles (sub-block 2g) and 16 high (sub-block 2g+1).
struct FmtQ4_K {
  static constexpr int kRuns = 2, kRunLen = 16;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 256 * 8; }
  struct Raw {
    uint4 hdr, q;
  };
  __device__ static Raw load(const uint8_t* row, int64_t u) {
    const uint8_t* b = row + (u >> 3) * 144;
    const int part = int(u & 7), g = part >> 1, half = part & 1;  // 64-element group, which 16 of its 32 bytes
    return Raw{load16(b), load16(b + 16 + g * 32 + half * 16)};
  }
  __device__ static void decode(const Raw& raw, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const int part = int(u & 7), g = part >> 1, half = part & 1;
    const float d = f16_bits_to_float(uint16_t(raw.hdr.x & 0xffffu));
    const float dmin = f16_bits_to_float(uint16_t(raw.hdr.x >> 16));
    int sc0, m0, sc1, m1;
    scale_min_k4(2 * g, raw.hdr, sc0, m0);
    scale_min_k4(2 * g + 1, raw.hdr, sc1, m1);
    const float d0 = d * float(sc0), mm0 = dmin * float(m0), d1 = d * float(sc1), mm1 = dmin * float(m1);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint32_t q = byte_at(raw.q, j);
      w[j] = d0 * float(q & 0xF) - mm0;
      w[16 + j] = d1 * float(q >> 4) - mm1;
    }
    const int64_t base = (u >> 3) * 256 + g * 64 + half * 16;
    start[0] = base, start[1] = base + 32;
  }
};

struct FmtQ5_K {
  static constexpr int kRuns = 2, kRunLen = 16;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 256 * 8; }
  struct Raw {
    uint4 hdr, qh, q;
  };
  __device__ static Raw load(const uint8_t* row, int64_t u) {
    const uint8_t* b = row + (u >> 3) * 176;
    const int part = int(u & 7), g = part >> 1, half = part & 1;
    return Raw{load16(b), load16(b + 16 + half * 16), load16(b + 48 + g * 32 + half * 16)};
  }
  __device__ static void decode(const Raw& raw, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const int part = int(u & 7), g = part >> 1, half = part & 1;
    const float d = f16_bits_to_float(uint16_t(raw.hdr.x & 0xffffu));
    const float dmin = f16_bits_to_float(uint16_t(raw.hdr.x >> 16));
    int sc0, m0, sc1, m1;
    scale_min_k4(2 * g, raw.hdr, sc0, m0);
    scale_min_k4(2 * g + 1, raw.hdr, sc1, m1);
    const float d0 = d * float(sc0), mm0 = dmin * float(m0), d1 = d * float(sc1), mm1 = dmin * float(m1);
    const uint32_t u1 = 1u << (2 * g), u2 = 2u << (2 * g);  // raw.qh byte l holds element l's 5th bits
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint32_t q = byte_at(raw.q, j), qh = byte_at(raw.qh, j);
      w[j] = d0 * float((q & 0xF) + ((qh & u1) ? 16 : 0)) - mm0;
      w[16 + j] = d1 * float((q >> 4) + ((qh & u2) ? 16 : 0)) - mm1;
    }
    const int64_t base = (u >> 3) * 256 + g * 64 + half * 16;
    start[0] = base, start[1] = base + 32;
  }
};

// Q6_K, padded blocks: ql at 0, qh at 128, scales at 192, d at 208. A unit is one half
// (128 elements) and 16 of its 32 lanes: 64 elements in four runs of 16.
struct FmtQ6_K {
  static constexpr int kRuns = 4, kRunLen = 16;
  __host__ __device__ static int64_t units(int64_t cols) { return cols / 256 * 4; }
  struct Raw {
    uint4 a, b, h, s, d;  // d: the 16 bytes at 208 (the scale and padding)
  };
  __device__ static Raw load(const uint8_t* row, int64_t u) {
    const uint8_t* b = row + (u >> 2) * kQ6KPaddedBytes;
    const int hh = int((u >> 1) & 1), l0 = int(u & 1) * 16;
    return Raw{load16(b + 64 * hh + l0), load16(b + 64 * hh + 32 + l0), load16(b + 128 + 32 * hh + l0), load16(b + 192),
               load16(b + 208)};
  }
  __device__ static void decode(const Raw& raw, int64_t, int64_t u, const RowAux&, float* w, int64_t* start) {
    const int hh = int((u >> 1) & 1), l0 = int(u & 1) * 16;

    const int si = 8 * hh + l0 / 16;
    auto sc = [&](int k) { return float(int8_t(byte_at(raw.s, si + k))); };
    const float d = f16_bits_to_float(uint16_t(raw.d.x & 0xffffu));
    const float s0 = d * sc(0), s1 = d * sc(2), s2 = d * sc(4), s3 = d * sc(6);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint32_t qa = byte_at(raw.a, j), qb = byte_at(raw.b, j), qh = byte_at(raw.h, j);
      w[j] = s0 * float(int((qa & 0xF) | (((qh >> 0) & 3) << 4)) - 32);
      w[16 + j] = s1 * float(int((qb & 0xF) | (((qh >> 2) & 3) << 4)) - 32);
      w[32 + j] = s2 * float(int((qa >> 4) | (((qh >> 4) & 3) << 4)) - 32);
      w[48 + j] = s3 * float(int((qb >> 4) | (((qh >> 6) & 3) << 4)) - 32);
    }
    const int64_t base = (u >> 2) * 256 + 128 * hh + l0;
    start[0] = base, start[1] = base + 32, start[2] = base + 64, start[3] = base + 96;
  }
};

// Load and decode in one step (where nothing is gained by hoisting the loads).
template <class Fmt>
__device__ __forceinline__ void decode_unit(const uint8_t* row, int64_t r, int64_t u, const RowAux& aux, float* w,
                                            int64_t* start) {
  Fmt::decode(Fmt::load(row, u), r, u, aux, w, start);
}

// Calls f(Fmt{}) for the decoder of a GPU layout; returns false for a layout with none.
enum class GpuLayout : uint32_t { F32, F16, BF16, I8, F8, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K };

template <class F>
bool with_format(GpuLayout l, F&& f) {
  switch (l) {
    case GpuLayout::F32: f(FmtF32{}); return true;
    case GpuLayout::F16: f(FmtF16{}); return true;
    case GpuLayout::BF16: f(FmtBF16{}); return true;
    case GpuLayout::I8: f(FmtI8{}); return true;
    case GpuLayout::F8: f(FmtF8{}); return true;
    case GpuLayout::Q4_0: f(FmtQ4_0{}); return true;
    case GpuLayout::Q5_0: f(FmtQ5_0{}); return true;
    case GpuLayout::Q4_K: f(FmtQ4_K{}); return true;
    case GpuLayout::Q5_K: f(FmtQ5_K{}); return true;
    case GpuLayout::Q6_K: f(FmtQ6_K{}); return true;
  }
  return false;
}

}  // namespace brisk::cuda
