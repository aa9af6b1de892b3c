// dot_row_q8: weights against int8-quantized activations (llama.cpp's approach). This file
// has the activation quantizer, the dispatch, and the scalar definition of the order that
// the AVX2 kernel and matmul_q8's tiled kernels (q8_tile.hpp, every level) reproduce bit for bit:
//
// The row is cut into 32-element chunks c, aligned with the activation blocks. Each chunk
// decodes to signed int levels q[32], an integer scale per 4-element lane (1 for Q8_0 /
// Q4_0 / Q5_0, the 6-bit sub-block scale for Q4_K / Q5_K, the int8 scale of each 16 for
// Q6_K), a float scale fs (the block's f16 d; 1 for I8) and, for Q4_K / Q5_K, dmin and the 6-bit min m.
// lane[l] = isc[l] * sum_{k<4} q[4l+k] * xq[4l+k] (exact int); acc[c % 2][l] =
// fma(fs * xd[c], float(lane[l]), acc[c % 2][l]); mins: macc[c % 8] = fma(dmin * xd[c],
// float(m * xsum[c]), macc[c % 8]). With hsum(v) = (t0 + t2) + (t1 + t3), t[l] = v[l] +
// v[l+4]: result = hsum(acc0 + acc1) - hsum(macc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "base/half.hpp"
#include "quant/blocks.hpp"
#include "quant/cpu_isa.hpp"
#include "quant/dot.hpp"
#include "quant/quantize.hpp"

#pragma GCC optimize("fp-contract=off")

namespace brisk {
namespace quant {
namespace {

struct Chunk {
  int q[32];
  int isc[8];
  float fs = 0, dmin = 0;
  int m = 0;
  bool has_min = false;
};

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Chunk c of a row, decoded into the integer form above.
Chunk decode_chunk(DType type, const uint8_t* w, int64_t c) {
  Chunk k;
  std::fill(k.isc, k.isc + 8, 1);
  switch (type) {
    case DType::Q8_0: {
      const uint8_t* b = w + c * 34;
      k.fs = f16_to_f32(u16_at(b));
      for (int i = 0; i < 32; ++i) k.q[i] = int8_t(b[2 + i]);
      break;
    }
    case DType::Q4_0: {
      const uint8_t* b = w + c * 18;
      k.fs = f16_to_f32(u16_at(b));
      for (int i = 0; i < 16; ++i) {
        k.q[i] = (b[2 + i] & 0xF) - 8;
        k.q[i + 16] = (b[2 + i] >> 4) - 8;
      }
      break;
    }
    case DType::Q5_0: {
      const uint8_t* b = w + c * 22;
      k.fs = f16_to_f32(u16_at(b));
      uint32_t qh;
      std::memcpy(&qh, b + 2, 4);
      for (int i = 0; i < 16; ++i) {
        k.q[i] = ((b[6 + i] & 0xF) | (((qh >> i) & 1) << 4)) - 16;
        k.q[i + 16] = ((b[6 + i] >> 4) | (((qh >> (i + 16)) & 1) << 4)) - 16;
      }
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = type == DType::Q5_K;
      const uint8_t* b = w + (c / 8) * (five ? 176 : 144);
      const int s = int(c % 8);
      uint8_t sc, m;
      scale_min_k4(s, b + 4, &sc, &m);
      k.fs = f16_to_f32(u16_at(b));
      k.dmin = f16_to_f32(u16_at(b + 2));
      k.m = m;
      k.has_min = true;
      std::fill(k.isc, k.isc + 8, int(sc));
      const uint8_t* qs = b + (five ? 48 : 16) + 32 * (s / 2);
      for (int i = 0; i < 32; ++i) {
        k.q[i] = (qs[i] >> (4 * (s & 1))) & 0xF;
        if (five) k.q[i] |= ((b[16 + i] >> s) & 1) << 4;
      }
      break;
    }
    case DType::I8: {  // plain levels; the row's float scale is applied outside
      k.fs = 1.0f;
      for (int i = 0; i < 32; ++i) k.q[i] = int8_t(w[32 * c + i]);
      break;
    }
    case DType::Q6_K: {
      const uint8_t* b = w + (c / 8) * 210;
      const int h = int(c % 8) / 4, qt = int(c % 4);
      const uint8_t* ql = b + 64 * h + 32 * (qt & 1);
      const uint8_t* qh = b + 128 + 32 * h;
      const auto* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * h + 2 * qt;
      k.fs = f16_to_f32(u16_at(b + 208));
      for (int l = 0; l < 8; ++l) k.isc[l] = sc[l / 4];
      for (int i = 0; i < 32; ++i)
        k.q[i] = (((ql[i] >> (4 * (qt >> 1))) & 0xF) | (((qh[i] >> (2 * qt)) & 3) << 4)) - 32;
      break;
    }
    default: break;
  }
  return k;
}

}  // namespace

float dot_row_q8_scalar(DType type, const void* w_row, const QuantizedActivations& x) {
  const auto* w = static_cast<const uint8_t*>(w_row);
  float acc[2][8] = {}, macc[8] = {};
  for (int64_t c = 0; c < x.n / 32; ++c) {
    const Chunk k = decode_chunk(type, w, c);
    const int8_t* xq = x.q.data() + 32 * c;
    const float f = k.fs * x.d[size_t(c)];
    for (int l = 0; l < 8; ++l) {
      int lane = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) lane += k.q[j] * xq[j];
      acc[c % 2][l] = std::fma(f, float(k.isc[l] * lane), acc[c % 2][l]);
    }
    if (k.has_min)
      macc[c % 8] = std::fma(k.dmin * x.d[size_t(c)], float(k.m * x.sum[size_t(c)]), macc[c % 8]);
  }
  auto hsum = [](const float* v) {
    float t[4];
    for (int l = 0; l < 4; ++l) t[l] = v[l] + v[l + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
  };
  float s[8];
  for (int l = 0; l < 8; ++l) s[l] = acc[0][l] + acc[1][l];
  return hsum(s) - hsum(macc);
}

}  // namespace quant

void quantize_activations(const float* x, int64_t n, QuantizedActivations* out) {
  if (n < 0 || n % 32 != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "quantize_activations: " + std::to_string(n) + " is not a multiple of 32");
  out->n = n;
  out->q.resize(size_t(n));
  out->d.resize(size_t(n / 32));
  out->sum.resize(size_t(n / 32));
#if BRISK_X86_KERNELS
  if (quant::active_cpu_isa() >= quant::CpuIsa::kAvx2)
    return quant::quantize_activations_avx2(x, n, out->q.data(), out->d.data(), out->sum.data());
#endif
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int v = int(std::round(xb[j] * id));
      out->q[size_t(32 * b + j)] = int8_t(v);
      sum += v;
    }
    out->d[size_t(b)] = d;
    out->sum[size_t(b)] = sum;
  }
}

bool dot_row_q8_supported(DType type) {
  switch (type) {
    case DType::Q8_0: case DType::Q4_0: case DType::Q5_0:
    case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::I8: return true;
    default: return false;
  }
}

float dot_row_q8(DType type, const void* w_row, const QuantizedActivations& x) {
  if (!dot_row_q8_supported(type))
    throw Error(ErrorCode::kInvalidArgument, std::string("dot_row_q8: no int8 path for ") + dtype_name(type));
  if (x.n % dtype_traits(type).block_elems != 0)
    throw Error(ErrorCode::kInvalidArgument, "dot_row_q8: row length " + std::to_string(x.n) +
                                                 " is not a whole number of " + dtype_name(type) + " blocks");
#if BRISK_X86_KERNELS
  if (quant::active_cpu_isa() >= quant::CpuIsa::kAvx2) return quant::dot_row_q8_avx2(type, w_row, x);
#endif
  return quant::dot_row_q8_scalar(type, w_row, x);
}

}  // namespace brisk
