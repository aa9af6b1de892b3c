// f16 / bf16 conversions of src/base/half: exhaustive over f16, dense sweeps over f32
// against an independent nearest-value reference (and the F16C instruction where the CPU
// has it), plus the named edge cases: ties, subnormals, overflow, infinities, NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/half.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#include "quant/cpu_isa.hpp"
#endif

namespace brisk {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Value of a finite f16 bit pattern, computed independently of f16_to_f32.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

// Nearest f16 by binary search over the ordered positive patterns; ties to the even one.
uint16_t f16_reference(float f) {
  const uint16_t sign = (bits(f) >> 16) & 0x8000;
  if (std::isnan(f)) return uint16_t(sign | 0x7e00 | ((bits(f) >> 13) & 0x3ff));
  const double a = std::fabs(double(f));
  if (a >= 65520.0) return uint16_t(sign | 0x7c00);  // halfway to 2^16 and beyond round to inf
  uint16_t lo = 0, hi = 0x7bff;
  while (hi - lo > 1) {
    const uint16_t mid = uint16_t((lo + hi) / 2);
    (f16_value(mid) <= a ? lo : hi) = mid;
  }
  const double dl = a - f16_value(lo), dh = f16_value(hi) - a;
  uint16_t r = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
  if (a >= f16_value(0x7bff)) r = 0x7bff;
  return uint16_t(sign | r);
}

uint16_t bf16_reference(float f) {
  const uint32_t u = bits(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  const uint32_t lo = u & 0xffff0000u;
  const uint32_t rem = u & 0xffffu;
  const bool up = rem > 0x8000u || (rem == 0x8000u && ((lo >> 16) & 1));
  return uint16_t((lo >> 16) + (up ? 1 : 0));  // carries into the exponent (and to inf)
}

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    const bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff);
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(f32_to_f16(f), h | 0x200) << h;  // payload kept, quieted (as F16C does)
    } else {
      ASSERT_EQ(double(f), ((h & 0x7c00) == 0x7c00) ? ((h & 0x8000) ? -INFINITY : INFINITY)
                                                      : f16_value(uint16_t(h)))
          << h;
      ASSERT_EQ(f32_to_f16(f), h) << h;
    }
  }
}

// Every f32 whose low 13 bits (those f16 drops) are one of the rounding-sensitive patterns.
std::vector<float> f32_sweep() {
  std::vector<float> v;
  const uint32_t tails[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x0800, 0x17ff};
  for (uint32_t high = 0; high < (1u << 19); ++high)
    for (uint32_t t : tails) v.push_back(from_bits((high << 13) | t));
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) v.push_back(from_bits(uint32_t(rng())));
  return v;
}

TEST(Half, F32ToF16MatchesNearestEvenReference) {
  for (float f : f32_sweep()) ASSERT_EQ(f32_to_f16(f), f16_reference(f)) << std::hex << bits(f);
}

#if defined(__x86_64__)
// The build is baseline x86-64; the instruction is used where the CPU has it (as the kernels do).
__attribute__((target("f16c"))) uint16_t f16c_convert(float f) {
  return uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), 0), 0));
}

TEST(Half, F32ToF16MatchesF16CInstruction) {
  if (quant::detected_cpu_isa() < quant::CpuIsa::kAvx2) GTEST_SKIP() << "this CPU has no F16C";
  for (float f : f32_sweep()) ASSERT_EQ(f32_to_f16(f), f16c_convert(f)) << std::hex << bits(f);
}
#endif

TEST(Half, F16EdgeCases) {
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);             // max finite
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);           // just below the halfway point
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);             // halfway to 2^16: to even = inf
  EXPECT_EQ(f32_to_f16(-1e6f), 0xfc00);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: ties to even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie, to even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);  // subnormal rounding up to normal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, to even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, to even
  EXPECT_EQ(f32_to_f16(2047.0f / 1024.0f * 1.0f + std::ldexp(1.0f, -11)), 0x4000);  // carry into exponent
  EXPECT_EQ(f32_to_f16(1e-40f), 0x0000);                // f32 subnormal
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_EQ(f32_to_f16(NAN) & 0x7e00, 0x7e00);          // a quiet NaN
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
}

TEST(Half, EveryBf16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(uint16_t(h));
    ASSERT_EQ(bits(f), h << 16);
    if (std::isnan(f))
      ASSERT_EQ(f32_to_bf16(f), h | 0x40);
    else
      ASSERT_EQ(f32_to_bf16(f), h);
  }
}

TEST(Half, F32ToBf16MatchesNearestEvenReference) {
  std::mt19937 rng(11);
  const uint32_t tails[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (uint32_t high = 0; high < 65536; ++high)
    for (uint32_t t : tails) {
      const float f = from_bits((high << 16) | t);
      ASSERT_EQ(f32_to_bf16(f), bf16_reference(f)) << std::hex << bits(f);
    }
  for (int i = 0; i < 1000000; ++i) {
    const float f = from_bits(uint32_t(rng()));
    ASSERT_EQ(f32_to_bf16(f), bf16_reference(f)) << std::hex << bits(f);
  }
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);        // tie to even
}

}  // namespace
}  // namespace brisk
