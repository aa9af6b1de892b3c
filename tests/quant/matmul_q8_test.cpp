// matmul_q8, the tiled int8 kernels of every level this machine has (AVX2 and AVX-VNNI
// forced on a machine with AVX-512): each (row, token) result has the bits of
// dot_row_q8_scalar, on ragged shapes (rows and tokens that are no multiple of any tile,
// rows of an odd number of 32-element chunks), for gaussian and arbitrary weight bytes.
// And the level choice itself: forcing caps at what the CPU has, names round-trip.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "quant/cpu_isa.hpp"
#include "quant/dot.hpp"
#include "quant/quant_test_util.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

using quant::CpuIsa;

const DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::I8};

std::vector<int64_t> row_lengths(DType t) {
  if (dtype_traits(t).block_elems == 256) return {256, 768};
  return {32, 96, 160, 640};  // 1, 3 and 5 chunks: a half pair at the end
}

std::vector<QuantizedActivations> tokens(int64_t n, int64_t cols, uint32_t seed) {
  std::vector<QuantizedActivations> xs(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const auto x = gaussian(size_t(cols), seed + uint32_t(t), t % 3 == 2 ? 30.f : 1.f);
    quantize_activations(x.data(), cols, &xs[size_t(t)]);
  }
  return xs;
}

void expect_scalar_bits(DType t, int64_t rows, int64_t cols, int64_t n, uint32_t seed, bool arbitrary) {
  const auto w = random_weights(t, rows, cols, seed, arbitrary);
  const uint64_t rb = *dtype_bytes(t, uint64_t(cols));
  const auto xs = tokens(n, cols, seed + 100);
  const int64_t ldy = rows + 3;  // y rows wider than the product: the gap must stay untouched
  std::vector<float> y(size_t(n * ldy), -7.5f);
  matmul_q8(t, w.data(), rb, rows, xs.data(), n, y.data(), ldy);
  for (int64_t tok = 0; tok < n; ++tok) {
    for (int64_t r = 0; r < rows; ++r) {
      const float want = quant::dot_row_q8_scalar(t, w.data() + uint64_t(r) * rb, xs[size_t(tok)]);
      const float got = y[size_t(tok * ldy + r)];
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0)
          << quant::cpu_isa_name() << " " << dtype_name(t) << " rows " << rows << " cols " << cols << " n " << n
          << " arbitrary " << arbitrary << ": row " << r << " token " << tok << ": " << got << " vs " << want;
    }
    for (int64_t r = rows; r < ldy; ++r) ASSERT_EQ(y[size_t(tok * ldy + r)], -7.5f);
  }
}

TEST(MatmulQ8, EveryLevelGivesTheScalarBitsOnRaggedShapes) {
  std::vector<std::string> levels;
  for_each_cpu_isa([&](CpuIsa isa) {
    levels.push_back(quant::cpu_isa_name(isa));
    for (DType t : kTypes)
      for (int64_t cols : row_lengths(t))
        for (int64_t rows : {1, 3, 6, 13})
          for (int64_t n : {1, 2, 5, 11}) {
            expect_scalar_bits(t, rows, cols, n, uint32_t(rows * 7 + n), false);
            expect_scalar_bits(t, rows, cols, n, uint32_t(rows * 7 + n + 1), true);
          }
  });
  std::string all;
  for (const auto& l : levels) all += l + " ";
  RecordProperty("levels", all);
  std::printf("levels tested: %s(detected %s)\n", all.c_str(), quant::cpu_isa_name(quant::detected_cpu_isa()));
}

TEST(MatmulQ8, ATokensResultDoesNotDependOnItsBatch) {
  for_each_cpu_isa([](CpuIsa) {
    for (DType t : kTypes) {
      const int64_t cols = dtype_traits(t).block_elems == 256 ? 512 : 224, rows = 9, n = 7;
      const auto w = random_weights(t, rows, cols, 5, false);
      const uint64_t rb = *dtype_bytes(t, uint64_t(cols));
      const auto xs = tokens(n, cols, 77);
      std::vector<float> batch(static_cast<size_t>(n * rows)), alone(static_cast<size_t>(rows));
      matmul_q8(t, w.data(), rb, rows, xs.data(), n, batch.data(), rows);
      for (int64_t tok = 0; tok < n; ++tok) {
        matmul_q8(t, w.data(), rb, rows, &xs[size_t(tok)], 1, alone.data(), rows);
        EXPECT_EQ(std::memcmp(alone.data(), batch.data() + tok * rows, size_t(rows) * 4), 0)
            << quant::cpu_isa_name() << " " << dtype_name(t) << " token " << tok;
      }
    }
  });
}

TEST(MatmulQ8, RejectsWhatItCannotDo) {
  const auto xs = tokens(2, 64, 1);
  std::vector<uint8_t> w(4096);
  std::vector<float> y(64);
  EXPECT_THROW(matmul_q8(DType::F16, w.data(), 128, 1, xs.data(), 1, y.data(), 1), Error);
  EXPECT_THROW(matmul_q8(DType::Q4_K, w.data(), 144, 1, xs.data(), 1, y.data(), 1), Error);  // 64: no Q4_K row
  EXPECT_THROW(matmul_q8(DType::Q8_0, w.data(), 34, 1, xs.data(), 1, y.data(), 1), Error);   // rows too short
  auto mixed = tokens(2, 64, 1);
  quantize_activations(gaussian(96, 3).data(), 96, &mixed[1]);
  EXPECT_THROW(matmul_q8(DType::Q8_0, w.data(), 68, 1, mixed.data(), 2, y.data(), 1), Error);
}

TEST(CpuIsa, ForcingCapsAtTheDetectedLevelAndNamesRoundTrip) {
  const CpuIsa detected = quant::detected_cpu_isa();
  EXPECT_EQ(quant::force_cpu_isa(CpuIsa::kAvx512Vnni), detected);
  EXPECT_EQ(quant::force_cpu_isa(CpuIsa::kScalar), CpuIsa::kScalar);
  EXPECT_STREQ(quant::cpu_isa_name(), "scalar");
  quant::force_cpu_isa(detected);
  EXPECT_EQ(quant::active_cpu_isa(), detected);
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512Vnni})
    EXPECT_EQ(quant::cpu_isa_from_name(quant::cpu_isa_name(isa)), isa);
  EXPECT_EQ(quant::cpu_isa_from_name("native"), detected);
  EXPECT_FALSE(quant::cpu_isa_from_name("avx9"));
}

}  // namespace
}  // namespace brisk
