// axpy: y += a * x with one fused multiply-add per element, the inner loop of attention's
// weighted sum of values. Fused everywhere (std::fma in the portable loop), so every kernel
// level gives the same bits.
#include <cmath>

#include "quant/cpu_isa.hpp"
#include "quant/dot.hpp"
#include "quant/quantize.hpp"

namespace brisk {

void axpy(float a, const float* x, float* y, int64_t n) {
#if BRISK_X86_KERNELS
  if (quant::active_cpu_isa() >= quant::CpuIsa::kAvx2) return quant::axpy_avx2(a, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

}  // namespace brisk
