// Random inputs shared by the quant tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "quant/cpu_isa.hpp"
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

// Every kernel level this machine can run, lowest first, each made the active one while
// fn(level) runs; the detected level is restored afterwards.
template <typename Fn>
void for_each_cpu_isa(Fn&& fn) {
  using quant::CpuIsa;
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512Vnni}) {
    if (isa > quant::detected_cpu_isa()) break;
    quant::force_cpu_isa(isa);
    fn(isa);
  }
  quant::force_cpu_isa(quant::detected_cpu_isa());
}

// Weight bytes of a rows x cols matrix: quantized gaussians, or (arbitrary) random bytes
// with the f16 scales kept finite, which reach every scale, min and high-bit pattern.
inline std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, uint32_t seed, bool arbitrary) {
  const DTypeTraits& tr = dtype_traits(type);
  const uint64_t row_bytes = *dtype_bytes(type, uint64_t(cols));
  std::vector<uint8_t> w(row_bytes * uint64_t(rows));
  if (!arbitrary) {
    for (int64_t r = 0; r < rows; ++r) {
      const auto x = gaussian(size_t(cols), seed + uint32_t(r));
      if (type == DType::I8) quantize_row_i8(x.data(), reinterpret_cast<int8_t*>(w.data() + r * row_bytes), cols);
      else quantize_row(type, x.data(), w.data() + r * row_bytes, cols);
    }
    return w;
  }
  std::mt19937 rng(seed);
  for (auto& byte : w) byte = uint8_t(rng());
  if (type == DType::I8) return w;
  for (size_t b = 0; b < w.size() / tr.block_bytes; ++b) {  // clear the f16 exponents' top bit
    uint8_t* blk = w.data() + b * tr.block_bytes;
    if (type == DType::Q6_K) blk[209] &= 0xBF;
    else {
      blk[1] &= 0xBF;
      if (tr.block_elems == 256) blk[3] &= 0xBF;
    }
  }
  return w;
}

}  // namespace brisk
