// The fast mode's products (int8 activations): each token is quantized once per product
// (or once for the q/k/v and gate/up products that share an input), then matmul_q8's tiled
// kernels run over whole groups of rows per thread, one pool dispatch per layer step where
// the plain path took two or three. Every (row, token) is summed in dot_q8.cpp's fixed order,
// so a token's result does not depend on its batch, the thread count or the grouping.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_epilogue.hpp"
#include "base/error.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

// Rows per thread-pool index: whole kernel tiles, and few calls per thread.
constexpr int64_t kRowGroup = 16;
// Rows per kernel call when an epilogue needs the dots first (a per-thread buffer of n x this).
constexpr int64_t kEpilogueRows = 64;

const float* bias_data(const DeviceWeight* bias, const DeviceWeight& w) {
  if (!bias) return nullptr;
  if (bias->cols != w.rows) throw Error(ErrorCode::kInternal, "bias length does not match the weight's rows", bias->name);
  return static_cast<const float*>(bias->data);
}

}  // namespace

bool CpuBackend::int8_path(const DeviceWeight& w) const {
  return int8_activations_ && dot_row_q8_supported(w.dtype) && w.cols % 32 == 0;
}

int64_t CpuBackend::int8_groups(const DeviceWeight& w) { return (w.rows + kRowGroup - 1) / kRowGroup; }

const std::vector<QuantizedActivations>& CpuBackend::quantize_tokens(const float* x, int64_t n, int64_t cols) {
  thread_local std::vector<QuantizedActivations> qx;
  if (int64_t(qx.size()) < n) qx.resize(size_t(n));
  for (int64_t t = 0; t < n; ++t) quantize_activations(x + t * cols, cols, &qx[size_t(t)]);
  return qx;
}

void CpuBackend::int8_rows(const QuantizedActivations* qx, int64_t n, const DeviceWeight& w, float* y,
                           const float* bias, bool accumulate, int64_t g0, int64_t g1) {
  const int64_t rows = w.rows, r0 = g0 * kRowGroup, r1 = std::min(rows, g1 * kRowGroup);
  const auto* base = static_cast<const uint8_t*>(w.data);
  if (!bias && !w.scales && !accumulate) {
    matmul_q8(w.dtype, base + uint64_t(r0) * w.row_bytes, w.row_bytes, r1 - r0, qx, n, y + r0, rows);
    return;
  }
  thread_local std::vector<float> dots;
  dots.resize(size_t(n * kEpilogueRows));
  for (int64_t s = r0; s < r1; s += kEpilogueRows) {
    const int64_t e = std::min(r1, s + kEpilogueRows);
    matmul_q8(w.dtype, base + uint64_t(s) * w.row_bytes, w.row_bytes, e - s, qx, n, dots.data(), kEpilogueRows);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t r = s; r < e; ++r)
        store(y[t * rows + r], dots[size_t(t * kEpilogueRows + r - s)] * row_scale(w, r), bias, r, accumulate);
  }
}

void CpuBackend::matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                              const DeviceWeight* const* biases, int count) {
  bool fused = count > 0;
  for (int i = 0; i < count; ++i) fused = fused && int8_path(*ws[i]) && ws[i]->cols == ws[0]->cols;
  if (!fused) return Backend::matmul_multi(x, n, ws, ys, biases, count);
  const std::vector<QuantizedActivations>& qx = quantize_tokens(x, n, ws[0]->cols);
  int64_t first[4] = {0};  // weight i owns the pool indices [first[i], first[i + 1])
  const float* b[3] = {};
  for (int i = 0; i < count; ++i) {
    first[i + 1] = first[i] + int8_groups(*ws[i]);
    b[i] = bias_data(biases ? biases[i] : nullptr, *ws[i]);
  }
  pool_.parallel_for(first[count], [&](int64_t g0, int64_t g1) {
    for (int i = 0; i < count; ++i) {
      const int64_t lo = std::max(g0, first[i]), hi = std::min(g1, first[i + 1]);
      if (lo < hi) int8_rows(qx.data(), n, *ws[i], ys[i], b[i], false, lo - first[i], hi - first[i]);
    }
  });
}

void CpuBackend::matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up,
                              Activation act, float* out, float* scratch) {
  if (!int8_path(gate) || !int8_path(up) || gate.rows != up.rows || gate.cols != up.cols)
    return Backend::matmul_gated(x, n, gate, up, act, out, scratch);
  const std::vector<QuantizedActivations>& qx = quantize_tokens(x, n, gate.cols);
  const int64_t rows = gate.rows;
  pool_.parallel_for(int8_groups(gate), [&](int64_t g0, int64_t g1) {
    int8_rows(qx.data(), n, gate, out, nullptr, false, g0, g1);
    int8_rows(qx.data(), n, up, scratch, nullptr, false, g0, g1);
    const int64_t r0 = g0 * kRowGroup, r1 = std::min(rows, g1 * kRowGroup);
    for (int64_t t = 0; t < n; ++t)
      act_mul_span(out + t * rows + r0, scratch + t * rows + r0, r1 - r0, act, true, out + t * rows + r0);
  });
}

}  // namespace brisk
