// Scalar encode/decode of the 256-element K-quant super-blocks Q4_K, Q5_K, Q6_K. Decoding
// matches ggml's dequantize_row_* bit for bit; encoding follows quantize_row_*_ref (the
// make_qkx2_quants / make_qx_quants scale searches) operation for operation.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.hpp"
#include "quant/blocks.hpp"

// The reference rounds after every multiply and add; see blocks_legacy.cpp.
#pragma GCC optimize("fp-contract=off")

namespace brisk::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;


// Round to nearest (ties to even) by the float-magic trick ggml uses; |v| < 2^22.
int nearest_int(float v) {
  float f = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &f, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// Affine (scale, min) fit of n values to levels 0..nmax, weighted: the first guess from
// the range, then nstep+1 trial scales around it, each refined by weighted least squares;
// keeps the lowest weighted error. Returns the scale, writes -min to *the_min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Symmetric fit of n values to levels -nmax..nmax-1 (stored +nmax), weights x^2
// (ggml's rmse_type 1 without importance weights): 19 trial scales, least-squares refit.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Shared front half of Q4_K / Q5_K encoding: fit each 32-element sub-block, quantize the 8
// scales and 8 mins to 6 bits against the super-block maxima, pack them, then re-derive the
// levels L (0..nmax) against the scales as stored.
template <typename B>
void quantize_k_scales(const float* x, B& b, uint8_t* L, int nmax, float rmin, float rdelta,
                       int nstep) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                 rmin, rdelta, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(b.scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      b.scales[j] = ls;
      b.scales[j + 4] = lm;
    } else {
      b.scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
      b.scales[j - 4] |= uint8_t((ls >> 4) << 6);
      b.scales[j] |= uint8_t((lm >> 4) << 6);
    }
  }
  b.d = f32_to_f16(max_scale / 63.f);
  b.dmin = f32_to_f16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, b.scales, &sc, &m);
    const float d = f16_to_f32(b.d) * sc;
    if (!d) continue;  // sub-block keeps the levels of its own fit
    const float dm = f16_to_f32(b.dmin) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = uint8_t(std::max(0, std::min(nmax, l)));
    }
  }
}

}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = f16_to_f32(b.d), min = f16_to_f32(b.dmin);
    float* y = dst + i * kQKK;
    for (int s = 0; s < 8; ++s) {  // sub-block s: nibble (s & 1) of bytes 32*(s/2)..+31
      uint8_t sc, m;
      scale_min_k4(s, b.scales, &sc, &m);
      const float ds = d * sc, ms = min * m;
      const uint8_t* q = b.qs + 32 * (s / 2);
      const int shift = 4 * (s & 1);
      for (int l = 0; l < 32; ++l) y[32 * s + l] = ds * float((q[l] >> shift) & 0xF) - ms;
    }
  }
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = f16_to_f32(b.d), min = f16_to_f32(b.dmin);
    float* y = dst + i * kQKK;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      scale_min_k4(s, b.scales, &sc, &m);
      const float ds = d * sc, ms = min * m;
      const uint8_t* q = b.qs + 32 * (s / 2);
      const int shift = 4 * (s & 1);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (((b.qh[l] >> s) & 1) << 4);
        y[32 * s + l] = ds * float(v) - ms;
      }
    }
  }
}

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = f16_to_f32(b.d);
    float* y = dst + i * kQKK;
    for (int h = 0; h < 2; ++h) {  // two halves of 128: 64 bytes of ql, 32 of qh, 8 scales
      const uint8_t* ql = b.ql + 64 * h;
      const uint8_t* qh = b.qh + 32 * h;
      const int8_t* sc = b.scales + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[128 * h + l + 0] = d * sc[is + 0] * float(q1);
        y[128 * h + l + 32] = d * sc[is + 2] * float(q2);
        y[128 * h + l + 64] = d * sc[is + 4] * float(q3);
        y[128 * h + l + 96] = d * sc[is + 6] * float(q4);
      }
    }
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float* x = src + i * kQKK;
    BlockQ4_K b;
    uint8_t L[kQKK];
    quantize_k_scales(x, b, L, 15, -1.f, 0.1f, 20);
    for (int j = 0; j < kQKK; j += 64)
      for (int l = 0; l < 32; ++l) b.qs[j / 2 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    store_block(dst, i, b);
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float* x = src + i * kQKK;
    BlockQ5_K b;
    uint8_t L[kQKK];
    quantize_k_scales(x, b, L, 31, -0.5f, 0.1f, 15);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int j = 0; j < kQKK; j += 64) {
      const int s = j / 32;  // sub-blocks s and s+1 share these 32 bytes
      for (int l = 0; l < 32; ++l) {
        const int l1 = L[j + l], l2 = L[j + l + 32];
        b.qh[l] |= uint8_t(((l1 >> 4) << s) | ((l2 >> 4) << (s + 1)));
        b.qs[j / 2 + l] = uint8_t((l1 & 0xF) | ((l2 & 0xF) << 4));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float* x = src + i * kQKK;
    BlockQ6_K b;
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b, 0, sizeof(b));
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib)
      b.scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(b.d) * b.scales[j];
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = int8_t(std::max(-32, std::min(31, l)) + 32);
      }
    }
    for (int j = 0; j < kQKK; j += 128) {
      uint8_t* ql = b.ql + j / 2;
      uint8_t* qh = b.qh + j / 4;
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = uint8_t((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

}  // namespace brisk::quant
