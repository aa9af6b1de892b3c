// Prefill attention on the tensor cores (sm_80+): flash attention 2 with an online softmax.
// A block takes 64 queries of one head (16 rows per warp) and walks key tiles of the cache
// from the lowest position any of its queries sees to the highest. Each tile of K and V is
// converted from the float32 cache to bf16 in shared memory; S = Q K^T and O += P V run as
// mma.sync m16n8k16 (bf16 operands, float32 accumulation) with S, P and O held in registers:
// the S accumulators are the A operand of P V as they stand, so nothing but K and V passes
// through shared memory. The softmax runs in base 2 (log2 e folded into the query scale);
// row sums stay per thread until the end. Causal and sliding-window masks come from each
// query's position, read from device memory. Blocks with the most keys start first.
// (The cache is float32 in the exact mode, converted as it is loaded, or bf16 in the fast one.)
#include <cfloat>

#include "backend/cuda/head_dim.cuh"
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/kv_elems.cuh"
#include "backend/cuda/mma.cuh"
#include "backend/cuda/online_softmax.cuh"

namespace brisk::cuda {
namespace {

constexpr int kWarps = 4, kBQ = 64;

template <int HD>
struct PrefillTile {
  static constexpr int kBK = HD >= 256 ? 32 : 64;  // keys per tile (registers: S is 16 x kBK per warp)
  static constexpr int kLd = HD + 8;               // bf16 per shared row: 16-byte pad, no ldmatrix conflicts
  static constexpr size_t q = 0;
  static constexpr size_t k = q + size_t(kBQ) * kLd * 2;
  static constexpr size_t v = k + size_t(kBK) * kLd * 2;
  static constexpr size_t pos = v + size_t(kBK) * kLd * 2;
  static constexpr size_t bytes = pos + kBQ * 4;
};

// kBK key or value rows from position kt of (seq, kv head) into bf16 shared rows, each row
// found through the block table; rows past `valid` are zero.
template <int HD, typename C>
__device__ __forceinline__ void load_kv_rows(__nv_bfloat16* dst, const C* cache, const KvPages& pages, int64_t seq,
                                             int kvh, int64_t kt, int rows, int valid) {
  constexpr int kLd = PrefillTile<HD>::kLd, kVec = kKvVec<C>;
  for (int i = threadIdx.x; i < rows * HD / kVec; i += kWarps * 32) {
    const int r = i / (HD / kVec), c = (i % (HD / kVec)) * kVec;
    kv_to_smem(dst + r * kLd + c, cache + (r < valid ? pages.row(seq, kvh, kt + r) + c : 0), r < valid);
  }
}

template <int HD, typename C>
__global__ void __launch_bounds__(kWarps * 32)
    prefill_kernel(const float* __restrict__ q, const C* __restrict__ kc, const C* __restrict__ vc,
                   KvPages pages, const int32_t* positions, const int32_t* seqs, int64_t n, int n_heads, int group, float scale, int window, float* out) {
  pdl_wait();
  pdl_launch_dependents();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using T = PrefillTile<HD>;
  constexpr int kBK = T::kBK, kLd = T::kLd, kNT = kBK / 8, kOT = HD / 8;
  extern __shared__ __align__(128) unsigned char smem[];
  auto* Qs = reinterpret_cast<__nv_bfloat16*>(smem + T::q);
  auto* Ks = reinterpret_cast<__nv_bfloat16*>(smem + T::k);
  auto* Vs = reinterpret_cast<__nv_bfloat16*>(smem + T::v);
  auto* qpos = reinterpret_cast<int32_t*>(smem + T::pos);

  const int h = blockIdx.y, kvh = h / group;
  const int64_t t0 = int64_t(gridDim.x - 1 - blockIdx.x) * kBQ;  // the longest rows first
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const int64_t seq = seqs ? seqs[t0] : 0;  // one sequence per prefill call

  for (int r = threadIdx.x; r < kBQ; r += kWarps * 32) qpos[r] = t0 + r < n ? positions[t0 + r] : -1;
  const float qscale = scale * 1.4426950408889634f;  // softmax in base 2
  for (int i = threadIdx.x; i < kBQ * HD / 4; i += kWarps * 32) {
    const int r = i / (HD / 4), c = (i % (HD / 4)) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (t0 + r < n) x = __ldg(reinterpret_cast<const float4*>(q + ((t0 + r) * n_heads + h) * HD + c));
    *reinterpret_cast<uint2*>(Qs + r * kLd + c) =
        make_uint2(pack_bf16(x.x * qscale, x.y * qscale), pack_bf16(x.z * qscale, x.w * qscale));
  }
  __syncthreads();

  int32_t pmax = -1, pmin = INT32_MAX;
  for (int r = 0; r < kBQ; ++r)
    if (qpos[r] >= 0) pmax = max(pmax, qpos[r]), pmin = min(pmin, qpos[r]);
  const int64_t kmin = window > 0 ? max(int64_t(0), int64_t(pmin) - window + 1) : 0;
  const int32_t row_pos[2] = {qpos[warp * 16 + g], qpos[warp * 16 + g + 8]};

  float o[kOT][4];
#pragma unroll
  for (int i = 0; i < kOT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

  for (int64_t kt = (kmin / kBK) * kBK; kt <= pmax; kt += kBK) {
    __syncthreads();  // the previous tile's K/V are no longer read
    const int valid = int(min(int64_t(kBK), int64_t(pmax) + 1 - kt));
    load_kv_rows<HD>(Ks, kc, pages, seq, kvh, kt, kBK, valid);
    load_kv_rows<HD>(Vs, vc, pages, seq, kvh, kt, kBK, valid);
    __syncthreads();

    // S = Q K^T: this warp's 16 rows by kBK keys.
    float s[kNT][4];
#pragma unroll
    for (int i = 0; i < kNT; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, Qs + (warp * 16 + (lane & 15)) * kLd + kk * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int nt = 0; nt < kNT; nt += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, Ks + (nt * 8 + (lane & 7) + (lane >> 4) * 8) * kLd + kk * 16 + ((lane >> 3) & 1) * 8);
        mma_bf16(s[nt], a, b[0], b[1]);
        mma_bf16(s[nt + 1], a, b[2], b[3]);
      }
    }

    // Mask and online softmax, rows g (e = 0, 1) and g + 8 (e = 2, 3) of the warp's 16.
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = kt + nt * 8 + 2 * tq + (e & 1);
        const int32_t p = row_pos[e >> 1];
        const bool vis = p >= 0 && j <= p && (window <= 0 || j > int64_t(p) - window);
        s[nt][e] = vis ? s[nt][e] : -INFINITY;
      }
    float m_use[2];
    online_softmax_rescale(s, m_run, l_run, o, m_use);

    // O += P V, P straight from the S accumulators (their layout is the A operand's).
#pragma unroll
    for (int c = 0; c < kBK / 16; ++c) {
      uint32_t a[4];
      softmax_probs_operand(s[2 * c], s[2 * c + 1], m_use, l_run, a);
#pragma unroll
      for (int dt = 0; dt < kOT; dt += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, Vs + (c * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLd + dt * 8 + (lane >> 4) * 8);
        mma_bf16(o[dt], a, b[0], b[1]);
        mma_bf16(o[dt + 1], a, b[2], b[3]);
      }
    }
  }

  // Row sums across the quad that shares each row, then the normalised rows.
  softmax_row_sums(l_run);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t t = t0 + warp * 16 + g + 8 * r;
    if (t >= n) continue;
    const float inv = l_run[r] > 0.f ? 1.f / l_run[r] : 0.f;
    float* dst = out + (t * n_heads + h) * HD + 2 * tq;
#pragma unroll
    for (int dt = 0; dt < kOT; ++dt)
      *reinterpret_cast<float2*>(dst + dt * 8) = make_float2(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
  }
#endif
}

template <int HD, typename C>
bool launch_prefill(const float* q, const C* kc, const C* vc, const KvCache& kv, int layer, int64_t n,
                    const int32_t* positions, const int32_t* seqs, const AttentionConfig& cfg, float* out,
                    cudaStream_t s) {
  constexpr size_t bytes = PrefillTile<HD>::bytes;
  static bool configured = false;  // per head size and cache type; set before any capture
  if (!configured) {
    int dev = 0, limit = 0;
    BRISK_CUDA_CHECK(cudaGetDevice(&dev));
    BRISK_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (bytes > size_t(limit)) return false;
    BRISK_CUDA_CHECK(
        cudaFuncSetAttribute(prefill_kernel<HD, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    configured = true;
  }
  dim3 grid(unsigned((n + kBQ - 1) / kBQ), unsigned(cfg.n_heads));
  launch(prefill_kernel<HD, C>, grid, kWarps * 32, bytes, s, q, kc, vc, kv.pages(layer), positions, seqs, n,
         cfg.n_heads, cfg.n_heads / cfg.n_kv_heads, cfg.scale, cfg.window, out);
  return true;
}

template <int HD>
bool launch_prefill(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                    const int32_t* seqs, const AttentionConfig& cfg, float* out, cudaStream_t s) {
  bool launched = false;
  with_kv_elems(kv, [&](auto* kc, auto* vc) {
    launched = launch_prefill<HD>(q, kc, vc, kv, layer, n, positions, seqs, cfg, out, s);
  });
  return launched;
}

}  // namespace

bool attention_prefill(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                       const int32_t* seqs, const AttentionConfig& cfg, float* out, int cc_major, cudaStream_t s) {
  if (cc_major < 8 || n > int64_t(65535) * kBQ) return false;
  bool launched = false;
  with_mma_head_dim(cfg.head_dim, [&](auto hd) {
    launched = launch_prefill<decltype(hd)::value>(q, kv, layer, n, positions, seqs, cfg, out, s);
  });
  return launched;
}

}  // namespace brisk::cuda
