// dot_row_q8 (weights against int8-quantized activations): the AVX2 kernels give the bits
// of the scalar definition (on every level this machine can be forced to), the result is within the rounding of x to 8 bits of the exact
// dot, and the activation quantizer is Q8_0's reference quantizer with a float32 scale.
#include <gtest/gtest.h>

#include "quant/quant_test_util.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "base/half.hpp"
#include "quant/dot.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

const DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::I8};

std::vector<int64_t> lengths(DType t) {
  if (dtype_traits(t).block_elems == 256) return {256, 512, 2816};
  return {32, 96, 512, 2848};
}

TEST(DotQ8, ActivationsAreQ8_0Levels) {
  for_each_cpu_isa([](quant::CpuIsa isa) {
    const auto x = gaussian(1024, 1);
    QuantizedActivations xq;
    quantize_activations(x.data(), 1024, &xq);
    const auto ref = quantized(DType::Q8_0, x);
    for (int b = 0; b < 32; ++b) {
      uint16_t d;
      std::memcpy(&d, ref.data() + 34 * b, 2);
      EXPECT_EQ(f32_to_f16(xq.d[b]), d) << quant::cpu_isa_name(isa);
      int sum = 0;
      for (int j = 0; j < 32; ++j) {
        ASSERT_EQ(xq.q[32 * b + j], int8_t(ref[34 * b + 2 + j])) << quant::cpu_isa_name(isa);
        sum += xq.q[32 * b + j];
      }
      EXPECT_EQ(xq.sum[b], sum) << quant::cpu_isa_name(isa);
    }
  });
}

// Every level quantizes to the portable loop's bits, ties (x * id exactly k + 1/2, which
// round away from zero), zero blocks and wide ranges included.
TEST(DotQ8, ActivationQuantizerIsTheSameOnEveryLevel) {
  std::vector<float> x = gaussian(32 * 200, 2, 3.0f);
  for (int j = 0; j < 32; ++j) x[size_t(j)] = j == 0 ? 127.0f : float(j % 2 ? 1 : -1) * (float(j) + 0.5f);
  for (int j = 32; j < 64; ++j) x[size_t(j)] = 0.0f;
  for (int j = 64; j < 96; ++j) x[size_t(j)] *= 1e-30f;
  QuantizedActivations want;
  quant::force_cpu_isa(quant::CpuIsa::kScalar);
  quantize_activations(x.data(), int64_t(x.size()), &want);
  EXPECT_EQ(want.q[1], 2);   // 1.5 rounds to 2
  EXPECT_EQ(want.q[2], -3);  // -2.5 rounds to -3
  for_each_cpu_isa([&](quant::CpuIsa isa) {
    QuantizedActivations got;
    quantize_activations(x.data(), int64_t(x.size()), &got);
    EXPECT_EQ(got.q, want.q) << quant::cpu_isa_name(isa);
    EXPECT_EQ(std::memcmp(got.d.data(), want.d.data(), want.d.size() * 4), 0) << quant::cpu_isa_name(isa);
    EXPECT_EQ(got.sum, want.sum) << quant::cpu_isa_name(isa);
  });
}

TEST(DotQ8, KernelsMatchTheScalarDefinitionBitForBit) {
  for_each_cpu_isa([](quant::CpuIsa isa) {
    for (DType t : kTypes) {
      for (int64_t n : lengths(t)) {
        for (uint32_t seed = 0; seed < 3; ++seed) {
          // seed 2: arbitrary bytes, every scale, min and high-bit pattern
          const std::vector<uint8_t> w = random_weights(t, 1, n, 10 + seed, seed == 2);
          QuantizedActivations xq;
          const auto x = gaussian(size_t(n), 20 + seed);
          quantize_activations(x.data(), n, &xq);
          const float got = dot_row_q8(t, w.data(), xq);
          const float want = quant::dot_row_q8_scalar(t, w.data(), xq);
          EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << quant::cpu_isa_name(isa) << " " << dtype_name(t) << " n=" << n
                                                    << " seed " << seed << ": " << got << " vs " << want;
          EXPECT_EQ(dot_row_q8(t, w.data(), xq), got);  // same answer every call
        }
      }
    }
  });
}

// |dot_row_q8 - sum w_i x_i| <= sum_i |w_i| d_x(i) / 2 (x rounded to its 8-bit grid)
//                              + 1e-5 * sum |w_i x_i| (float32 accumulation).
TEST(DotQ8, WithinTheActivationRoundingOfTheExactDot) {
  for (DType t : kTypes) {
    for (int64_t n : lengths(t)) {
      const auto wq = random_weights(t, 1, n, 30, false);
      std::vector<float> w(static_cast<size_t>(n));
      dequantize_row(t, wq.data(), w.data(), n);
      const auto x = gaussian(size_t(n), 31, 0.7f);
      QuantizedActivations xq;
      quantize_activations(x.data(), n, &xq);
      double exact = 0, bound = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        exact += double(w[i]) * x[i];
        bound += std::fabs(double(w[i])) * xq.d[size_t(i / 32)] / 2;
        mag += std::fabs(double(w[i]) * x[i]);
      }
      const float got = dot_row_q8(t, wq.data(), xq);
      EXPECT_LE(std::fabs(got - exact), bound + 1e-5 * mag) << dtype_name(t) << " n=" << n;
      // rounding errors of x mostly cancel: well inside the worst case
      EXPECT_LE(std::fabs(got - exact), 0.5 * bound + 1e-5 * mag) << dtype_name(t) << " n=" << n;
    }
  }
}

TEST(DotQ8, RejectsWhatItCannotDo) {
  QuantizedActivations xq;
  std::vector<float> x(64, 1.0f);
  quantize_activations(x.data(), 64, &xq);
  std::vector<uint8_t> w(1024);
  EXPECT_FALSE(dot_row_q8_supported(DType::F16));
  EXPECT_TRUE(dot_row_q8_supported(DType::I8));
  EXPECT_THROW(dot_row_q8(DType::F16, w.data(), xq), Error);
  EXPECT_THROW(dot_row_q8(DType::Q4_K, w.data(), xq), Error);  // 64 is not a Q4_K row
  EXPECT_THROW(quantize_activations(x.data(), 48, &xq), Error);
}

}  // namespace
}  // namespace brisk
