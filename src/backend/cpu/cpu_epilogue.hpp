// What every CPU product does after its dot products: the I8 row scale, the optional bias,
// then overwrite or accumulate (residual). Shared by the exact and the int8 paths.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"

namespace brisk {

// I8 and F8_E4M3 rows carry a float scale; every other dtype scales itself. Weights scaled
// per column group have theirs applied as the row is decoded (decode_scaled_row).
inline float row_scale(const DeviceWeight& w, int64_t r) { return w.scales && !w.scale_cols ? w.scales[r] : 1.f; }

// out = row r of w as floats, its column-group scales applied (w.scale_cols > 0).
void decode_scaled_row(const DeviceWeight& w, int64_t r, float* out);

inline void store(float& out, float dot, const float* bias, int64_t row, bool accumulate) {
  if (bias) dot += bias[row];
  out = accumulate ? out + dot : dot;
}

// out[i] = act(gate[i]) * up[i] for i < count (CpuBackend::act_mul, and the fused gated product):
// libm's exp and tanh in the exact mode, act_mul_fast's vectorized exp in the fast one (fast).
void act_mul_span(const float* gate, const float* up, int64_t count, Activation act, bool fast, float* out);

}  // namespace brisk
