// CPU matmul against a weight of any dtype.
//
// Exact mode (the oracle): for a few tokens each row is dotted straight from its blocks; for
// more, each row is dequantized once into a per-thread scratch row and dotted with every
// token. dot_row decodes to exactly dequantize_row's floats and sums in one fixed order
// (quant/dot.hpp), so both paths give the same bits: a token's result is identical whether
// it runs alone or in a batch, on every CPU and thread count.
//
// A weight scaled per column group (FP8's block-scaled layout) is always dequantized first,
// its scales applied to the row, so that both paths see the same floats. An FP8 weight with a
// static activation scale gets its input rounded through E4M3 first.
//
// int8 activations (the fast mode): products against a format with an int8 path go to
// cpu_matmul_int8.cpp.
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_epilogue.hpp"
#include "base/error.hpp"
#include "quant/fp8.hpp"
#include "quant/quantize.hpp"

namespace brisk {

// From this many tokens on, dequantizing a row once beats decoding its blocks per token.
constexpr int64_t kDequantizeFromTokens = 4;

void CpuBackend::matmul(const float* x, int64_t n, const DeviceWeight& w, float* y, const DeviceWeight* bias,
                        bool accumulate) {
  const int64_t rows = w.rows, cols = w.cols;
  const float* b = bias ? static_cast<const float*>(bias->data) : nullptr;
  if (bias && bias->cols != rows)
    throw Error(ErrorCode::kInternal, "bias length does not match the weight's rows", bias->name);
  thread_local std::vector<float> rounded;  // the input as a static FP8 activation scale leaves it
  if (w.input_scale > 0.f) {
    rounded.resize(size_t(n * cols));
    round_through_fp8(x, n * cols, w.input_scale, rounded.data());
    x = rounded.data();
  }
  if (int8_path(w)) {
    const std::vector<QuantizedActivations>& qx = quantize_tokens(x, n, cols);
    pool_.parallel_for(int8_groups(w), [&](int64_t g0, int64_t g1) {
      int8_rows(qx.data(), n, w, y, b, accumulate, g0, g1);
    });
    return;
  }
  pool_.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> scratch;
    if (w.dtype != DType::F32 && int64_t(scratch.size()) < cols) scratch.resize(size_t(cols));
    for (int64_t r = r0; r < r1; ++r) {
      const auto* raw = static_cast<const uint8_t*>(w.data) + uint64_t(r) * w.row_bytes;
      // Scaled rows (I8, FP8) are decoded whole by dot_row anyway: decode them once.
      if (n < kDequantizeFromTokens && !w.scales) {
        for (int64_t t = 0; t < n; ++t) {
          store(y[t * rows + r], dot_row(w.dtype, raw, x + t * cols, cols) * row_scale(w, r), b, r, accumulate);
        }
        continue;
      }
      const float* row = reinterpret_cast<const float*>(raw);
      if (w.scale_cols) {
        decode_scaled_row(w, r, scratch.data());
        row = scratch.data();
      } else if (w.dtype != DType::F32) {
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
