#include "backend/backend.hpp"

#include <string>

#include "base/error.hpp"

namespace brisk {

KvCache Backend::alloc_kv(int n_layers, int n_kv_heads, int head_dim, int64_t capacity, int n_seqs) {
  KvCache kv{n_layers, n_kv_heads, head_dim, capacity, n_seqs, nullptr, nullptr};
  const uint64_t bytes = uint64_t(kv.layer_stride()) * uint64_t(n_layers) * 4;
  try {
    kv.k = static_cast<float*>(alloc_bytes(bytes));
    kv.v = static_cast<float*>(alloc_bytes(bytes));
  } catch (const Error& e) {
    if (kv.k) release_bytes(kv.k);
    throw Error(ErrorCode::kLimit, "the KV cache for " + std::to_string(n_seqs) + " x " + std::to_string(capacity) +
                                       " positions (2 x " + std::to_string(bytes >> 20) + " MiB) does not fit on " +
                                       name() + ": " + e.what() + "; use a shorter context (-c)");
  }
  return kv;
}

void Backend::release_kv(KvCache& kv) {
  if (kv.k) release_bytes(kv.k);
  if (kv.v) release_bytes(kv.v);
  kv.k = kv.v = nullptr;
}

void Backend::matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                           const DeviceWeight* const* biases, int count) {
  for (int i = 0; i < count; ++i) matmul(x, n, *ws[i], ys[i], biases[i]);
}

void Backend::matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up,
                           Activation act, float* out, float* scratch) {
  matmul(x, n, gate, out);
  matmul(x, n, up, scratch);
  act_mul(out, scratch, n * gate.rows, act, out);
}

void Backend::rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                            const int32_t* seqs, const RopeConfig& cfg, KvCache& kv, int layer) {
  rope(q, n, n_heads, positions, cfg);
  rope(k, n, kv.n_kv_heads, positions, cfg);
  kv_write(kv, layer, k, v, n, positions, seqs);
}

}  // namespace brisk
