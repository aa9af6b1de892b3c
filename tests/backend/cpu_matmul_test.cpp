// CpuBackend::matmul, on every kernel level this machine has: in the fast mode (int8
// activations) every format goes through matmul_q8 and a token's row is the same bits alone,
// in any batch, on any thread count (the scheduler's batching relies on it), with bias, I8
// row scales and accumulation applied after the dot; in the exact mode the result is the
// same bits on every level and thread count, and still the dequantize-then-dot of float32.
// The fused q/k/v and gate/up products (one quantization, one pool dispatch) give the bits
// of the separate ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backend.hpp"
#include "quant/fp8.hpp"
#include "quant/quant_test_util.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

const DType kQuantized[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::I8};

struct Matrix {
  DType type;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  std::vector<float> scales;  // I8
  std::vector<float> bias;

  Matrix(DType t, int64_t r, int64_t c, uint32_t seed) : type(t), rows(r), cols(c) {
    bytes = random_weights(t, r, c, seed, false);
    if (t == DType::I8)
      for (int64_t i = 0; i < r; ++i) scales.push_back(0.01f + 0.001f * float(i));
    bias = gaussian(size_t(r), seed + 9);
  }
  DeviceWeight upload(Backend& b) const {
    return b.upload(WeightView{"w", type, rows, cols, bytes.data(), scales.empty() ? nullptr : scales.data()});
  }
};

// y for n tokens of x: overwrite, then + bias, then accumulate onto a copy of y0.
std::vector<float> run(Backend& b, const Matrix& m, const std::vector<float>& x, int64_t n, bool with_bias) {
  const DeviceWeight w = m.upload(b);
  const DeviceWeight bias = b.upload(WeightView{"bias", DType::F32, 1, m.rows, m.bias.data(), nullptr});
  std::vector<float> y(size_t(n * m.rows), 0.25f);
  b.matmul(x.data(), n, w, y.data(), with_bias ? &bias : nullptr, /*accumulate=*/with_bias);
  return y;
}

void expect_same_bits(const std::vector<float>& a, const float* b, size_t count, const std::string& what) {
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], 4), 0) << what << " element " << i << ": " << a[i] << " vs " << b[i];
}

TEST(CpuMatmul, FastModeTokenAloneEqualsItsBatchOnEveryLevelAndThreadCount) {
  for_each_cpu_isa([](quant::CpuIsa isa) {
    for (DType t : kQuantized) {
      const int64_t cols = dtype_traits(t).block_elems == 256 ? 512 : 416, rows = 37, n = 70;
      const Matrix m(t, rows, cols, 3);
      const auto x = gaussian(size_t(n * cols), 4);
      for (bool with_bias : {false, true}) {
        auto one = make_cpu_backend(1, true);
        const auto batch = run(*one, m, x, n, with_bias);
        for (int threads : {2, 3}) {
          auto many = make_cpu_backend(threads, true);
          expect_same_bits(run(*many, m, x, n, with_bias), batch.data(), batch.size(),
                           std::string(quant::cpu_isa_name(isa)) + " " + dtype_name(t) + " threads");
        }
        for (int64_t tok : {int64_t(0), int64_t(33), n - 1}) {
          const std::vector<float> xt(x.begin() + tok * cols, x.begin() + (tok + 1) * cols);
          expect_same_bits(run(*one, m, xt, 1, with_bias), batch.data() + tok * rows, size_t(rows),
                           std::string(quant::cpu_isa_name(isa)) + " " + dtype_name(t) + " alone");
        }
      }
    }
  });
}

// The fast mode's int8 results stay within the activation rounding of the exact ones.
TEST(CpuMatmul, FastModeIsCloseToTheExactMode) {
  for (DType t : kQuantized) {
    const int64_t cols = 512, rows = 19, n = 5;
    const Matrix m(t, rows, cols, 8);
    const auto x = gaussian(size_t(n * cols), 9);
    auto exact = make_cpu_backend(2, false), fast = make_cpu_backend(2, true);
    const auto ye = run(*exact, m, x, n, true), yf = run(*fast, m, x, n, true);
    double scale = 0;
    for (float v : ye) scale = std::max(scale, double(std::fabs(v)));
    for (size_t i = 0; i < ye.size(); ++i) EXPECT_NEAR(yf[i], ye[i], 0.02 * scale) << dtype_name(t) << " " << i;
  }
}

TEST(CpuMatmul, ExactModeIsTheSameBitsOnEveryLevelAndThreadCount) {
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0,
                         DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::I8};
  for (DType t : types) {
    const int64_t cols = dtype_traits(t).block_elems == 256 ? 512 : 96, rows = 11;
    const Matrix m(t, rows, cols, 12);
    for (int64_t n : {1, 6}) {
      const auto x = gaussian(size_t(n * cols), 13);
      quant::force_cpu_isa(quant::CpuIsa::kScalar);
      auto ref_backend = make_cpu_backend(1, false);
      const auto ref = run(*ref_backend, m, x, n, true);
      for_each_cpu_isa([&](quant::CpuIsa isa) {
        for (int threads : {1, 2}) {
          auto b = make_cpu_backend(threads, false);
          expect_same_bits(run(*b, m, x, n, true), ref.data(), ref.size(),
                           std::string("exact ") + quant::cpu_isa_name(isa) + " " + dtype_name(t));
        }
      });
    }
  }
}

TEST(CpuMatmul, FusedProductsGiveTheBitsOfTheSeparateOnes) {
  for (int threads : {1, 3}) {
    for (DType t : {DType::Q5_0, DType::Q4_K, DType::I8}) {
      const int64_t cols = 256, n = 7;
      const Matrix q(t, 29, cols, 20), k(t, 13, cols, 21), v(DType::Q8_0, 13, cols, 22);
      const auto x = gaussian(size_t(n * cols), 23);
      auto b = make_cpu_backend(threads, true);
      const DeviceWeight wq = q.upload(*b), wk = k.upload(*b), wv = v.upload(*b);
      const DeviceWeight bq = b->upload(WeightView{"bq", DType::F32, 1, q.rows, q.bias.data(), nullptr});
      std::vector<float> yq(size_t(n * q.rows)), yk(size_t(n * k.rows)), yv(size_t(n * v.rows));
      const DeviceWeight* ws[3] = {&wq, &wk, &wv};
      const DeviceWeight* bs[3] = {&bq, nullptr, nullptr};
      float* ys[3] = {yq.data(), yk.data(), yv.data()};
      b->matmul_multi(x.data(), n, ws, ys, bs, 3);
      std::vector<float> sq(yq.size()), sk(yk.size()), sv(yv.size());
      b->matmul(x.data(), n, wq, sq.data(), &bq, false);
      b->matmul(x.data(), n, wk, sk.data(), nullptr, false);
      b->matmul(x.data(), n, wv, sv.data(), nullptr, false);
      expect_same_bits(yq, sq.data(), sq.size(), std::string("multi q ") + dtype_name(t));
      expect_same_bits(yk, sk.data(), sk.size(), std::string("multi k ") + dtype_name(t));
      expect_same_bits(yv, sv.data(), sv.size(), "multi v");

      const Matrix up(t, 29, cols, 24);
      const DeviceWeight wu = up.upload(*b);
      for (Activation act : {Activation::SiLU, Activation::GeluTanh}) {
        std::vector<float> out(yq.size()), scratch(yq.size()), g(yq.size()), u(yq.size());
        b->matmul_gated(x.data(), n, wq, wu, act, out.data(), scratch.data());
        b->matmul(x.data(), n, wq, g.data(), nullptr, false);
        b->matmul(x.data(), n, wu, u.data(), nullptr, false);
        b->act_mul(g.data(), u.data(), int64_t(g.size()), act, g.data());
        expect_same_bits(out, g.data(), g.size(), std::string("gated ") + dtype_name(t));
      }
    }
  }
}

// An FP8 weight with a static activation scale sees its input rounded through E4M3 at that
// scale (saturating): the bits of the same weight without one on the rounded input, in
// both modes, and a different result from the unrounded input.
TEST(CpuMatmul, StaticFp8InputScaleRoundsTheInput) {
  const int64_t rows = 19, cols = 160, n = 5;
  const auto f = gaussian(size_t(rows * cols), 30);
  std::vector<uint8_t> q(f.size());
  std::vector<float> scales(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) scales[size_t(r)] = quantize_row_fp8(&f[size_t(r * cols)], &q[size_t(r * cols)], cols);
  auto x = gaussian(size_t(n * cols), 31);
  x[3] = 40.f;  // saturates at 448 x the scale
  const float input_scale = 0.05f;
  std::vector<float> rounded(x.size());
  round_through_fp8(x.data(), int64_t(x.size()), input_scale, rounded.data());
  EXPECT_EQ(rounded[3], 448.f * input_scale);
  for (bool fast : {false, true}) {
    auto b = make_cpu_backend(2, fast);
    WeightView v{"w", DType::F8_E4M3, rows, cols, q.data(), scales.data()};
    const DeviceWeight plain = b->upload(v);
    v.input_scale = input_scale;
    const DeviceWeight scaled = b->upload(v);
    std::vector<float> y(size_t(n * rows)), want(y.size()), unrounded(y.size());
    b->matmul(x.data(), n, scaled, y.data(), nullptr, false);
    b->matmul(rounded.data(), n, plain, want.data(), nullptr, false);
    b->matmul(x.data(), n, plain, unrounded.data(), nullptr, false);
    expect_same_bits(y, want.data(), want.size(), fast ? "fast" : "exact");
    EXPECT_NE(y, unrounded);
  }
}

}  // namespace
}  // namespace brisk
