// Scalar IEEE binary16 <-> binary32 conversions (bit-exact with F16C, round to nearest
// even), so files and kernels agree with the hardware conversion when it is used.
#include "base/half.hpp"

namespace brisk {

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        mant <<= 1;
        ++e;
      } while (!(mant & 0x400));
      u = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | mant << 13;
  } else {
    u = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t abs = u & 0x7fffffffu;
  // NaN: quiet it and keep the top payload bits, as F16C (vcvtps2ph) does.
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // overflow -> inf
  if (abs < 0x38800000u) {                                 // subnormal or zero
    if (abs < 0x33000000u) return uint16_t(sign);
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    int shift = 113 - int(abs >> 23) + 13;  // 126 - exp + 1 ... bits to drop
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t half = r >> 13;
  uint32_t rem = r & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return uint16_t(sign | half);
}

}  // namespace brisk
