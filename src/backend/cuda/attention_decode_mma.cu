// Split-K decode attention on the tensor cores (sm_80+), for the fast mode: a block takes
// one token, one KV head and one slice of the token's visible positions, and all the query
// heads of that KV head (up to 16) as the 16 rows of one m16n8k16 tile, so each K and V row
// is read once for the whole group. Each of the 4 warps walks its own 16-key tiles (cache
// rows as bf16 in its part of shared memory), S = Q K^T and O += P V run as
// in the prefill kernel (online softmax in base 2, S held in registers as P), and the warps
// merge through shared memory into the same (max, sum, unnormalised output) per head and
// split that the float kernel writes, for the same combine kernel. Scores, probabilities and
// the cache pass through bf16: the prefill kernel's tolerance, not the float kernel's.
#include <cfloat>

#include "backend/cuda/decode_split.cuh"
#include "backend/cuda/head_dim.cuh"
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/kv_elems.cuh"
#include "backend/cuda/mma.cuh"
#include "backend/cuda/online_softmax.cuh"

namespace brisk::cuda {
namespace {

constexpr int kWarps = 4, kRows = 16, kBK = 16;

template <int HD>
struct DecodeTile {
  static constexpr int kLd = HD + 8;  // bf16 per shared row: 16-byte pad, no ldmatrix conflicts
  static constexpr size_t q = 0;
  static constexpr size_t kv = q + size_t(kRows) * kLd * 2;
  static constexpr size_t warp_kv = size_t(2) * kBK * kLd * 2;  // a warp's K then V tile
  // After the walk the K/V space holds each warp's O rows, then its (m, l) per row.
  static constexpr size_t merge = size_t(kWarps) * kRows * HD * 4 + size_t(kWarps) * kRows * 2 * 4;
  static constexpr size_t bytes = kv + (kWarps * warp_kv > merge ? kWarps * warp_kv : merge);
};

template <int HD, typename C>
__global__ void __launch_bounds__(kWarps * 32)
    decode_mma_kernel(const float* __restrict__ q, const C* __restrict__ kc, const C* __restrict__ vc,
                      KvPages pages, const int32_t* positions, const int32_t* seqs, int n_heads, int group,
                      float scale, int window, int splits, int min_keys, float* partial) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using T = DecodeTile<HD>;
  constexpr int kLd = T::kLd, kOT = HD / 8;
  pdl_wait();
  pdl_launch_dependents();
  extern __shared__ __align__(128) unsigned char smem[];
  auto* Qs = reinterpret_cast<__nv_bfloat16*>(smem + T::q);
  const int s = blockIdx.x, kvh = blockIdx.y, t = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const int h0 = kvh * group;
  const KeySlice slice = decode_slice(positions[t], window, splits, s, min_keys);
  const int64_t j0 = slice.j0, j1 = slice.j1;
  if (j0 >= j1) {  // an unused split: only its sum, zero, is read
    if (threadIdx.x < group) {
      float* out = partial + ((int64_t(t) * n_heads + h0 + threadIdx.x) * splits + s) * (HD + 2);
      out[0] = -FLT_MAX, out[1] = 0.f;
    }
    return;
  }
  const int64_t seq = seqs ? seqs[t] : 0;

  // The group's query rows, scaled into base 2; rows past the group are zero.
  const float qscale = scale * 1.4426950408889634f;
  for (int i = threadIdx.x; i < kRows * HD / 4; i += kWarps * 32) {
    const int r = i / (HD / 4), c = (i % (HD / 4)) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < group) x = __ldg(reinterpret_cast<const float4*>(q + (int64_t(t) * n_heads + h0 + r) * HD + c));
    *reinterpret_cast<uint2*>(Qs + r * kLd + c) =
        make_uint2(pack_bf16(x.x * qscale, x.y * qscale), pack_bf16(x.z * qscale, x.w * qscale));
  }
  __syncthreads();

  auto* Ks = reinterpret_cast<__nv_bfloat16*>(smem + T::kv + warp * T::warp_kv);
  auto* Vs = Ks + kBK * kLd;
  float o[kOT][4];
#pragma unroll
  for (int i = 0; i < kOT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

  for (int64_t kt = j0 + int64_t(warp) * kBK; kt < j1; kt += kWarps * kBK) {
    const int valid = int(min(int64_t(kBK), j1 - kt));
    // This warp's tile: lane r looks up row r in the block table once; the rows' offsets
    // then go round by shuffle, so the loads depend on nothing but that.
    const int64_t my_row = lane < valid ? pages.row(seq, kvh, kt + lane) : 0;
    constexpr int kVec = kKvVec<C>;
#pragma unroll 4
    for (int i = lane; i < kBK * HD / kVec; i += 32) {
      const int r = i / (HD / kVec), c = (i % (HD / kVec)) * kVec;
      const int64_t row = __shfl_sync(0xffffffffu, my_row, r) + c;
      kv_to_smem(Ks + r * kLd + c, kc + row, r < valid);
      kv_to_smem(Vs + r * kLd + c, vc + row, r < valid);
    }
    __syncwarp();

    // S = Q K^T: 16 rows by 16 keys.
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      uint32_t a[4], b[4];
      ldmatrix_x4(a, Qs + (lane & 15) * kLd + kk * 16 + (lane >> 4) * 8);
      ldmatrix_x4(b, Ks + ((lane & 7) + (lane >> 4) * 8) * kLd + kk * 16 + ((lane >> 3) & 1) * 8);
      mma_bf16(sc[0], a, b[0], b[1]);
      mma_bf16(sc[1], a, b[2], b[3]);
    }
    // Keys past the slice are masked; every key in it is visible to the token.
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (nt * 8 + 2 * tq + (e & 1) >= valid) sc[nt][e] = -INFINITY;
    float m_use[2];
    online_softmax_rescale(sc, m_run, l_run, o, m_use);

    // O += P V with P straight from the S accumulators.
    uint32_t a[4];
    softmax_probs_operand(sc[0], sc[1], m_use, l_run, a);
#pragma unroll
    for (int dt = 0; dt < kOT; dt += 2) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, Vs + ((lane & 7) + ((lane >> 3) & 1) * 8) * kLd + dt * 8 + (lane >> 4) * 8);
      mma_bf16(o[dt], a, b[0], b[1]);
      mma_bf16(o[dt + 1], a, b[2], b[3]);
    }
    __syncwarp();  // the tile is read before the next one is written
  }
  softmax_row_sums(l_run);

  // Merge the warps: each leaves its rows' O, m and l in shared memory.
  __syncthreads();
  auto* mo = reinterpret_cast<float*>(smem + T::kv);  // [warp][row][HD]
  float* ml = mo + kWarps * kRows * HD;                // [warp][row] (m, l)
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    float* dst = mo + (warp * kRows + row) * HD + 2 * tq;
#pragma unroll
    for (int dt = 0; dt < kOT; ++dt) *reinterpret_cast<float2*>(dst + dt * 8) = make_float2(o[dt][2 * r], o[dt][2 * r + 1]);
    if (tq == 0) ml[(warp * kRows + row) * 2] = m_run[r], ml[(warp * kRows + row) * 2 + 1] = l_run[r];
  }
  __syncthreads();
  constexpr float kLn2 = 0.6931471805599453f;
  for (int i = threadIdx.x; i < group * HD; i += kWarps * 32) {
    const int r = i / HD, d = i % HD;
    float M = -INFINITY;
    for (int w = 0; w < kWarps; ++w)
      if (ml[(w * kRows + r) * 2 + 1] > 0.f) M = fmaxf(M, ml[(w * kRows + r) * 2]);
    float L = 0.f, O = 0.f;
    for (int w = 0; w < kWarps; ++w) {
      const float lw = ml[(w * kRows + r) * 2 + 1];
      if (lw <= 0.f) continue;
      const float c = exp2f(ml[(w * kRows + r) * 2] - M);
      L += lw * c;
      O += mo[(w * kRows + r) * HD + d] * c;
    }
    // The combine kernel weighs splits by exp(m - M): m in natural-log units.
    float* out = partial + ((int64_t(t) * n_heads + h0 + r) * splits + s) * (HD + 2);
    out[2 + d] = O;
    if (d == 0) out[0] = L > 0.f ? M * kLn2 : -FLT_MAX, out[1] = L;
  }
#endif
}

template <int HD>
void launch_mma(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions, const int32_t* seqs,
                const AttentionConfig& cfg, int splits, float* partial, cudaStream_t s) {
  constexpr size_t bytes = DecodeTile<HD>::bytes;
  dim3 grid(unsigned(splits), unsigned(cfg.n_kv_heads), unsigned(n));
  with_kv_elems(kv, [&](auto* kc, auto* vc) {
    using C = std::remove_pointer_t<decltype(kc)>;
    static bool configured = false;  // per head size and cache type; the first step runs before any capture
    if (!configured) {
      BRISK_CUDA_CHECK(cudaFuncSetAttribute(decode_mma_kernel<HD, C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            int(bytes)));
      configured = true;
    }
    launch(decode_mma_kernel<HD, C>, grid, kWarps * 32, bytes, s, q, kc, vc, kv.pages(layer), positions, seqs,
           cfg.n_heads, cfg.n_heads / cfg.n_kv_heads, cfg.scale, cfg.window, splits,
           decode_min_keys(n, cfg.n_kv_heads), partial);
  });
}

}  // namespace

bool attention_decode_mma(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                          const int32_t* seqs, const AttentionConfig& cfg, int splits, float* partial, cudaStream_t s) {
  if (cfg.n_heads / cfg.n_kv_heads > kRows) return false;
  const bool launched = with_mma_head_dim(cfg.head_dim, [&](auto hd) {
    launch_mma<decltype(hd)::value>(q, kv, layer, n, positions, seqs, cfg, splits, partial, s);
  });
  if (!launched) return false;
  BRISK_LAUNCH_CHECK();
  return true;
}

}  // namespace brisk::cuda
