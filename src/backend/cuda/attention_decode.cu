// Split-K flash decoding (GQA). Each block takes one token, one KV head with up to G (4)
// of its query heads, and one slice of the token's visible positions: K and V rows are read
// once for all of those heads. Warps walk positions with an online softmax; the block merges
// its warps and writes (max, sum, unnormalised output) per head and split; a combine kernel
// merges the splits. The number of splits depends only on the batch shape, and each block
// finds its slice from the token's position in device memory, so the launch is the same at
// every step of a captured graph. It also serves prefill where no tensor-core kernel fits.
// This float kernel is the exact mode's; the fast mode on sm_80+ takes the tensor-core one
// (attention_decode_mma.cu), which writes the same partial results.
#include <cfloat>
#include <cstdlib>
#include <string>

#include "backend/cuda/decode_split.cuh"
#include "backend/cuda/head_dim.cuh"
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/kv_elems.cuh"

namespace brisk::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kUnroll = 4;  // positions a warp loads before using any

// D: head dimensions per lane (the head size is at most 32 * D; lanes past it idle).
// G: query heads per block at most (a larger group is split over blocks, each reading the
// rows again, mostly from L2): 4 rather than 8 halves the registers (96, not 149), so more
// blocks are in flight (45 vs 57 us a layer at batch 64, bench/RESULTS.md).
template <int D, int G, typename C>
__global__ void __launch_bounds__(kWarps * 32)
    decode_split_kernel(const float* __restrict__ q, const C* __restrict__ kc, const C* __restrict__ vc,
                        KvPages pages, const int32_t* positions,
                        const int32_t* seqs, int n_heads, int HD, int group, int group_chunks, float scale,
                        int window, int splits, int min_keys, float* partial) {
  pdl_wait();
  pdl_launch_dependents();
  const int s = blockIdx.x, t = blockIdx.z;
  const int kvh = blockIdx.y / group_chunks, gc = blockIdx.y % group_chunks;
  const int h0 = kvh * group + gc * G;
  const int ng = min(G, group - gc * G);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const KeySlice slice = decode_slice(positions[t], window, splits, s, min_keys);
  const int64_t j0 = slice.j0, j1 = slice.j1;
  if (j0 >= j1) {  // an unused split: only its sum, zero, is read
    if (threadIdx.x < ng) {
      float* out = partial + ((int64_t(t) * n_heads + h0 + threadIdx.x) * splits + s) * (HD + 2);
      out[0] = -FLT_MAX, out[1] = 0.f;
    }
    return;
  }
  const int64_t seq = seqs ? seqs[t] : 0;

  float qv[G][D], acc[G][D], m[G], l[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -FLT_MAX, l[g] = 0.f;
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const int dim = lane * D + d;
      qv[g][d] = g < ng && dim < HD ? q[(int64_t(t) * n_heads + h0 + g) * HD + dim] * scale : 0.f;
      acc[g][d] = 0.f;
    }
  }
  // Each warp takes kUnroll consecutive positions at a time: their K and V rows are all in
  // flight before any is used, and one rescale of the running sums covers the group.
  for (int64_t jb = j0 + int64_t(warp) * kUnroll; jb < j1; jb += kWarps * kUnroll) {
    float kv[kUnroll][D], vv[kUnroll][D];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const bool valid = jb + u < j1;
      const int64_t row = valid ? pages.row(seq, kvh, jb + u) : 0;
      const C* kr = kc + row + lane * D;
      const C* vr = vc + row + lane * D;
#pragma unroll
      for (int d = 0; d < D; ++d) {
        const bool in = valid && lane * D + d < HD;
        kv[u][d] = in ? load_kv(kr + d) : 0.f, vv[u][d] = in ? load_kv(vr + d) : 0.f;
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (g >= ng) break;
      float sc[kUnroll];
      float mn = m[g];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        float dot = 0.f;
#pragma unroll
        for (int d = 0; d < D; ++d) dot += qv[g][d] * kv[u][d];
        sc[u] = jb + u < j1 ? warp_sum(dot) : -FLT_MAX;
        mn = fmaxf(mn, sc[u]);
      }
      const float corr = __expf(m[g] - mn);
      l[g] *= corr;
#pragma unroll
      for (int d = 0; d < D; ++d) acc[g][d] *= corr;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const float pj = jb + u < j1 ? __expf(sc[u] - mn) : 0.f;
        l[g] += pj;
#pragma unroll
        for (int d = 0; d < D; ++d) acc[g][d] += pj * vv[u][d];
      }
      m[g] = mn;
    }
  }
  // Merge the warps through shared memory.
  __shared__ float sm_m[kWarps][G], sm_l[kWarps][G];
  __shared__ float sm_o[kWarps][G][32 * D];
  if (lane == 0)
    for (int g = 0; g < G; ++g) sm_m[warp][g] = m[g], sm_l[warp][g] = l[g];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int d = 0; d < D; ++d) sm_o[warp][g][lane * D + d] = acc[g][d];
  __syncthreads();
  for (int i = threadIdx.x; i < ng * HD; i += kWarps * 32) {
    const int g = i / HD, d = i % HD;
    float M = -FLT_MAX;
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sm_m[w][g]);
    float L = 0.f, O = 0.f;
    for (int w = 0; w < kWarps; ++w) {
      const float c = sm_l[w][g] > 0.f ? __expf(sm_m[w][g] - M) : 0.f;
      L += sm_l[w][g] * c;
      O += sm_o[w][g][d] * c;
    }
    float* out = partial + ((int64_t(t) * n_heads + h0 + g) * splits + s) * (HD + 2);
    out[2 + d] = O;
    if (d == 0) out[0] = M, out[1] = L;
  }
}

constexpr int kMaxSplits = 64;  // attention_decode_splits' cap

// Merges a (token, head)'s splits: one warp finds the largest split maximum and each split's
// weight exp(m_s - M), then every thread sums its output dimensions over the splits with
// all loads independent (the merge of 64 splits is a few microseconds, not a serial chain).
__global__ void decode_combine_kernel(const float* partial, int splits, int hd, float* out, __nv_bfloat16* out16) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t th = blockIdx.x;  // token * n_heads + head
  const float* p = partial + th * splits * (hd + 2);
  __shared__ float weight[kMaxSplits];
  __shared__ float inv_sum;
  __shared__ int used_splits;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    // The splits before the first empty one (decode_split.cuh).
    float first_empty = float(splits);
    for (int s = lane; s < splits; s += 32)
      if (!(p[s * (hd + 2) + 1] > 0.f)) first_empty = fminf(first_empty, float(s));
    const int used = int(-warp_max(-first_empty));
    float M = -FLT_MAX;
    for (int s = lane; s < used; s += 32) M = fmaxf(M, p[s * (hd + 2)]);
    M = warp_max(M);
    float L = 0.f;
    for (int s = lane; s < used; s += 32) {
      const float* ps = p + s * (hd + 2);
      const float c = ps[1] > 0.f ? __expf(ps[0] - M) : 0.f;
      weight[s] = c;
      L += ps[1] * c;
    }
    L = warp_sum(L);
    if (lane == 0) inv_sum = 1.f / L, used_splits = used;
  }
  __syncthreads();
  const int used = used_splits;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float O = 0.f;
#pragma unroll 8
    for (int s = 0; s < used; ++s) O += p[s * (hd + 2) + 2 + d] * weight[s];
    out[th * hd + d] = O * inv_sum;
    if (out16) out16[th * hd + d] = __float2bfloat16_rn(O * inv_sum);
  }
}

template <int D, int G>
void launch_decode_group(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                         const int32_t* seqs, const AttentionConfig& cfg, int splits, float* partial, cudaStream_t s) {
  const int group = cfg.n_heads / cfg.n_kv_heads;
  const int chunks = (group + G - 1) / G;
  dim3 grid(unsigned(splits), unsigned(cfg.n_kv_heads * chunks), unsigned(n));
  with_kv_elems(kv, [&](auto* kc, auto* vc) {
    launch(decode_split_kernel<D, G, std::remove_pointer_t<decltype(kc)>>, grid, kWarps * 32, 0, s, q, kc, vc,
           kv.pages(layer), positions, seqs, cfg.n_heads, cfg.head_dim, group, chunks, cfg.scale, cfg.window, splits,
           decode_min_keys(n, cfg.n_kv_heads), partial);
  });
}

template <int D>
void launch_decode(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                   const int32_t* seqs, const AttentionConfig& cfg, int splits, float* partial, cudaStream_t s) {
  launch_decode_group<D, 4>(q, kv, layer, n, positions, seqs, cfg, splits, partial, s);
}

}  // namespace

// CudaOptions::float_decode_attention keeps the fast mode on the float kernel (to compare the two).
bool& float_decode_forced() {
  static bool forced = false;
  return forced;
}

// Keys per split at least (decode_split.cuh): a block's 4 warps get a 16-key tile each at
// least; from 256 (token, KV head) pairs, when the GPU is full of blocks anyway, two each.
// Measured on the H200, Qwen2.5-7B shapes, bf16, 128-token prompts (bench/RESULTS.md): batch
// 8 went from 4.97 to 4.75 ms a step with 64 (against every split taking a share), batch 64
// from 5.25 to 5.10 with 128; 256 was slower at both, and at batch 1 after 2048 tokens.
int decode_min_keys(int64_t n, int n_kv_heads) { return n * n_kv_heads >= 256 ? 128 : 64; }

// Enough blocks to fill the GPU several times over (~1024), so even a batch of short
// contexts keeps many rows in flight; a split of a short context may be empty.
int attention_decode_splits(int64_t n, int n_kv_heads) {
  int64_t s = 1024 / std::max<int64_t>(1, n * n_kv_heads);
  return int(std::min<int64_t>(kMaxSplits, std::max<int64_t>(1, s)));
}

int64_t attention_decode_scratch_floats(int64_t n, const AttentionConfig& cfg) {
  return n * cfg.n_heads * attention_decode_splits(n, cfg.n_kv_heads) * (cfg.head_dim + 2);
}

void attention_decode(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                      const int32_t* seqs, const AttentionConfig& cfg, bool tensor_cores, float* partial, float* out,
                      cudaStream_t s, __nv_bfloat16* out16) {
  if (n > 65535) throw Error(ErrorCode::kInternal, "attention over more than 65535 queries in one launch");
  const int splits = attention_decode_splits(n, cfg.n_kv_heads);
  const int hd = cfg.head_dim;
  if (tensor_cores && !float_decode_forced() &&
      attention_decode_mma(q, kv, layer, n, positions, seqs, cfg, splits, partial, s)) {
    // the tensor-core kernel wrote the same partial results
  } else if (!with_head_dim_bound(hd, [&](auto bound) {
               launch_decode<decltype(bound)::value / 32>(q, kv, layer, n, positions, seqs, cfg, splits, partial, s);
             })) {
    throw Error(ErrorCode::kUnsupported, "the CUDA backend supports head dimensions up to 256, not " + std::to_string(hd));
  }
  BRISK_LAUNCH_CHECK();
  launch(decode_combine_kernel, unsigned(n * cfg.n_heads), 128, 0, s, partial, splits, cfg.head_dim, out, out16);
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
