// Quantized matrix products on the integer tensor cores (sm_80+), for batches too large for
// the GEMV and too small to pay for dequantizing a whole matrix to bf16 (decode batches of
// 9..64 tokens): y = W x with x quantized to int8 blocks of 32 (Q8Activations), as
// llama.cpp's mmq does. The weights stay in their GPU layout: planar int8 (Q8_0 repacked,
// I8) or Q4_K's own blocks, whose nibbles become the int8 operand as the fragments are read
// (a mask, or a shift and a mask), so no pass dequantizes them. A block takes 64 weight rows
// and up to 64 tokens; tiles of 128 columns of both pass through shared memory by
// cp.async, four deep. Eight warps: four row groups of 16 by two halves of each tile's
// columns (summed through shared memory at the end), so a block has work enough to hide
// the products' latency. Each 32-column group is one m16n8k32 product per 8 tokens, whose
// int32 result is scaled by the weight's and the token's block scales into float
// accumulators (less the weight's minimum times the token's block sum, for Q4_K). The
// weights are read once per 64 tokens. Where rows alone give too few blocks to fill the
// GPU, the columns are split and the parts summed in a fixed order by a second pass (no
// atomics: the result does not depend on timing).
#include <algorithm>

#include "backend/cuda/kernels.cuh"
#include "backend/cuda/mma.cuh"

namespace brisk::cuda {
namespace {

constexpr int kRowWarps = 4, kColWarps = 2, kWarps = kRowWarps * kColWarps;
constexpr int kBM = 16 * kRowWarps, kBK = 128, kGroups = kBK / 32, kStages = 4;
constexpr int kLdX = kBK + 16;  // bytes per shared token row: a warp's fragment loads hit 32 banks

struct MmqArgs {
  const uint8_t* w;
  uint64_t row_bytes;
  int64_t rows, cols;
  RowAux aux;
  Q8Activations x;
  int64_t n;
  float* y;  // [n][rows], or the partial sums [split][n][rows] when split
  const float* bias;
  bool accumulate;
  int64_t tiles_per_split;
};

__device__ __forceinline__ uint32_t lds32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// Planar int8 rows with a float scale per group (Q8_0's 32 values, I8's whole row).
struct TileI8 {
  static constexpr int kLd = kBK + 16;  // bytes per shared row (conflict-free fragment loads)
  static constexpr int kAux = kGroups * 4;
  static constexpr bool kMins = false;
  __device__ static void load(const MmqArgs& a, uint8_t* w, uint8_t* aux, int64_t r0, int64_t kt) {
    const int64_t k0 = kt * kBK;
    for (int i = threadIdx.x; i < kBM * (kBK / 16); i += kWarps * 32) {
      const int r = i / (kBK / 16), c = i % (kBK / 16);
      const bool ok = k0 + c * 16 < a.cols;
      const uint8_t* row = a.w + uint64_t(min(r0 + r, a.rows - 1)) * a.row_bytes;
      cp_async16(w + r * kLd + c * 16, row + (ok ? k0 + c * 16 : 0), ok);
    }
    for (int i = threadIdx.x; i < kBM * kGroups; i += kWarps * 32) {
      const int r = i / kGroups, g = i % kGroups;
      const int64_t k = k0 + g * 32;
      const bool ok = k < a.cols;
      const float* s = a.aux.scales + min(r0 + r, a.rows - 1) * a.aux.groups + (ok ? k / a.aux.group_elems : 0);
      cp_async4(aux + i * 4, s, ok);
    }
  }
  // The A fragments of groups kk and kk + 1 for rows `row` and row + 8 (lane's t).
  __device__ static void fragments(const uint8_t* w, int row, int kk, int t, uint32_t (&a)[2][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* p = w + row * kLd + (kk + h) * 32 + t * 4;
      a[h][0] = lds32(p), a[h][1] = lds32(p + 8 * kLd), a[h][2] = lds32(p + 16), a[h][3] = lds32(p + 8 * kLd + 16);
    }
  }
  // Scale and minimum of group kk of a row (of column tile kt).
  __device__ static float2 scale(const uint8_t*, const uint8_t* aux, int row, int kk, int64_t) {
    return make_float2(reinterpret_cast<const float*>(aux)[row * kGroups + kk], 0.f);
  }
};

// Q4_K: a column tile is half a 256-value block. A row's part in shared memory is the
// block's 16-byte header (d, dmin, the packed 6-bit scales and minimums) and the half's 64
// bytes of nibbles: group 2j's values are the low nibbles of bytes 32j.., group 2j+1's the
// high ones of the same bytes, so one load gives both groups' fragments.
struct TileQ4K {
  static constexpr int kLd = 80;  // 16 + 64, and 20 words apart: conflict-free
  static constexpr int kAux = 0;
  static constexpr bool kMins = true;
  __device__ static void load(const MmqArgs& a, uint8_t* w, uint8_t*, int64_t r0, int64_t kt) {
    const int64_t block = kt >> 1, half = kt & 1;
    for (int i = threadIdx.x; i < kBM * 5; i += kWarps * 32) {
      const int r = i / 5, c = i % 5;
      const uint8_t* b = a.w + uint64_t(min(r0 + r, a.rows - 1)) * a.row_bytes + block * 144;
      cp_async16(w + r * kLd + c * 16, c == 0 ? b : b + 16 + half * 64 + (c - 1) * 16, true);
    }
  }
  __device__ static void fragments(const uint8_t* w, int row, int kk, int t, uint32_t (&a)[2][4]) {
    const uint8_t* p = w + row * kLd + 16 + (kk >> 1) * 32 + t * 4;
    const uint32_t v[4] = {lds32(p), lds32(p + 8 * kLd), lds32(p + 16), lds32(p + 8 * kLd + 16)};
#pragma unroll
    for (int i = 0; i < 4; ++i) a[0][i] = v[i] & 0x0F0F0F0Fu, a[1][i] = (v[i] >> 4) & 0x0F0F0F0Fu;
  }
  __device__ static float2 scale(const uint8_t* w, const uint8_t*, int row, int kk, int64_t kt) {
    const uint4 hdr = *reinterpret_cast<const uint4*>(w + row * kLd);
    int sc, m;
    scale_min_k4(int(kt & 1) * 4 + kk, hdr, sc, m);
    return make_float2(f16_bits_to_float(uint16_t(hdr.x & 0xffffu)) * float(sc),
                       f16_bits_to_float(uint16_t(hdr.x >> 16)) * float(m));
  }
};

// Shared memory of one stage: weight rows and their aux, token rows, token scales and sums.
template <class T, int BN>
struct MmqTile {
  static constexpr size_t w = 0;
  static constexpr size_t waux = w + size_t(kBM) * T::kLd;
  static constexpr size_t x = waux + size_t(kBM) * T::kAux;
  static constexpr size_t xs = x + size_t(BN) * kLdX;            // float [BN][kGroups]
  static constexpr size_t xsum = xs + size_t(BN) * kGroups * 4;  // float [BN][kGroups][2] (sums per 16)
  static constexpr size_t stage = xsum + (T::kMins ? size_t(BN) * kGroups * 8 : 0);
  static constexpr size_t bytes = stage * kStages;
};

// Queues the copies of column tile kt (rows r0.., tokens t0..) into one stage.
template <class T, int BN>
__device__ __forceinline__ void load_tile(const MmqArgs& a, uint8_t* st, int64_t r0, int64_t t0, int64_t kt) {
  using S = MmqTile<T, BN>;
  T::load(a, st + S::w, st + S::waux, r0, kt);
  const int64_t k0 = kt * kBK;
  for (int i = threadIdx.x; i < BN * (kBK / 16); i += kWarps * 32) {
    const int r = i / (kBK / 16), c = i % (kBK / 16);
    const bool ok = k0 + c * 16 < a.cols;
    cp_async16(st + S::x + r * kLdX + c * 16, a.x.q + min(t0 + r, a.n - 1) * a.cols + (ok ? k0 + c * 16 : 0), ok);
  }
  for (int i = threadIdx.x; i < BN * kGroups; i += kWarps * 32) {
    const int r = i / kGroups, g = i % kGroups;
    const int64_t tok = min(t0 + r, a.n - 1), b = (k0 + g * 32) / 32;
    const bool ok = b * 32 < a.cols;
    cp_async4(st + S::xs + i * 4, a.x.d + tok * (a.cols / 32) + (ok ? b : 0), ok);
    if constexpr (T::kMins) cp_async8(st + S::xsum + i * 8, a.x.sum + tok * (a.cols / 16) + (ok ? 2 * b : 0), ok);
  }
}

// One stage's products for the warp's 16 rows (row warp rw) and its half of the column
// groups (column warp cw), against BN / 8 token tiles.
template <class T, int BN>
__device__ __forceinline__ void mma_tile(const uint8_t* st, int64_t kt, int rw, int cw, int lane,
                                         float (&acc)[BN / 8][4]) {
  using S = MmqTile<T, BN>;
  const int g = lane >> 2, t = lane & 3, row = rw * 16 + g;
  const uint8_t* X = st + S::x + g * kLdX + t * 4;
  const auto* xs = reinterpret_cast<const float*>(st + S::xs) + 2 * t * kGroups;
  const auto* xsum = reinterpret_cast<const float2*>(st + S::xsum) + 2 * t * kGroups;
  const int kk0 = cw * (kGroups / kColWarps);
  uint32_t af[2][4];
  T::fragments(st + S::w, row, kk0, t, af);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int kk = kk0 + h;
    const float2 s0 = T::scale(st + S::w, st + S::waux, row, kk, kt);
    const float2 s1 = T::scale(st + S::w, st + S::waux, row + 8, kk, kt);
#pragma unroll
    for (int nt = 0; nt < BN / 8; ++nt) {
      int c[4] = {0, 0, 0, 0};
      mma_s8(c, af[h], lds32(X + nt * 8 * kLdX + kk * 32), lds32(X + nt * 8 * kLdX + kk * 32 + 16));
      const float x0 = xs[nt * 8 * kGroups + kk], x1 = xs[(nt * 8 + 1) * kGroups + kk];
      acc[nt][0] += float(c[0]) * (s0.x * x0);
      acc[nt][1] += float(c[1]) * (s0.x * x1);
      acc[nt][2] += float(c[2]) * (s1.x * x0);
      acc[nt][3] += float(c[3]) * (s1.x * x1);
      if constexpr (T::kMins) {
        const float2 a0 = xsum[nt * 8 * kGroups + kk], a1 = xsum[(nt * 8 + 1) * kGroups + kk];
        const float m0 = a0.x + a0.y, m1 = a1.x + a1.y;
        acc[nt][0] -= s0.y * m0, acc[nt][1] -= s0.y * m1, acc[nt][2] -= s1.y * m0, acc[nt][3] -= s1.y * m1;
      }
    }
  }
}
static_assert(kGroups / kColWarps == 2, "a column warp takes two groups of each tile");

// The second column half's sums join the first's through shared memory (stage buffers).
template <int BN>
__device__ __forceinline__ bool join_column_halves(uint8_t* smem, int rw, int cw, int lane, float (&acc)[BN / 8][4]) {
  cp_async_wait<0>();
  __syncthreads();
  auto* red = reinterpret_cast<float*>(smem) + (rw * 32 + lane) * (BN / 2);
  if (cw == 1) {
#pragma unroll
    for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[nt * 4 + e] = acc[nt][e];
  }
  __syncthreads();
  if (cw == 1) return false;
#pragma unroll
  for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] += red[nt * 4 + e];
  return true;
}

// Grid: (row tiles, token tiles, column splits).
template <class T, int BN>
__global__ void __launch_bounds__(kWarps * 32) mmq_kernel(const MmqArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using S = MmqTile<T, BN>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, rw = warp % kRowWarps, cw = warp / kRowWarps;
  const int64_t r0 = int64_t(blockIdx.x) * kBM, t0 = int64_t(blockIdx.y) * BN;
  const int64_t tiles = (a.cols + kBK - 1) / kBK;
  const int64_t kt0 = int64_t(blockIdx.z) * a.tiles_per_split;
  const int64_t kt_end = min(tiles, kt0 + a.tiles_per_split);
  const int nk = kt_end > kt0 ? int(kt_end - kt0) : 0;
  float acc[BN / 8][4] = {};
  pdl_wait();  // x comes from the previous kernel
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nk) load_tile<T, BN>(a, smem + s * S::stage, r0, t0, kt0 + s);
    cp_async_commit();
  }
  for (int i = 0; i < nk; ++i) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile i is in, and every warp is done with the stage refilled next
    const int next = i + kStages - 1;
    if (next < nk) load_tile<T, BN>(a, smem + (next % kStages) * S::stage, r0, t0, kt0 + next);
    cp_async_commit();
    mma_tile<T, BN>(smem + (i % kStages) * S::stage, kt0 + i, rw, cw, lane, acc);
  }
  pdl_launch_dependents();
  if (!join_column_halves<BN>(smem, rw, cw, lane, acc)) return;
  const bool split = gridDim.z > 1;
  float* y = a.y + (split ? int64_t(blockIdx.z) * a.n * a.rows : 0);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t row = r0 + rw * 16 + g + 8 * (e >> 1), tok = t0 + nt * 8 + 2 * t + (e & 1);
      if (row >= a.rows || tok >= a.n) continue;
      float v = acc[nt][e];
      float* o = y + tok * a.rows + row;
      if (!split) {
        if (a.bias) v += a.bias[row];
        if (a.accumulate) v += *o;
      }
      *o = v;
    }
#endif
}

// y = the column parts' sum, in split order (+ bias, + y).
__global__ void mmq_reduce_kernel(const float* __restrict__ partial, int splits, int64_t n, int64_t rows, float* y,
                                  const float* bias, bool accumulate) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * rows) return;
  float v = 0.f;
  for (int s = 0; s < splits; ++s) v += partial[s * n * rows + i];
  if (bias) v += bias[i % rows];
  y[i] = accumulate ? y[i] + v : v;
}

int sm_count() {
  static const int count = [] {
    int dev = 0, n = 0;
    BRISK_CUDA_CHECK(cudaGetDevice(&dev));
    BRISK_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  return count;
}

template <class T, int BN>
void launch_mmq(const MmqArgs& a, int splits, cudaStream_t s) {
  constexpr size_t bytes = MmqTile<T, BN>::bytes;
  static_assert(size_t(kRowWarps) * 32 * (BN / 2) * 4 <= bytes, "the column halves' join fits the stages");
  static bool configured = false;  // before any capture: the first step runs directly
  if (!configured) {
    BRISK_CUDA_CHECK(cudaFuncSetAttribute(mmq_kernel<T, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    configured = true;
  }
  dim3 grid(unsigned((a.rows + kBM - 1) / kBM), unsigned((a.n + BN - 1) / BN), unsigned(splits));
  launch(mmq_kernel<T, BN>, grid, kWarps * 32, bytes, s, a);
}

template <class T>
void launch_mmq_for_tokens(const MmqArgs& a, int splits, cudaStream_t s) {
  if (a.n <= 16) launch_mmq<T, 16>(a, splits, s);
  else if (a.n <= 32) launch_mmq<T, 32>(a, splits, s);
  else launch_mmq<T, 64>(a, splits, s);
}

}  // namespace

bool has_mmq(GpuLayout layout, int cc_major) {
  return (layout == GpuLayout::I8 || layout == GpuLayout::Q4_K) && cc_major >= 8;
}

// Splits of the columns so that the blocks fill the GPU about twice, each part keeping at
// least 8 column tiles (so the pipeline has something to overlap).
int mmq_splits(int64_t rows, int64_t n, int64_t cols) {
  const int64_t blocks = ((rows + kBM - 1) / kBM) * ((n + 63) / 64);
  const int64_t tiles = (cols + kBK - 1) / kBK;
  const int64_t want = (2 * int64_t(sm_count()) + blocks - 1) / blocks;
  return int(std::clamp<int64_t>(std::min(want, tiles / 8), 1, 8));
}

void mmq(const GpuMatrix& w, const Q8Activations& x, int64_t n, float* y, const float* bias, bool accumulate,
         int splits, float* partial, cudaStream_t s) {
  const bool q4k = w.layout == GpuLayout::Q4_K;
  if ((w.layout != GpuLayout::I8 && !q4k) || w.cols % (q4k ? 256 : 32) != 0)
    throw Error(ErrorCode::kInternal, "the integer tensor-core product takes planar int8 or Q4_K weights");
  MmqArgs a{w.data, w.row_bytes, w.rows, w.cols, w.aux, x, n, splits > 1 ? partial : y, bias, accumulate, 0};
  const int64_t tiles = (w.cols + kBK - 1) / kBK;
  a.tiles_per_split = (tiles + splits - 1) / splits;
  if (q4k) launch_mmq_for_tokens<TileQ4K>(a, splits, s);
  else launch_mmq_for_tokens<TileI8>(a, splits, s);
  BRISK_LAUNCH_CHECK();
  if (splits > 1) {
    launch(mmq_reduce_kernel, blocks_for(n * w.rows, 256), 256, 0, s, partial, splits, n, w.rows, y, bias, accumulate);
    BRISK_LAUNCH_CHECK();
  }
}

}  // namespace brisk::cuda
