// Shared by the CUDA op tests (tests/backend/cuda_*_test.cpp): every CUDA op against the
// CPU oracle (as llama.cpp's test-backend-ops), random inputs of many shapes, including
// sizes that are not multiples of any tile, outputs poisoned with NaN before each run so an
// unwritten element fails. Tolerances, as ||gpu - cpu|| / ||cpu||:
//   GEMV, float products (decode, <= 8 tokens):           3e-5 (a single row's dot: 1.03e-5 seen)
//   GEMV, int8 activations (Q8_0, I8, K-quants):          1e-4 against the oracle fed x as the kernel
//     rounds it (int8 per block of 32, q8_rounded); x itself is ~0.5% away (the model tests
//     bound that: fast-mode logits within 3e-2)
//   GEMM (prefill, bf16 operands on the tensor cores):    2e-2 (f16 weights 4e-3); exact mode 1e-5
//   (16-bit weights take the tensor cores from 2 tokens: the GEMM tolerance)
//   norm, rope, act, add, embed, KV write:                1e-5
//   KV cache: float32 in exact mode, byte for byte; bf16 in fast mode, each element the
//     oracle's value rounded to nearest even (3e-3 after a rope, whose sincosf may move a
//     value across a rounding boundary)
//   attention: exact mode (float32 cache, float32 split kernel) 1e-5; fast mode (bf16 cache
//   and tensor cores: flash attention 2 for prefill, the tensor-core split kernel for
//   decode on sm_80+, the float kernel over the bf16 cache for groups over 16) 2e-2
//   sampling: greedy identical; sampled ids identical on >= 98% of rows (fixed-point sums;
//   expf rounding may move a draw that falls within a unit of a boundary)
// Without a GPU (CI) the tests skip: scripts/gpu-check runs them on one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backend/backend.hpp"
#include "backend/row_sampling.hpp"
#include "base/error.hpp"
#include "base/half.hpp"
#include "quant/dtype.hpp"
#include "quant/fp8.hpp"
#include "quant/quant_test_util.hpp"
#include "quant/quantize.hpp"

#if BRISK_WITH_CUDA
#include "backend/cuda/cuda_backend.hpp"

namespace brisk::test {

// The L2 error relative to ref's norm, or to that of a vector of ref's size and RMS floor
// where ref is smaller.
inline double rel_err_floored(const std::vector<float>& got, const std::vector<float>& ref, double floor) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max({den, floor * floor * double(ref.size()), 1e-30}));
}

inline double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  return rel_err_floored(got, ref, 0.0);
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device (scripts/gpu-check runs these on a GPU)";
    gpu_ = make_cuda_backend(0);
    exact_ = make_cuda_backend(0, CudaOptions{true});
    cpu_ = make_cpu_backend(1, false);
  }

  // A device buffer holding host values; poisoned when `poison`.
  float* dev(Backend& b, const std::vector<float>& host) {
    float* p = b.alloc(int64_t(host.size()));
    b.from_host(host.data(), p, int64_t(host.size()));
    owned_.push_back({&b, p});
    return p;
  }
  float* poisoned(Backend& b, size_t n) { return dev(b, std::vector<float>(n, NAN)); }
  int32_t* dev_ids(Backend& b, const std::vector<int32_t>& host) {
    auto* p = static_cast<int32_t*>(b.alloc_bytes(host.size() * 4 + 4));
    b.copy_from_host(host.data(), p, host.size() * 4);
    owned_.push_back({&b, p});
    return p;
  }
  std::vector<float> host(Backend& b, const float* p, size_t n) {
    std::vector<float> v(n);
    b.to_host(p, v.data(), int64_t(n));
    return v;
  }
  // n elements of a KV cache array as floats (a bf16 cache widened).
  std::vector<float> kv_host(Backend& b, const KvCache& kv, const void* p, size_t n) {
    if (kv.elem_bytes == 4) return host(b, static_cast<const float*>(p), n);
    std::vector<uint16_t> raw(n);
    b.copy_to_host(p, raw.data(), n * 2);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = bf16_to_f32(raw[i]);
    return v;
  }
  // A cache of 2 layers and 2 sequences, every element zero.
  KvCache zeroed_kv(Backend& b, int kv_heads, int hd, int64_t cap) {
    KvCache kv = b.alloc_kv(2, kv_heads, hd, cap, 2);
    const std::vector<uint8_t> zeros(size_t(kv.layer_stride() * 2) * size_t(kv.elem_bytes), 0);
    b.copy_from_host(zeros.data(), kv.k, zeros.size());
    b.copy_from_host(zeros.data(), kv.v, zeros.size());
    return kv;
  }
  void TearDown() override {
    for (auto& [b, p] : owned_) b->release_bytes(p);
  }

  std::unique_ptr<Backend> gpu_, exact_, cpu_;
  std::vector<std::pair<Backend*, void*>> owned_;
};

inline RopeConfig rope_1e6(int hd) {
  RopeConfig c;
  c.head_dim = hd;
  c.theta = 1e6f;
  return c;
}

inline std::vector<float> bf16_rounded(std::vector<float> v) {
  for (float& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

struct Weight {
  std::vector<uint8_t> bytes;
  std::vector<float> scales;  // I8, F8_E4M3
  WeightView view;
};

inline Weight make_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  Weight w;
  const uint64_t rb = *dtype_bytes(t, uint64_t(cols));
  w.bytes.resize(rb * uint64_t(rows));
  auto x = gaussian(size_t(rows * cols), seed, 0.5f);
  const bool scaled = t == DType::I8 || t == DType::F8_E4M3;
  if (scaled) w.scales.resize(size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (t == DType::I8)
      w.scales[size_t(r)] = quantize_row_i8(x.data() + r * cols, reinterpret_cast<int8_t*>(w.bytes.data() + r * rb), cols);
    else if (t == DType::F8_E4M3)
      w.scales[size_t(r)] = quantize_row_fp8(x.data() + r * cols, w.bytes.data() + r * rb, cols);
    else
      quantize_row(t, x.data() + r * cols, w.bytes.data() + r * rb, cols);
  }
  w.view = WeightView{"w", t, rows, cols, w.bytes.data(), scaled ? w.scales.data() : nullptr};
  return w;
}

// Whether the fast backend takes this product with int8 activations: the integer GEMV up to
// 8 tokens, the integer tensor cores (mmq, sm_80+) up to 64 for planar int8 and Q4_K
// weights (CudaBackend::quantized_input and use_mmq).
inline bool int8_path(DType t, int64_t n, int64_t cols) {
  const bool mmq = t == DType::Q8_0 || t == DType::I8 || t == DType::Q4_K;
  const bool int8_dot = mmq || t == DType::Q5_K || t == DType::Q6_K;
  return cols % 32 == 0 && ((int8_dot && n <= 8) || (mmq && n <= 64 && cuda_compute_major() >= 8));
}

// Whether the fast backend takes this product on the FP8 tensor cores, with FP8 activations
// (CudaBackend::use_fp8_gemm: above the GEMV's batch, where cuBLASLt has the scaling modes:
// sm_90; Ada has FP8 but not per-row or block scales).
// (Its rows must be a multiple of 4, as every model's are.)
inline bool fp8_path(DType t, int64_t n, int64_t rows = 4) {
  return t == DType::F8_E4M3 && n > 8 && rows % 4 == 0 && cuda_compute_major() == 9;
}

// The tolerance of a product of n tokens against the oracle: it follows the backend's choice
// of path (CudaBackend::use_gemv, quantized_input, use_mmq and use_fp8_gemm). The FP8 tensor
// cores add in a narrower accumulator between their float32 promotions.
inline double matmul_tolerance(DType t, int64_t n, int64_t cols, bool exact, int64_t rows = 4) {
  if (exact) return 3e-5;
  if (int8_path(t, n, cols)) return 1e-4;
  if (fp8_path(t, n, rows)) return 2e-3;
  const bool sixteen = t == DType::BF16 || t == DType::F16;
  if (n > 8 || (sixteen && n > 1)) return t == DType::F16 ? 4e-3 : 2e-2;
  return 3e-5;
}

// x as the integer GEMV sees it: int8 per block of 32 with scale max|x| / 127, rounded to
// nearest even (quantize_q8_kernel's arithmetic), as floats.
inline std::vector<float> q8_rounded(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float amax = 0.f;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    const float scale = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f;
    for (size_t j = 0; j < 32; ++j) {
      const int q = amax > 0.f ? std::clamp(int(std::nearbyint(x[b + j] * inv)), -127, 127) : 0;
      out[b + j] = float(q) * scale;
    }
  }
  return out;
}

// x as the FP8 GEMM sees it: each group of `group` columns of a token scaled by max|x| / 448
// and rounded to E4M3 (quantize_row_fp8, which the activation kernel follows), as floats.
inline std::vector<float> fp8_rounded(const std::vector<float>& x, int64_t cols, int64_t group) {
  std::vector<float> out(x.size());
  std::vector<uint8_t> q(static_cast<size_t>(group));
  for (size_t row = 0; row < x.size(); row += size_t(cols))
    for (int64_t b = 0; b < cols; b += group) {
      const int64_t len = std::min(group, cols - b);
      const float scale = quantize_row_fp8(x.data() + row + b, q.data(), len);
      for (int64_t j = 0; j < len; ++j) out[row + size_t(b + j)] = fp8_e4m3_to_float(q[size_t(j)]) * scale;
    }
  return out;
}

// What the fast backend's product of n tokens should be compared with: x, or x rounded
// (FP8 weights with one scale per row; block-scaled ones round per 128 columns).
inline std::vector<float> fast_input(const std::vector<float>& x, DType t, int64_t n, int64_t cols,
                                     int64_t fp8_group = 0, int64_t rows = 4) {
  if (fp8_path(t, n, rows)) return fp8_rounded(x, cols, fp8_group ? fp8_group : cols);
  return int8_path(t, n, cols) ? q8_rounded(x) : x;
}

inline const DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::I8, DType::F8_E4M3,
                        DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

}  // namespace brisk::test

#endif  // BRISK_WITH_CUDA
