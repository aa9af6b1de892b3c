// FP8 E4M3: decoding and encoding bit for bit as ml_dtypes (tools/make_fp8_fixtures.py),
// saturation at +-448, and the per-row quantizer's scale and round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/error.hpp"
#include "quant/dtype.hpp"
#include "quant/fp8.hpp"
#include "quant/quantize.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

struct Fp8Fixture {
  std::vector<float> table, inputs;
  std::vector<uint8_t> codes;
};

Fp8Fixture load_fixture() {
  std::ifstream f(test::golden_dir() + "/quant/F8_E4M3.bin", std::ios::binary);
  char magic[4];
  uint32_t count = 0;
  f.read(magic, 4);
  f.read(reinterpret_cast<char*>(&count), 4);
  if (!f || std::memcmp(magic, "BF81", 4) != 0) throw std::runtime_error("bad F8_E4M3.bin: run tools/make_fp8_fixtures.py");
  Fp8Fixture fx{std::vector<float>(256), std::vector<float>(count), std::vector<uint8_t>(count)};
  f.read(reinterpret_cast<char*>(fx.table.data()), 256 * 4);
  f.read(reinterpret_cast<char*>(fx.inputs.data()), std::streamsize(count) * 4);
  f.read(reinterpret_cast<char*>(fx.codes.data()), count);
  if (!f) throw std::runtime_error("F8_E4M3.bin is truncated");
  return fx;
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

TEST(Fp8, DecodesEveryCodeAsMlDtypes) {
  const Fp8Fixture fx = load_fixture();
  for (int v = 0; v < 256; ++v) {
    const float got = fp8_e4m3_to_float(uint8_t(v)), want = fx.table[size_t(v)];
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << v;
    else EXPECT_EQ(bits(got), bits(want)) << "code " << v;
  }
}

TEST(Fp8, EncodesAsMlDtypesTiesToEven) {
  const Fp8Fixture fx = load_fixture();
  ASSERT_GT(fx.inputs.size(), 3000u);
  int wrong = 0;
  for (size_t i = 0; i < fx.inputs.size(); ++i)
    if (float_to_fp8_e4m3(fx.inputs[i]) != fx.codes[i] && ++wrong < 10)
      ADD_FAILURE() << fx.inputs[i] << " -> " << int(float_to_fp8_e4m3(fx.inputs[i])) << ", ml_dtypes " << int(fx.codes[i]);
  EXPECT_EQ(wrong, 0);
}

TEST(Fp8, SaturatesAndKeepsNan) {
  EXPECT_EQ(float_to_fp8_e4m3(470.f), 0x7E);  // would round to 480, which E4M3 lacks
  EXPECT_EQ(float_to_fp8_e4m3(1e30f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), kFp8E4M3Max);
}

TEST(Fp8, RowQuantizerScalesToTheLargestValue) {
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i)) * 3.f;
  x[17] = -7.5f;
  std::vector<uint8_t> q(x.size());
  const float scale = quantize_row_fp8(x.data(), q.data(), int64_t(x.size()));
  EXPECT_FLOAT_EQ(scale, 7.5f / 448.f);
  EXPECT_EQ(q[17], 0xFE);  // -448
  std::vector<float> back(x.size());
  dequantize_row(DType::F8_E4M3, q.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)  // 3 mantissa bits: within 1/16 of the value, or of the subnormal step
    EXPECT_NEAR(back[i] * scale, x[i], std::max(std::fabs(x[i]) / 16.f, scale * 0x1p-10f)) << i;
  std::vector<float> zeros(64, 0.f);
  EXPECT_EQ(quantize_row_fp8(zeros.data(), q.data(), 64), 1.f);
  EXPECT_EQ(q[0], 0);
}

TEST(Fp8, IsATypeOfItsOwn) {
  EXPECT_EQ(dtype_from_name("fp8"), DType::F8_E4M3);
  EXPECT_EQ(dtype_from_name("F8_E4M3"), DType::F8_E4M3);
  EXPECT_EQ(dtype_bytes(DType::F8_E4M3, 100), 100u);
  EXPECT_FALSE(dot_row_q8_supported(DType::F8_E4M3));
  std::vector<uint8_t> q(32);
  std::vector<float> x(32, 1.f);
  EXPECT_THROW(quantize_row(DType::F8_E4M3, x.data(), q.data(), 32), Error);
}

}  // namespace
}  // namespace brisk
