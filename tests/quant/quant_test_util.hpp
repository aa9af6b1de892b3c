// Random inputs shared by the quant tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "quant/quantize.hpp"

namespace brisk {

inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

inline std::vector<uint8_t> quantized(DType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(*dtype_bytes(type, x.size()));
  quantize_row(type, x.data(), q.data(), int64_t(x.size()));
  return q;
}

}  // namespace brisk
