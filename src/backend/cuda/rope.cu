// Rotary position embedding (both pairings) and the KV-cache write. Positions and sequence
// slots are read from device memory, so a captured decode step replays at new positions.
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/kv_elems.cuh"

namespace brisk::cuda {
namespace {

__global__ void rope_kernel(float* x, int64_t n, int n_heads, int head_dim, const int32_t* positions,
                            const float* __restrict__ inv_freq, float linear_factor, bool interleaved) {
  pdl_wait();
  pdl_launch_dependents();
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

template <typename C>
__global__ void kv_write_kernel(C* kc, C* vc, KvPages pages, int n_kv_heads, int head_dim, const float* k, const float* v, int64_t n,
                                const int32_t* positions, const int32_t* seqs) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t per_token = int64_t(n_kv_heads) * head_dim;
  if (i >= n * per_token) return;
  const int64_t t = i / per_token, hd = i % per_token, h = hd / head_dim, d = hd % head_dim;
  const int64_t off = pages.row(seqs ? seqs[t] : 0, h, positions[t]) + d;
  store_kv(kc + off, k[i]);
  store_kv(vc + off, v[i]);
}

// Where the rope pass reads q, k and v: rows `stride` floats apart (their own buffers, or one
// product's output holding all three), plus optional biases.
struct QkvSource {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
  const float* bq = nullptr;
  const float* bk = nullptr;
  const float* bv = nullptr;
};

// rope of q and k heads (into q_out and k_out, which may be the sources), rotated k and v
// into the cache, in one launch.
template <typename C>
__global__ void rope_kv_kernel(QkvSource src, float* q_out, float* k_out, int64_t n, int n_heads, int n_kv,
                               int head_dim, const int32_t* positions, const int32_t* seqs,
                               const float* __restrict__ inv_freq, float linear_factor, bool interleaved, C* kc, C* vc,
                               KvPages pages) {
  pdl_wait();
  pdl_launch_dependents();
  const int half = head_dim / 2;
  const int64_t rot = n * (n_heads + n_kv) * half;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rot) {
    const int pair = int(i % half);
    const int64_t th = i / half, t = th / (n_heads + n_kv);
    const int h = int(th % (n_heads + n_kv));
    const bool is_k = h >= n_heads;
    const int kh = h - n_heads;
    const float* x = is_k ? src.k + t * src.k_stride + kh * head_dim : src.q + t * src.q_stride + h * head_dim;
    const float* bias = is_k ? (src.bk ? src.bk + kh * head_dim : nullptr) : (src.bq ? src.bq + h * head_dim : nullptr);
    float* y = is_k ? k_out + (t * n_kv + kh) * head_dim : q_out + (t * n_heads + h) * head_dim;
    const float angle = float(positions[t]) / linear_factor * inv_freq[pair];
    float sn, cs;
    sincosf(angle, &sn, &cs);
    const int a = interleaved ? 2 * pair : pair, b = interleaved ? 2 * pair + 1 : pair + half;
    const float x0 = x[a] + (bias ? bias[a] : 0.f), x1 = x[b] + (bias ? bias[b] : 0.f);
    const float y0 = x0 * cs - x1 * sn, y1 = x1 * cs + x0 * sn;
    y[a] = y0, y[b] = y1;
    if (is_k) {
      const int64_t off = pages.row(seqs ? seqs[t] : 0, kh, positions[t]);
      store_kv(kc + off + a, y0), store_kv(kc + off + b, y1);
    }
    return;
  }
  i -= rot;
  const int64_t kvd = int64_t(n_kv) * head_dim;
  if (i >= n * kvd) return;
  const int64_t t = i / kvd, hd = i % kvd;
  const int64_t off = pages.row(seqs ? seqs[t] : 0, hd / head_dim, positions[t]) + hd % head_dim;
  store_kv(vc + off, src.v[t * src.v_stride + hd] + (src.bv ? src.bv[hd] : 0.f));
}

void launch_rope_kv(const QkvSource& src, float* q_out, float* k_out, int64_t n, int n_heads,
                    const int32_t* positions, const int32_t* seqs, const float* inv_freq, float linear_factor,
                    RopeStyle style, const KvCache& kv, int layer, cudaStream_t s) {
  const int64_t total = n * (n_heads + kv.n_kv_heads) * (kv.head_dim / 2) + n * kv.n_kv_heads * kv.head_dim;
  with_kv_elems(kv, [&](auto* kc, auto* vc) {
    launch(rope_kv_kernel<std::remove_pointer_t<decltype(kc)>>, blocks_for(total, 256), 256, 0, s, src, q_out, k_out,
           n, n_heads, kv.n_kv_heads, kv.head_dim, positions, seqs, inv_freq, linear_factor,
           style == RopeStyle::Interleaved, kc, vc, kv.pages(layer));
  });
  BRISK_LAUNCH_CHECK();
}

}  // namespace

void rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                   const int32_t* seqs, const float* inv_freq, float linear_factor, RopeStyle style,
                   const KvCache& kv, int layer, cudaStream_t s) {
  const int64_t kvd = int64_t(kv.n_kv_heads) * kv.head_dim;
  QkvSource src{q, k, v, int64_t(n_heads) * kv.head_dim, kvd, kvd};
  launch_rope_kv(src, q, k, n, n_heads, positions, seqs, inv_freq, linear_factor, style, kv, layer, s);
}

void qkv_rope_kv_write(const float* y, const float* const* biases, float* q, float* k, int64_t n, int n_heads,
                       const int32_t* positions, const int32_t* seqs, const float* inv_freq, float linear_factor,
                       RopeStyle style, const KvCache& kv, int layer, cudaStream_t s) {
  const int64_t qd = int64_t(n_heads) * kv.head_dim, kvd = int64_t(kv.n_kv_heads) * kv.head_dim;
  const int64_t total = qd + 2 * kvd;
  QkvSource src{y, y + qd, y + qd + kvd, total, total, total, biases[0], biases[1], biases[2]};
  launch_rope_kv(src, q, k, n, n_heads, positions, seqs, inv_freq, linear_factor, style, kv, layer, s);
}

void rope(float* x, int64_t n, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          float linear_factor, RopeStyle style, cudaStream_t s) {
  const int64_t total = n * n_heads * (head_dim / 2);
  launch(rope_kernel, blocks_for(total, 256), 256, 0, s, x, n, n_heads, head_dim, positions, inv_freq, linear_factor,
                                                     style == RopeStyle::Interleaved);
  BRISK_LAUNCH_CHECK();
}

void kv_write(const KvCache& kv, int layer, const float* k, const float* v, int64_t n, const int32_t* positions,
              const int32_t* seqs, cudaStream_t s) {
  const int64_t total = n * kv.n_kv_heads * kv.head_dim;
  with_kv_elems(kv, [&](auto* kc, auto* vc) {
    launch(kv_write_kernel<std::remove_pointer_t<decltype(kc)>>, blocks_for(total, 256), 256, 0, s, kc, vc,
           kv.pages(layer), kv.n_kv_heads, kv.head_dim, k, v, n, positions, seqs);
  });
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
