// IEEE half and bfloat16 conversions (round to nearest even), used by the formats and kernels.
#pragma once

#include <cstdint>
#include <cstring>

namespace brisk {

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

inline float bf16_to_f32(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // keep NaN a NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

}  // namespace brisk
