// Portable dot_row: decode a block with the scalar codec, then accumulate in the lane order
// documented in dot.hpp. It is the fallback without AVX2 and the executable definition of
// the order the SIMD kernels must reproduce.
#include <cmath>
#include <cstring>

#include "quant/dot.hpp"
#include "quant/quantize.hpp"

#pragma GCC optimize("fp-contract=off")

namespace brisk::quant {
namespace {

struct Lanes {
  float a[kDotLanes] = {};

  // count is a multiple of kDotLanes.
  void add(const float* w, const float* x, int64_t count) {
    for (int64_t i = 0; i < count; ++i) a[i % kDotLanes] = std::fma(w[i], x[i], a[i % kDotLanes]);
  }

  float sum() const {
    float s[8], t[4], u[2];
    for (int l = 0; l < 8; ++l) s[l] = (a[l] + a[8 + l]) + (a[16 + l] + a[24 + l]);
    for (int l = 0; l < 4; ++l) t[l] = s[l] + s[l + 4];
    for (int l = 0; l < 2; ++l) u[l] = t[l] + t[l + 2];
    return u[0] + u[1];
  }
};

}  // namespace

float dot_row_scalar(DType type, const void* w_row, const float* x, int64_t n) {
  const DTypeTraits& t = dtype_traits(type);
  // Decode in pieces of a whole number of blocks and of lanes (256 covers every type).
  constexpr int64_t kPiece = 256;
  const auto* bytes = static_cast<const uint8_t*>(w_row);
  Lanes lanes;
  float w[kPiece];
  int64_t i = 0;
  for (; i + kPiece <= n; i += kPiece) {
    dequantize_row(type, bytes + i / t.block_elems * t.block_bytes, w, kPiece);
    lanes.add(w, x + i, kPiece);
  }
  if (i < n) {  // only plain floats or legacy blocks get here; zero-pad to 32 lanes
    const int64_t rest = n - i;
    dequantize_row(type, bytes + i / t.block_elems * t.block_bytes, w, rest);
    const int64_t padded = (rest + kDotLanes - 1) / kDotLanes * kDotLanes;
    float xp[kPiece];
    std::memcpy(xp, x + i, size_t(rest) * 4);
    for (int64_t k = rest; k < padded; ++k) w[k] = xp[k] = 0.0f;
    lanes.add(w, xp, padded);
  }
  return lanes.sum();
}

}  // namespace brisk::quant
