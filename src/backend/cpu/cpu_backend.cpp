#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_epilogue.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "base/error.hpp"
#include "backend/row_sampling.hpp"
#include "quant/cpu_isa.hpp"
#include "quant/quantize.hpp"

namespace brisk {

CpuBackend::CpuBackend(int n_threads, bool int8_activations)
    : pool_(n_threads), int8_activations_(int8_activations) {}

std::string CpuBackend::name() const {
  return std::string(int8_activations_ ? "cpu (int8 activations, " : "cpu (") + quant::cpu_isa_name() + ")";
}

std::unique_ptr<Backend> make_cpu_backend(int n_threads, bool int8_activations) {
  return std::make_unique<CpuBackend>(n_threads, int8_activations);
}

DeviceWeight CpuBackend::upload(const WeightView& w) {
  DeviceWeight d;
  d.name = w.name;
  d.dtype = w.dtype;
  d.rows = w.rows;
  d.cols = w.cols;
  auto rb = dtype_bytes(w.dtype, uint64_t(w.cols));
  if (!rb) throw Error(ErrorCode::kFormat, "row of " + std::to_string(w.cols) + " elements is not whole " +
                                               dtype_name(w.dtype) + " blocks", w.name);
  d.row_bytes = *rb;
  d.data = w.data;
  d.scales = w.scales;
  d.scale_cols = w.scale_cols;
  d.input_scale = w.input_scale;
  if ((w.dtype == DType::I8 || w.dtype == DType::F8_E4M3) && !w.scales)
    throw Error(ErrorCode::kFormat, std::string(dtype_name(w.dtype)) + " weight without scales", w.name);
  return d;
}

void* CpuBackend::alloc_bytes(uint64_t bytes) {
  // 64-byte alignment for SIMD loads; rounded up so aligned_alloc's size rule holds.
  uint64_t rounded = (std::max<uint64_t>(bytes, 1) + 63) & ~uint64_t(63);
  void* p = rounded >= bytes ? std::aligned_alloc(64, size_t(rounded)) : nullptr;
  if (!p) throw Error(ErrorCode::kLimit, "out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void CpuBackend::release_bytes(void* p) { std::free(p); }

void CpuBackend::copy_to_host(const void* src, void* dst, uint64_t bytes) { std::memcpy(dst, src, size_t(bytes)); }
void CpuBackend::copy_from_host(const void* src, void* dst, uint64_t bytes) { std::memcpy(dst, src, size_t(bytes)); }

void CpuBackend::embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) {
  const int64_t dim = table.cols;
  pool_.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const auto* row = static_cast<const uint8_t*>(table.data) + uint64_t(ids[t]) * table.row_bytes;
      float* o = out + t * dim;
      if (table.scale_cols) decode_scaled_row(table, ids[t], o);
      else dequantize_row(table.dtype, row, o, dim);
      const float s = scale * row_scale(table, ids[t]);
      if (s != 1.f)
        for (int64_t i = 0; i < dim; ++i) o[i] *= s;
    }
  });
}

void CpuBackend::rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) {
  const int64_t dim = w.cols;
  const float* wt = static_cast<const float*>(w.data);
  pool_.parallel_for(rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      float ss = 0.f;
      for (int64_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];
      float inv = 1.f / std::sqrt(ss / float(dim) + eps);
      for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] * inv * wt[i];
    }
  }, 16);
}

void decode_scaled_row(const DeviceWeight& w, int64_t r, float* out) {
  dequantize_row(w.dtype, static_cast<const uint8_t*>(w.data) + uint64_t(r) * w.row_bytes, out, w.cols);
  const int64_t groups = (w.cols + w.scale_cols - 1) / w.scale_cols;
  const float* s = w.scales + r * groups;
  for (int64_t c = 0; c < w.cols; ++c) out[c] *= s[c / w.scale_cols];
}

void act_mul_span(const float* gate, const float* up, int64_t count, Activation act, bool fast, float* out) {
  if (fast) return act_mul_fast(gate, up, count, act != Activation::SiLU, out);
  if (act == Activation::SiLU) {
    for (int64_t i = 0; i < count; ++i) {
      float g = gate[i];
      out[i] = g / (1.f + std::exp(-g)) * up[i];
    }
  } else {  // GELU, tanh approximation (gelu_pytorch_tanh)
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    for (int64_t i = 0; i < count; ++i) {
      float g = gate[i];
      out[i] = 0.5f * g * (1.f + std::tanh(k * (g + 0.044715f * g * g * g))) * up[i];
    }
  }
}

void CpuBackend::act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out) {
  pool_.parallel_for(n, [&](int64_t b, int64_t e) {
    act_mul_span(gate + b, up + b, e - b, act, int8_activations_, out + b);
  }, 4096);
}

void CpuBackend::add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuBackend::kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n,
                          const int32_t* positions, const int32_t* seqs) {
  const int64_t hd = kv.head_dim;
  const KvPages pages = kv.pages(layer);
  auto* kc = static_cast<float*>(kv.k);  // float32: this backend's caches are
  auto* vc = static_cast<float*>(kv.v);
  for (int64_t t = 0; t < n; ++t) {
    for (int h = 0; h < kv.n_kv_heads; ++h) {
      const int64_t off = pages.row(seqs ? seqs[t] : 0, h, positions[t]);
      std::memcpy(kc + off, k + (t * kv.n_kv_heads + h) * hd, size_t(hd) * 4);
      std::memcpy(vc + off, v + (t * kv.n_kv_heads + h) * hd, size_t(hd) * 4);
    }
  }
}

void CpuBackend::take_tokens(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (from[i] >= 0) tokens[i] = prev[from[i]];
}

void CpuBackend::edit_logits(float* logits, int64_t stride, const LogitEdit* edits, int64_t n) {
  for (int64_t i = 0; i < n; ++i) apply_logit_edit(logits + int64_t(edits[i].row) * stride, edits[i]);
}

void CpuBackend::mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows,
                             int64_t n) {
  const int64_t words = (vocab + 63) / 64;
  for (int64_t i = 0; i < n; ++i) apply_token_mask(logits + int64_t(rows[i]) * stride, vocab, bits + i * words);
}

void CpuBackend::sample(const float* logits, int64_t rows, int64_t stride, int64_t vocab, const RowSampling* params,
                        int32_t* ids) {
  pool_.parallel_for(rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) ids[r] = sample_row(logits + r * stride, vocab, params[r]);
  }, 1);
}

}  // namespace brisk
