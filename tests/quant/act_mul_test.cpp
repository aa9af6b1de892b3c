// act_mul_fast, the fast mode's gated activations: the same bits on every kernel level (tails
// of every length included), and within a few ulp-scale relative error of libm's formulas
// over the range activations take, saturating cleanly at the extremes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/cpu_isa.hpp"
#include "quant/quant_test_util.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

std::vector<float> inputs() {
  std::vector<float> g;
  for (float v = -40.f; v <= 40.f; v += 0.0371f) g.push_back(v);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-8f, 88.f, -88.f, 100.f, -100.f, 1e6f, -1e6f, 3.4e38f, -3.4e38f})
    g.push_back(v);
  return g;
}

double silu(double g) { return g / (1 + std::exp(-g)); }
// 0.5 g (1 + tanh(u)) in the form that keeps its precision where tanh(u) is near -1: g * logistic(2u).
double gelu(double g) { return g / (1 + std::exp(-2 * 0.7978845608028654 * (g + 0.044715 * g * g * g))); }

TEST(ActMulFast, EveryLevelGivesTheSameBitsForEveryTail) {
  const std::vector<float> g = inputs(), up = gaussian(g.size(), 5, 2.f);
  for (bool is_gelu : {false, true}) {
    std::vector<float> want(g.size());
    quant::force_cpu_isa(quant::CpuIsa::kScalar);
    act_mul_fast(g.data(), up.data(), int64_t(g.size()), is_gelu, want.data());
    for_each_cpu_isa([&](quant::CpuIsa) {
      for (int64_t n : {int64_t(g.size()), int64_t(1), int64_t(7), int64_t(8), int64_t(13)}) {
        std::vector<float> got(size_t(n), -1.f);
        act_mul_fast(g.data(), up.data(), n, is_gelu, got.data());
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(std::memcmp(&got[size_t(i)], &want[size_t(i)], 4), 0)
              << quant::cpu_isa_name() << " gelu " << is_gelu << " n " << n << " g " << g[size_t(i)];
      }
    });
  }
}

TEST(ActMulFast, CloseToLibmAndSaturating) {
  const std::vector<float> g = inputs();
  const std::vector<float> up(g.size(), 1.f);
  for (bool is_gelu : {false, true}) {
    std::vector<float> got(g.size());
    act_mul_fast(g.data(), up.data(), int64_t(g.size()), is_gelu, got.data());
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = is_gelu ? gelu(g[i]) : silu(g[i]);
      ASSERT_TRUE(std::isfinite(got[i])) << g[i];
      // A few ulp relative, plus what float's rounding of the exponent z costs exp(-z) (|z| ulp),
      // plus an absolute floor where the value underflows (exp clamps at -87.3).
      const double g_ = g[i], z = is_gelu ? 1.5957691216 * (g_ + 0.044715 * g_ * g_ * g_) : g_;
      const double tol = (1e-6 + 2.4e-7 * std::min(std::fabs(z), 90.0)) * std::fabs(want) + 1e-36;
      EXPECT_LE(std::fabs(got[i] - want), tol) << "gelu " << is_gelu << " g " << g[i];
    }
  }
}

}  // namespace
}  // namespace brisk
