// Decode-time matrix-vector products: one warp per weight row streams the row once in
// 16-byte units (formats.cuh) and dots it with up to kGemvMaxTokens activation vectors, so
// a batch of decode tokens reads the weights once. The bar is HBM bandwidth: loads are
// coalesced across the warp, several units are in flight per lane, and bias/residual are
// applied in the epilogue instead of in separate passes. Two ways to take a dot product:
// decode each weight to float against float activations (exact; every format), or, for the
// 8-bit and K-quant formats, integer dp4a against activations quantized to int8 blocks
// (formats_q8.cuh), which keeps those formats bandwidth-bound rather than ALU-bound.
// Each warp issues its first weight loads before waiting on the previous kernel (launch.cuh).
#include <algorithm>

#include "backend/cuda/formats_q8.cuh"
#include "backend/cuda/kernels.cuh"

namespace brisk::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

// Up to three matrices of one format and width in one launch (the q/k/v projections), or
// two read as a pair whose rows combine as act(gate) * up (the MLP's gate and up).
struct GemvArgs {
  const uint8_t* w[3];
  int64_t rows[3];
  RowAux aux[3];
  float* y[3];
  const float* bias[3];
  uint64_t row_bytes;
  int64_t cols;
  const float* x;
  Q8Activations xq;
  int n;
  int count;
  bool accumulate;
  bool gated;
  bool gelu;
};

// A warp owns R consecutive rows (of each of M matrices read together: M = 2 when gated)
// and NT tokens. Each lane walks units lane, lane + 32, ... issuing U units' loads before
// decoding any, so enough bytes are in flight to cover HBM latency.
template <class Fmt, int NT, int R, int M, bool Q8>
__device__ __forceinline__ void gemv_rows(const GemvArgs& a, int64_t warp, bool& waited);

// Once per thread, after its first weight loads are in flight: wait for the previous
// kernel's outputs (x, y), then let the next kernel be scheduled.
__device__ __forceinline__ void gemv_wait_once(bool& waited) {
  if (waited) return;
  pdl_wait();
  pdl_launch_dependents();
  waited = true;
}

// The grid is sized to the resident warps (a persistent grid), and each warp takes row
// groups total_warps apart, so there is no tail wave of partly idle blocks.
template <class Fmt, int NT, int R, int M, bool Q8>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) gemv_kernel(const GemvArgs a, int64_t groups) {
  bool waited = false;
  for (int64_t g = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; g < groups;
       g += int64_t(gridDim.x) * kWarpsPerBlock)
    gemv_rows<Fmt, NT, R, M, Q8>(a, g, waited);
  gemv_wait_once(waited);
}

template <class Fmt, int NT, int R, int M, bool Q8>
__device__ __forceinline__ void gemv_rows(const GemvArgs& a, int64_t warp, bool& waited) {
  // Units in flight per lane: one row of small units goes eight deep, so a row of a few KB
  // is fetched in two round trips rather than four.
  constexpr int U = (R * M == 1) ? (sizeof(typename Fmt::Raw) == 16 ? 8 : 4) : (R * M == 2 ? 2 : 1);
  constexpr int E = Fmt::kRuns * Fmt::kRunLen;
  int mat = 0;
  if (M == 1) {  // find this row group's matrix among a.count
    while (mat + 1 < a.count && warp >= (a.rows[mat] + R - 1) / R) warp -= (a.rows[mat] + R - 1) / R, ++mat;
  }
  const int64_t r0 = warp * R;
  if (r0 >= a.rows[mat]) return;
  const int lane = threadIdx.x & 31;
  const int64_t units = Fmt::units(a.cols);
  const uint8_t* rowp[M][R];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r)
      rowp[m][r] = a.w[mat + m] + uint64_t(min(r0 + r, a.rows[mat] - 1)) * a.row_bytes;
  float acc[M][R][NT];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[m][r][t] = 0.f;

  for (int64_t u0 = lane; u0 < units; u0 += 32 * U) {
    typename Fmt::Raw raw[M][R][U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const int64_t u = u0 + 32 * k;
      if (u < units)
#pragma unroll
        for (int m = 0; m < M; ++m)
#pragma unroll
          for (int r = 0; r < R; ++r) raw[m][r][k] = Fmt::load(rowp[m][r], u);
    }
    gemv_wait_once(waited);
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const int64_t u = u0 + 32 * k;
      if (u >= units) break;
      if constexpr (Q8) {
        using D = Q8Dot<Fmt>;
        typename D::Prep p[M][R];
#pragma unroll
        for (int m = 0; m < M; ++m)
#pragma unroll
          for (int r = 0; r < R; ++r) p[m][r] = D::prep(raw[m][r][k], min(r0 + r, a.rows[mat] - 1), u, a.aux[mat + m]);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if (t >= a.n) break;
          const int8_t* xq = a.xq.q + int64_t(t) * a.cols;
          const float* xd = a.xq.d + int64_t(t) * (a.cols / 32);
          const float* xs = a.xq.sum + int64_t(t) * (a.cols / 16);
#pragma unroll
          for (int m = 0; m < M; ++m)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[m][r][t] += D::dot(p[m][r], xq, xd, xs);
        }
        continue;
      } else {
      float w[M][R][E];
      int64_t start[Fmt::kRuns];
#pragma unroll
      for (int m = 0; m < M; ++m)
#pragma unroll
        for (int r = 0; r < R; ++r) Fmt::decode(raw[m][r][k], min(r0 + r, a.rows[mat] - 1), u, a.aux[mat + m], w[m][r], start);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t >= a.n) break;
        const float* xt = a.x + int64_t(t) * a.cols;
#pragma unroll
        for (int q = 0; q < Fmt::kRuns; ++q) {
#pragma unroll
          for (int j = 0; j < Fmt::kRunLen; j += 4) {
            const float4 xv = __ldg(reinterpret_cast<const float4*>(xt + start[q] + j));
#pragma unroll
            for (int m = 0; m < M; ++m)
#pragma unroll
              for (int r = 0; r < R; ++r) {
                const float* wk = w[m][r] + q * Fmt::kRunLen + j;
                acc[m][r][t] += wk[0] * xv.x + wk[1] * xv.y + wk[2] * xv.z + wk[3] * xv.w;
              }
          }
        }
      }
      }
    }
  }
  gemv_wait_once(waited);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = r0 + r;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      float v[M];
#pragma unroll
      for (int m = 0; m < M; ++m) v[m] = warp_sum(acc[m][r][t]);
      if (lane != 0 || t >= a.n || row >= a.rows[mat]) continue;
      float out;
      if (M == 2) {
        out = activate(v[0], a.gelu) * v[1];
      } else {
        out = v[0] + (a.bias[mat] ? a.bias[mat][row] : 0.f);
      }
      float* o = a.y[mat] + int64_t(t) * a.rows[mat] + row;
      *o = a.accumulate ? *o + out : out;
    }
  }
}

// Stores one run of decoded values: 16-byte stores (8 bf16/f16 or 4 floats), so every
// thread writes whole sectors and the pass runs at the bandwidth of its bytes.
template <int N>
__device__ __forceinline__ void store_run(const float* w, void* out, int64_t o, int kind) {
  if (kind == 2) {
#pragma unroll
    for (int j = 0; j < N; j += 4)
      *reinterpret_cast<float4*>(static_cast<float*>(out) + o + j) = make_float4(w[j], w[j + 1], w[j + 2], w[j + 3]);
    return;
  }
  uint32_t h[N / 2];
#pragma unroll
  for (int j = 0; j < N; j += 2) {
    if (kind == 1) {
      const __half2 v = __floats2half2_rn(w[j], w[j + 1]);
      h[j / 2] = *reinterpret_cast<const uint32_t*>(&v);
    } else {
      const __nv_bfloat162 v = __floats2bfloat162_rn(w[j], w[j + 1]);
      h[j / 2] = *reinterpret_cast<const uint32_t*>(&v);
    }
  }
  auto* dst = reinterpret_cast<uint16_t*>(out) + o;
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int j = 0; j < N / 2; j += 4) *reinterpret_cast<uint4*>(dst + 2 * j) = make_uint4(h[j], h[j + 1], h[j + 2], h[j + 3]);
  } else {
#pragma unroll
    for (int j = 0; j < N / 2; j += 2) *reinterpret_cast<uint2*>(dst + 2 * j) = make_uint2(h[j], h[j + 1]);
  }
}

template <class Fmt>
__global__ void dequant_kernel(const uint8_t* __restrict__ W, uint64_t row_bytes, int64_t rows, int64_t cols,
                               RowAux aux, void* out, int kind) {  // 0 bf16, 1 f16, 2 f32
  pdl_wait();  // the previous GEMM may still read this scratch
  pdl_launch_dependents();
  const int64_t units = Fmt::units(cols);
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= units * rows) return;
  const int64_t r = i / units, u = i % units;
  float w[Fmt::kRuns * Fmt::kRunLen];
  int64_t start[Fmt::kRuns];
  decode_unit<Fmt>(W + uint64_t(r) * row_bytes, r, u, aux, w, start);
#pragma unroll
  for (int k = 0; k < Fmt::kRuns; ++k) store_run<Fmt::kRunLen>(w + k * Fmt::kRunLen, out, r * cols + start[k], kind);
}

// x quantized in blocks of 32 (Q8Activations): one warp per block, one value per lane.
__global__ void quantize_q8_kernel(const float* __restrict__ x, int64_t blocks, int8_t* q, float* d, float* sum) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t b = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (b >= blocks) return;
  const float v = x[b * 32 + lane];
  const float amax = warp_max(fabsf(v));
  const float scale = amax / 127.f;
  const int qi = amax > 0.f ? max(-127, min(127, __float2int_rn(v * (127.f / amax)))) : 0;
  q[b * 32 + lane] = int8_t(qi);
  int s = qi;
#pragma unroll
  for (int o = 1; o < 16; o <<= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) d[b] = scale;
  if ((lane & 15) == 0) sum[b * 2 + lane / 16] = scale * float(s);
}

template <class Fmt>
__global__ void embed_kernel(const uint8_t* __restrict__ W, uint64_t row_bytes, int64_t cols, RowAux aux,
                             const int32_t* ids, float scale, float* out) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t t = blockIdx.y;
  const int64_t r = ids[t];
  const int64_t units = Fmt::units(cols);
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += int64_t(gridDim.x) * blockDim.x) {
    float w[Fmt::kRuns * Fmt::kRunLen];
    int64_t start[Fmt::kRuns];
    decode_unit<Fmt>(W + uint64_t(r) * row_bytes, r, u, aux, w, start);
#pragma unroll
    for (int k = 0; k < Fmt::kRuns; ++k)
#pragma unroll
      for (int j = 0; j < Fmt::kRunLen; ++j) out[t * cols + start[k] + j] = w[k * Fmt::kRunLen + j] * scale;
  }
}

template <class Fmt, int NT, int R, int M, bool Q8>
void launch_gemv(const GemvArgs& a, cudaStream_t s) {
  int64_t groups = 0;
  for (int m = 0; m < (M == 2 ? 1 : a.count); ++m) groups += (a.rows[m] + R - 1) / R;
  static int resident = 0;  // blocks of this instance the whole GPU holds at once
  if (resident == 0) {
    int dev = 0, sms = 0, per_sm = 0;
    BRISK_CUDA_CHECK(cudaGetDevice(&dev));
    BRISK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    BRISK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_kernel<Fmt, NT, R, M, Q8>,
                                                                   kWarpsPerBlock * 32, 0));
    resident = std::max(1, sms * per_sm);
  }
  const int64_t blocks = std::min<int64_t>(blocks_for(groups, kWarpsPerBlock), resident);
  launch(gemv_kernel<Fmt, NT, R, M, Q8>, unsigned(blocks), kWarpsPerBlock * 32, 0, s, a, groups);
}

template <class Fmt, int M, bool Q8>
void dispatch_tokens(const GemvArgs& a, cudaStream_t s) {
  // One token: a row per warp, loads four units deep. More: four rows per warp, so each
  // activation load serves four rows. Formats whose units decode to many values keep one
  // row per warp (registers).
  constexpr int R = Fmt::kRuns * Fmt::kRunLen <= 16 ? 4 : 1;
  if (a.n == 1) launch_gemv<Fmt, 1, 1, M, Q8>(a, s);
  else if (a.n <= 4) launch_gemv<Fmt, 4, R, M, Q8>(a, s);
  else launch_gemv<Fmt, 8, R, M, Q8>(a, s);
}

template <int M>
void dispatch_gemv(GpuLayout layout, const GemvArgs& a, bool q8, cudaStream_t s) {
  with_format(layout, [&](auto fmt) {
    using Fmt = decltype(fmt);
    if constexpr (Q8Dot<Fmt>::kOk) {
      if (q8) return dispatch_tokens<Fmt, M, true>(a, s);
    }
    dispatch_tokens<Fmt, M, false>(a, s);
  });
  BRISK_LAUNCH_CHECK();
}

GemvArgs base_args(const GpuMatrix& w, const float* x, int64_t n, const Q8Activations* xq) {
  if (n <= 0 || n > kGemvMaxTokens) throw Error(ErrorCode::kInternal, "gemv over " + std::to_string(n) + " tokens");
  if (xq && (!has_q8_dot(w.layout) || w.cols % 32 != 0))
    throw Error(ErrorCode::kInternal, "integer gemv on a layout or width without one");
  GemvArgs a{};
  a.row_bytes = w.row_bytes;
  a.cols = w.cols;
  a.x = x;
  if (xq) a.xq = *xq;
  a.n = int(n);
  return a;
}

}  // namespace

bool has_q8_dot(GpuLayout layout) {
  bool ok = false;
  with_format(layout, [&](auto fmt) { ok = Q8Dot<decltype(fmt)>::kOk; });
  return ok;
}

uint64_t q8_activation_bytes(int64_t n, int64_t cols) { return uint64_t(n * cols) * (1 + 4 / 32.0 + 4 / 16.0); }

Q8Activations q8_activations_in(void* scratch, int64_t n, int64_t cols) {
  auto* p = static_cast<uint8_t*>(scratch);
  Q8Activations a;
  a.q = reinterpret_cast<int8_t*>(p);
  a.d = reinterpret_cast<float*>(p + n * cols);
  a.sum = reinterpret_cast<float*>(p + n * cols + n * cols / 32 * 4);
  return a;
}

void quantize_activations(const float* x, int64_t n, int64_t cols, const Q8Activations& out, cudaStream_t s) {
  if (cols % 32 != 0) throw Error(ErrorCode::kInternal, "activations quantized in blocks of 32");
  const int64_t blocks = n * cols / 32;
  launch(quantize_q8_kernel, blocks_for(blocks * 32, 256), 256, 0, s, x, blocks, const_cast<int8_t*>(out.q),
         const_cast<float*>(out.d), const_cast<float*>(out.sum));
}

void gemv(const GpuMatrix& w, const float* x, int64_t n, float* y, const float* bias, bool accumulate,
          cudaStream_t s, const Q8Activations* xq) {
  const GpuMatrix* ws[1] = {&w};
  float* ys[1] = {y};
  const float* bs[1] = {bias};
  gemv_multi(ws, ys, bs, 1, x, n, accumulate, s, xq);
}

void gemv_multi(const GpuMatrix* const* ws, float* const* ys, const float* const* biases, int count, const float* x,
                int64_t n, bool accumulate, cudaStream_t s, const Q8Activations* xq) {
  GemvArgs a = base_args(*ws[0], x, n, xq);
  a.count = count;
  a.accumulate = accumulate;
  for (int i = 0; i < count; ++i) {
    a.w[i] = ws[i]->data, a.rows[i] = ws[i]->rows, a.aux[i] = ws[i]->aux, a.y[i] = ys[i], a.bias[i] = biases[i];
  }
  dispatch_gemv<1>(ws[0]->layout, a, xq != nullptr, s);
}

void gemv_gated(const GpuMatrix& gate, const GpuMatrix& up, const float* x, int64_t n, Activation act, float* out,
                cudaStream_t s, const Q8Activations* xq) {
  GemvArgs a = base_args(gate, x, n, xq);
  a.count = 2;
  a.gated = true;
  a.gelu = act == Activation::GeluTanh;
  a.w[0] = gate.data, a.w[1] = up.data;
  a.rows[0] = a.rows[1] = gate.rows;
  a.aux[0] = gate.aux, a.aux[1] = up.aux;
  a.y[0] = out;
  dispatch_gemv<2>(gate.layout, a, xq != nullptr, s);
}

void dequantize_matrix(const GpuMatrix& w, void* out, bool to_f32, cudaStream_t s) {
  with_format(w.layout, [&](auto fmt) {
    using Fmt = decltype(fmt);
    const int64_t total = Fmt::units(w.cols) * w.rows;
    launch(dequant_kernel<Fmt>, blocks_for(total, 256), 256, 0, s, w.data, w.row_bytes, w.rows, w.cols, w.aux, out,
           to_f32 ? 2 : w.layout == GpuLayout::F16 ? 1 : 0);
  });
  BRISK_LAUNCH_CHECK();
}

void embed_rows(const GpuMatrix& w, const int32_t* ids, int64_t n, float scale, float* out, cudaStream_t s) {
  with_format(w.layout, [&](auto fmt) {
    using Fmt = decltype(fmt);
    const int64_t units = Fmt::units(w.cols);
    dim3 grid(blocks_for(units, 128), unsigned(n));
    launch(embed_kernel<Fmt>, grid, 128, 0, s, w.data, w.row_bytes, w.cols, w.aux, ids, scale, out);
  });
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
