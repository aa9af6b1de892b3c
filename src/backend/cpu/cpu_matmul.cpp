// CPU matmul against a weight of any dtype. For a few tokens each row is dotted straight from
// its blocks; for more, each row is dequantized once into a per-thread scratch row and dotted
// with every token. dot_row decodes to exactly dequantize_row's floats and sums in one fixed
// order (quant/dot.hpp), so both paths give the same bits: a token's result is identical
// whether it runs alone or in a batch.
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "base/error.hpp"
#include "quant/quantize.hpp"

namespace brisk {

// From this many tokens on, dequantizing a row once beats decoding its blocks per token.
constexpr int64_t kDequantizeFromTokens = 4;
// With int8 activations, products of up to this many tokens take the integer path: every
// decode step of up to this many sequences (the scheduler's cap) computes each token exactly
// as it would alone, while long prefill chunks keep the faster dequantized float path.
constexpr int64_t kInt8MaxTokens = 64;

// I8 rows carry a float scale; every other dtype scales itself.
inline float row_scale(const DeviceWeight& w, int64_t r) { return w.scales ? w.scales[r] : 1.f; }

// The epilogue every path shares: optional bias, then overwrite or accumulate (residual).
inline void store(float& out, float dot, const float* bias, int64_t row, bool accumulate) {
  if (bias) dot += bias[row];
  out = accumulate ? out + dot : dot;
}

void CpuBackend::matmul_int8(const float* x, int64_t n, const DeviceWeight& w, float* y, const float* b,
                             bool accumulate) {
  const int64_t rows = w.rows, cols = w.cols;
  std::vector<QuantizedActivations> qx(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) quantize_activations(x + t * cols, cols, &qx[size_t(t)]);
  pool_.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const auto* raw = static_cast<const uint8_t*>(w.data) + uint64_t(r) * w.row_bytes;
      for (int64_t t = 0; t < n; ++t) {
        store(y[t * rows + r], dot_row_q8(w.dtype, raw, qx[size_t(t)]), b, r, accumulate);
      }
    }
  }, 8);
}

void CpuBackend::matmul(const float* x, int64_t n, const DeviceWeight& w, float* y, const DeviceWeight* bias,
                        bool accumulate) {
  const int64_t rows = w.rows, cols = w.cols;
  const float* b = bias ? static_cast<const float*>(bias->data) : nullptr;
  if (bias && bias->cols != rows)
    throw Error(ErrorCode::kInternal, "bias length does not match the weight's rows", bias->name);
  if (int8_activations_ && n <= kInt8MaxTokens && dot_row_q8_supported(w.dtype)) {
    matmul_int8(x, n, w, y, b, accumulate);
    return;
  }
  pool_.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> scratch;
    if (w.dtype != DType::F32 && int64_t(scratch.size()) < cols) scratch.resize(size_t(cols));
    for (int64_t r = r0; r < r1; ++r) {
      const auto* raw = static_cast<const uint8_t*>(w.data) + uint64_t(r) * w.row_bytes;
      if (n < kDequantizeFromTokens) {
        for (int64_t t = 0; t < n; ++t) {
          store(y[t * rows + r], dot_row(w.dtype, raw, x + t * cols, cols) * row_scale(w, r), b, r, accumulate);
        }
        continue;
      }
      const float* row = reinterpret_cast<const float*>(raw);
      if (w.dtype != DType::F32) {
        dequantize_row(w.dtype, raw, scratch.data(), cols);
        row = scratch.data();
      }
      for (int64_t t = 0; t < n; ++t) {
        store(y[t * rows + r], dot_row(DType::F32, row, x + t * cols, cols) * row_scale(w, r), b, r, accumulate);
      }
    }
  }, 8);
}

}  // namespace brisk
