// Prefill attention on the tensor cores (sm_80+): flash attention with an online softmax.
// A block takes 64 queries of one head (16 per warp) and walks 64-key tiles of the cache
// from the lowest position any of its queries sees to the highest. Q.K^T and P.V run as
// bf16 WMMA products with float32 accumulation; scores, probabilities and the running
// output live in shared memory, where the softmax rescales them row by row. Causal and
// sliding-window masks come from each query's position, read from device memory.
#include <mma.h>

#include <cfloat>

#include "backend/cuda/kernels.cuh"

namespace brisk::cuda {
namespace {

constexpr int kWarps = 4, kBQ = 64, kBK = 64;

template <int HD>
struct PrefillSmem {
  static constexpr int kLdQK = HD + 8, kLdS = kBK + 4, kLdP = kBK + 8, kLdO = HD + 4;
  static constexpr size_t q = 0;
  static constexpr size_t k = q + size_t(kBQ) * kLdQK * 2;
  static constexpr size_t v = k + size_t(kBK) * kLdQK * 2;
  static constexpr size_t s = v + size_t(kBK) * kLdQK * 2;
  static constexpr size_t p = s + size_t(kWarps) * 16 * kLdS * 4;
  static constexpr size_t o = p + size_t(kWarps) * 16 * kLdP * 2;
  static constexpr size_t pos = o + size_t(kWarps) * 16 * kLdO * 4;
  static constexpr size_t bytes = pos + kBQ * 4;
};

template <int HD>
__global__ void __launch_bounds__(kWarps * 32)
    prefill_kernel(const float* __restrict__ q, const float* __restrict__ kc, const float* __restrict__ vc,
                   int64_t layer_off, int64_t seq_stride, int64_t capacity, const int32_t* positions,
                   const int32_t* seqs, int64_t n, int n_heads, int group, float scale, int window, float* out) {
  pdl_wait();
  pdl_launch_dependents();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  using L = PrefillSmem<HD>;
  extern __shared__ __align__(128) unsigned char smem[];
  auto* Qs = reinterpret_cast<__nv_bfloat16*>(smem + L::q);
  auto* Ks = reinterpret_cast<__nv_bfloat16*>(smem + L::k);
  auto* Vs = reinterpret_cast<__nv_bfloat16*>(smem + L::v);
  auto* Ss = reinterpret_cast<float*>(smem + L::s);
  auto* Ps = reinterpret_cast<__nv_bfloat16*>(smem + L::p);
  auto* Os = reinterpret_cast<float*>(smem + L::o);
  auto* qpos = reinterpret_cast<int32_t*>(smem + L::pos);

  const int h = blockIdx.y, kvh = h / group;
  const int64_t t0 = int64_t(blockIdx.x) * kBQ;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t seq = seqs ? seqs[t0] : 0;  // one sequence per prefill call
  const int64_t head_off = layer_off + seq * seq_stride + int64_t(kvh) * capacity * HD;

  for (int r = threadIdx.x; r < kBQ; r += kWarps * 32) qpos[r] = t0 + r < n ? positions[t0 + r] : -1;
  for (int i = threadIdx.x; i < kBQ * HD; i += kWarps * 32) {
    const int r = i / HD, d = i % HD;
    const float x = t0 + r < n ? q[((t0 + r) * n_heads + h) * HD + d] * scale : 0.f;
    Qs[r * L::kLdQK + d] = __float2bfloat16_rn(x);
  }
  float* Ow = Os + warp * 16 * L::kLdO;
  for (int i = lane; i < 16 * HD; i += 32) Ow[(i / HD) * L::kLdO + i % HD] = 0.f;
  __syncthreads();

  int32_t pmax = -1, pmin = INT32_MAX;
  for (int r = 0; r < kBQ; ++r)
    if (qpos[r] >= 0) pmax = max(pmax, qpos[r]), pmin = min(pmin, qpos[r]);
  const int64_t kmin = window > 0 ? max(int64_t(0), int64_t(pmin) - window + 1) : 0;

  // This lane's softmax row and column half.
  const int rr = lane >> 1, half = lane & 1;
  const int32_t my_pos = qpos[warp * 16 + rr];
  float m_run = -FLT_MAX, l_run = 0.f;
  float* Sw = Ss + warp * 16 * L::kLdS;
  __nv_bfloat16* Pw = Ps + warp * 16 * L::kLdP;

  for (int64_t kt = (kmin / kBK) * kBK; kt <= pmax; kt += kBK) {
    __syncthreads();  // the previous tile's K/V are no longer read
    for (int i = threadIdx.x; i < kBK * HD; i += kWarps * 32) {
      const int r = i / HD, d = i % HD;
      const int64_t j = kt + r;
      const bool ok = j <= pmax && j < capacity;
      Ks[r * L::kLdQK + d] = __float2bfloat16_rn(ok ? kc[head_off + j * HD + d] : 0.f);
      Vs[r * L::kLdQK + d] = __float2bfloat16_rn(ok ? vc[head_off + j * HD + d] : 0.f);
    }
    __syncthreads();

    // S = Q K^T for this warp's 16 rows.
#pragma unroll
    for (int nt = 0; nt < kBK / 16; ++nt) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(a, Qs + warp * 16 * L::kLdQK + kk * 16, L::kLdQK);
        wmma::load_matrix_sync(b, Ks + nt * 16 * L::kLdQK + kk * 16, L::kLdQK);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(Sw + nt * 16, acc, L::kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax: two lanes per row, 32 columns each.
    float sv[32];
    float tmax = -FLT_MAX;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const int col = half * 32 + c;
      const int64_t j = kt + col;
      const bool vis = my_pos >= 0 && j <= my_pos && (window <= 0 || j > int64_t(my_pos) - window);
      sv[c] = vis ? Sw[rr * L::kLdS + col] : -FLT_MAX;
      tmax = fmaxf(tmax, sv[c]);
    }
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    const float m_new = fmaxf(m_run, tmax);
    const float corr = m_run == -FLT_MAX ? 0.f : __expf(m_run - m_new);
    float psum = 0.f;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const float pj = sv[c] == -FLT_MAX ? 0.f : __expf(sv[c] - m_new);
      psum += pj;
      Pw[rr * L::kLdP + half * 32 + c] = __float2bfloat16_rn(pj);
    }
    psum += __shfl_xor_sync(0xffffffffu, psum, 1);
    l_run = l_run * corr + psum;
    m_run = m_new;
    for (int d = half * (HD / 2); d < (half + 1) * (HD / 2); ++d) Ow[rr * L::kLdO + d] *= corr;
    __syncwarp();

    // O += P V.
#pragma unroll
    for (int dt = 0; dt < HD / 16; ++dt) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, Ow + dt * 16, L::kLdO, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(a, Pw + kk * 16, L::kLdP);
        wmma::load_matrix_sync(b, Vs + kk * 16 * L::kLdQK + dt * 16, L::kLdQK);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(Ow + dt * 16, acc, L::kLdO, wmma::mem_row_major);
    }
    __syncwarp();
  }

  const int64_t t = t0 + warp * 16 + rr;
  if (t < n) {
    const float inv = l_run > 0.f ? 1.f / l_run : 0.f;
    for (int d = half * (HD / 2); d < (half + 1) * (HD / 2); ++d)
      out[(t * n_heads + h) * HD + d] = Ow[rr * L::kLdO + d] * inv;
  }
#endif
}

template <int HD>
bool launch_prefill(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                    const int32_t* seqs, const AttentionConfig& cfg, float* out, cudaStream_t s) {
  constexpr size_t bytes = PrefillSmem<HD>::bytes;
  int dev = 0, limit = 0;
  BRISK_CUDA_CHECK(cudaGetDevice(&dev));
  BRISK_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes > size_t(limit)) return false;
  static bool configured = false;  // per head size; set before any capture
  if (!configured) {
    BRISK_CUDA_CHECK(cudaFuncSetAttribute(prefill_kernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    configured = true;
  }
  dim3 grid(unsigned((n + kBQ - 1) / kBQ), unsigned(cfg.n_heads));
  launch(prefill_kernel<HD>, grid, kWarps * 32, bytes, s, q, kv.k, kv.v, layer * kv.layer_stride(), kv.seq_stride(),
         kv.capacity, positions, seqs, n, cfg.n_heads, cfg.n_heads / cfg.n_kv_heads, cfg.scale, cfg.window, out);
  BRISK_LAUNCH_CHECK();
  return true;
}

}  // namespace

bool attention_prefill(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                       const int32_t* seqs, const AttentionConfig& cfg, float* out, int cc_major, cudaStream_t s) {
  if (cc_major < 8 || n > int64_t(65535) * kBQ) return false;
  switch (cfg.head_dim) {
    case 64: return launch_prefill<64>(q, kv, layer, n, positions, seqs, cfg, out, s);
    case 128: return launch_prefill<128>(q, kv, layer, n, positions, seqs, cfg, out, s);
    case 256: return launch_prefill<256>(q, kv, layer, n, positions, seqs, cfg, out, s);
    default: return false;
  }
}

}  // namespace brisk::cuda
