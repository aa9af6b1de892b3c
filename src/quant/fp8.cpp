#include "quant/fp8.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

namespace brisk {
namespace {

constexpr std::array<float, 256> make_fp8_table() {
  std::array<float, 256> t{};
  for (int v = 0; v < 256; ++v) {
    const int exp = (v >> 3) & 15, man = v & 7;
    float mag;
    if (exp == 15 && man == 7) mag = __builtin_nanf("");
    else if (exp == 0) mag = float(man) / 512.f;  // subnormal: man * 2^-9
    else {
      mag = 1.f + float(man) / 8.f;
      for (int e = exp - 7; e > 0; --e) mag *= 2.f;
      for (int e = exp - 7; e < 0; ++e) mag *= 0.5f;
    }
    t[size_t(v)] = (v & 0x80) ? -mag : mag;
  }
  return t;
}

constexpr std::array<float, 256> kFp8Table = make_fp8_table();

}  // namespace

float fp8_e4m3_to_float(uint8_t v) { return kFp8Table[v]; }

uint8_t float_to_fp8_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint8_t sign = uint8_t((bits >> 24) & 0x80);
  const float a = std::fabs(x);
  if (std::isnan(a)) return sign | 0x7F;
  if (a >= kFp8E4M3Max) return sign | 0x7E;
  if (a < 0x1p-6f) return sign | uint8_t(std::nearbyint(a * 512.f));  // subnormals; 8 is 2^-6
  // Normal: keep 3 of float's 23 mantissa bits, ties to even; a carry moves the exponent.
  uint32_t m = bits & 0x7FFFFFFFu;
  m += 0x7FFFFu + ((m >> 20) & 1u);
  m &= ~0xFFFFFu;
  const int exp = int(m >> 23) - 127 + 7;
  const uint32_t man = (m >> 20) & 7u;
  if (exp > 15 || (exp == 15 && man == 7)) return sign | 0x7E;  // rounded up to 480: saturate
  return sign | uint8_t(exp << 3) | uint8_t(man);
}

float quantize_row_fp8(const float* src, uint8_t* dst, int64_t n) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  const float scale = amax > 0.f ? amax / kFp8E4M3Max : 1.f;
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_fp8_e4m3(src[i] / scale);
  return scale;
}

void round_through_fp8(const float* x, int64_t n, float scale, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = kFp8Table[float_to_fp8_e4m3(x[i] / scale)] * scale;
}

}  // namespace brisk
