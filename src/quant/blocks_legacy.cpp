// Scalar encode/decode of the 32-element legacy formats Q4_0, Q5_0, Q8_0, written to match
// ggml's dequantize_row_* and quantize_row_*_ref bit for bit (and so the gguf Python package).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.hpp"
#include "quant/blocks.hpp"

// The reference rounds after every multiply and add; fused multiply-adds would move
// values that sit on a rounding boundary, so contraction stays off in this file.
#pragma GCC optimize("fp-contract=off")

namespace brisk::quant {
namespace {


// Signed max-magnitude element (first one wins on ties), as the reference picks it.
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[i * kQK + j] = float((b.qs[j] & 0x0F) - 8) * d;
      dst[i * kQK + j + kQK / 2] = float((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = f16_to_f32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      dst[i * kQK + j] = float(((b.qs[j] & 0x0F) | h0) - 16) * d;
      dst[i * kQK + j + kQK / 2] = float(((b.qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = float(b.qs[j]) * d;
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_absmax(x) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      // (int8_t) truncates toward zero; the +8.5 makes that a round-half-up.
      const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
      const int q1 = std::min(15, int(int8_t(x[j + kQK / 2] * id + 8.5f)));
      b.qs[j] = uint8_t(q0 | (q1 << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_absmax(x) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 b;
    b.d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(31, int(int8_t(x[j] * id + 16.5f)));
      const int q1 = std::min(31, int(int8_t(x[j + kQK / 2] * id + 16.5f)));
      b.qs[j] = uint8_t((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= uint32_t((q0 & 0x10) >> 4) << j;
      qh |= uint32_t((q1 & 0x10) >> 4) << (j + kQK / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    store_block(dst, i, b);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = int8_t(std::round(x[j] * id));  // half away from zero
    store_block(dst, i, b);
  }
}

}  // namespace brisk::quant
