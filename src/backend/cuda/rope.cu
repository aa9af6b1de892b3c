// Rotary position embedding (both pairings) and the KV-cache write. Positions and sequence
// slots are read from device memory, so a captured decode step replays at new positions.
#include "backend/cuda/kernels.cuh"

namespace brisk::cuda {
namespace {

__global__ void rope_kernel(float* x, int64_t n, int n_heads, int head_dim, const int32_t* positions,
                            const float* __restrict__ inv_freq, float linear_factor, bool interleaved) {
  const int half = head_dim / 2;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * n_heads * half) return;
  const int pair = int(i % half);
  const int64_t th = i / half;  // token * n_heads + head
  const int64_t t = th / n_heads;
  const float pos = float(positions[t]) / linear_factor;
  const float angle = pos * inv_freq[pair];  // float32 product, as the CPU oracle and HF do
  float sn, cs;
  sincosf(angle, &sn, &cs);
  float* v = x + th * head_dim;
  const int a = interleaved ? 2 * pair : pair, b = interleaved ? 2 * pair + 1 : pair + half;
  const float x0 = v[a], x1 = v[b];
  v[a] = x0 * cs - x1 * sn;
  v[b] = x1 * cs + x0 * sn;
}

__global__ void kv_write_kernel(float* kc, float* vc, int64_t layer_off, int64_t seq_stride, int64_t capacity,
                                int n_kv_heads, int head_dim, const float* k, const float* v, int64_t n,
                                const int32_t* positions, const int32_t* seqs) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t per_token = int64_t(n_kv_heads) * head_dim;
  if (i >= n * per_token) return;
  const int64_t t = i / per_token, hd = i % per_token, h = hd / head_dim, d = hd % head_dim;
  const int64_t off = layer_off + (seqs ? seqs[t] : 0) * seq_stride + (h * capacity + positions[t]) * head_dim + d;
  kc[off] = k[i];
  vc[off] = v[i];
}

}  // namespace

void rope(float* x, int64_t n, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          float linear_factor, RopeStyle style, cudaStream_t s) {
  const int64_t total = n * n_heads * (head_dim / 2);
  rope_kernel<<<blocks_for(total, 256), 256, 0, s>>>(x, n, n_heads, head_dim, positions, inv_freq, linear_factor,
                                                     style == RopeStyle::Interleaved);
  BRISK_LAUNCH_CHECK();
}

void kv_write(const KvCache& kv, int layer, const float* k, const float* v, int64_t n, const int32_t* positions,
              const int32_t* seqs, cudaStream_t s) {
  const int64_t total = n * kv.n_kv_heads * kv.head_dim;
  kv_write_kernel<<<blocks_for(total, 256), 256, 0, s>>>(kv.k, kv.v, layer * kv.layer_stride(), kv.seq_stride(),
                                                         kv.capacity, kv.n_kv_heads, kv.head_dim, k, v, n, positions,
                                                         seqs);
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
