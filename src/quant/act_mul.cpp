// act_mul_fast: the fast mode's gated activation (SiLU, GELU's tanh form) as
// g * up / (1 + exp(-z)) with its own exp, defined here in portable C++ by exactly the
// operations act_mul_avx2.cpp performs per lane, so every kernel level gives the same bits.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/cpu_isa.hpp"
#include "quant/dot.hpp"
#include "quant/quantize.hpp"

#pragma GCC optimize("fp-contract=off")

namespace brisk {
namespace {

// exp(x); below -87.3 it stays at exp(-87.3) (1 + it is 1 all the same), above 88.3 it is inf.
float exp_fast(float x_in) {
  if (x_in > 88.3f) return INFINITY;
  const float x = std::min(std::max(x_in, -87.3f), 88.3f);
  const float n = std::nearbyint(x * 1.44269504088896341f);  // ties to even, as _mm256_round_ps
  float r = std::fma(-n, 0.693359375f, x);
  r = std::fma(-n, -2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p * r, r, r + 1.f);
  const uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

}  // namespace

void act_mul_fast(const float* gate, const float* up, int64_t n, bool gelu, float* out) {
#if BRISK_X86_KERNELS
  if (quant::active_cpu_isa() >= quant::CpuIsa::kAvx2) return quant::act_mul_fast_avx2(gate, up, n, gelu, out);
#endif
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float z = gelu ? (2 * 0.7978845608028654f) * std::fma(0.044715f, (g * g) * g, g) : g;
    out[i] = (g * up[i]) / (1.f + exp_fast(0.f - z));
  }
}

}  // namespace brisk
