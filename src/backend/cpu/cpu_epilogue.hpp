// What every CPU product does after its dot products: the I8 row scale, the optional bias,
// then overwrite or accumulate (residual). Shared by the exact and the int8 paths.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"

namespace brisk {

// I8 rows carry a float scale; every other dtype scales itself.
inline float row_scale(const DeviceWeight& w, int64_t r) { return w.scales ? w.scales[r] : 1.f; }

inline void store(float& out, float dot, const float* bias, int64_t row, bool accumulate) {
  if (bias) dot += bias[row];
  out = accumulate ? out + dot : dot;
}

// out[i] = act(gate[i]) * up[i] for i < count (CpuBackend::act_mul, and the fused gated product).
void act_mul_span(const float* gate, const float* up, int64_t count, Activation act, float* out);

}  // namespace brisk
