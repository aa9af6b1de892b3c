// Decode-time matrix-vector products: one warp per weight row streams the row once in
// 16-byte units (formats.cuh) and dots it with up to kGemvMaxTokens activation vectors, so
// a batch of decode tokens reads the weights once. The bar is HBM bandwidth: loads are
// coalesced across the warp, several units are in flight per lane, and bias/residual are
// applied in the epilogue instead of in separate passes.
#include "backend/cuda/kernels.cuh"

namespace brisk::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

template <class Fmt, int NT>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const uint8_t* __restrict__ W, uint64_t row_bytes, int64_t rows, int64_t cols, RowAux aux,
                const float* __restrict__ x, int n, float* y, const float* __restrict__ bias, bool accumulate) {
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = threadIdx.x & 31;
  const uint8_t* row = W + uint64_t(r) * row_bytes;
  const int64_t units = Fmt::units(cols);
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
#pragma unroll 2
  for (int64_t u = lane; u < units; u += 32) {
    float w[Fmt::kRuns * Fmt::kRunLen];
    int64_t start[Fmt::kRuns];
    Fmt::decode(row, r, u, aux, w, start);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n) {
        const float* xt = x + int64_t(t) * cols;
#pragma unroll
        for (int k = 0; k < Fmt::kRuns; ++k) {
#pragma unroll
          for (int j = 0; j < Fmt::kRunLen; j += 4) {
            float4 xv = __ldg(reinterpret_cast<const float4*>(xt + start[k] + j));
            const float* wk = w + k * Fmt::kRunLen + j;
            acc[t] += wk[0] * xv.x + wk[1] * xv.y + wk[2] * xv.z + wk[3] * xv.w;
          }
        }
      }
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    float v = warp_sum(acc[t]);
    if (t < n && lane == 0) {
      if (bias) v += bias[r];
      float* o = y + int64_t(t) * rows + r;
      *o = accumulate ? *o + v : v;
    }
  }
}

template <class Fmt>
__global__ void dequant_kernel(const uint8_t* __restrict__ W, uint64_t row_bytes, int64_t rows, int64_t cols,
                               RowAux aux, void* out, int kind) {  // 0 bf16, 1 f16, 2 f32
  const int64_t units = Fmt::units(cols);
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= units * rows) return;
  const int64_t r = i / units, u = i % units;
  float w[Fmt::kRuns * Fmt::kRunLen];
  int64_t start[Fmt::kRuns];
  Fmt::decode(W + uint64_t(r) * row_bytes, r, u, aux, w, start);
#pragma unroll
  for (int k = 0; k < Fmt::kRuns; ++k) {
    const int64_t o = r * cols + start[k];
#pragma unroll
    for (int j = 0; j < Fmt::kRunLen; j += 2) {
      const float a = w[k * Fmt::kRunLen + j], b = w[k * Fmt::kRunLen + j + 1];
      if (kind == 2) reinterpret_cast<float2*>(static_cast<float*>(out) + o + j)[0] = make_float2(a, b);
      else if (kind == 1) reinterpret_cast<__half2*>(static_cast<__half*>(out) + o + j)[0] = __floats2half2_rn(a, b);
      else reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(out) + o + j)[0] = __floats2bfloat162_rn(a, b);
    }
  }
}

template <class Fmt>
__global__ void embed_kernel(const uint8_t* __restrict__ W, uint64_t row_bytes, int64_t cols, RowAux aux,
                             const int32_t* ids, float scale, float* out) {
  const int64_t t = blockIdx.y;
  const int64_t r = ids[t];
  const int64_t units = Fmt::units(cols);
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += int64_t(gridDim.x) * blockDim.x) {
    float w[Fmt::kRuns * Fmt::kRunLen];
    int64_t start[Fmt::kRuns];
    Fmt::decode(W + uint64_t(r) * row_bytes, r, u, aux, w, start);
#pragma unroll
    for (int k = 0; k < Fmt::kRuns; ++k)
#pragma unroll
      for (int j = 0; j < Fmt::kRunLen; ++j) out[t * cols + start[k] + j] = w[k * Fmt::kRunLen + j] * scale;
  }
}

template <class Fmt, int NT>
void launch_gemv(const GpuMatrix& w, const float* x, int n, float* y, const float* bias, bool acc, cudaStream_t s) {
  gemv_kernel<Fmt, NT><<<blocks_for(w.rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s>>>(
      w.data, w.row_bytes, w.rows, w.cols, w.aux, x, n, y, bias, acc);
}

}  // namespace

void gemv(const GpuMatrix& w, const float* x, int64_t n, float* y, const float* bias, bool accumulate,
          cudaStream_t s) {
  if (n <= 0 || n > kGemvMaxTokens) throw Error(ErrorCode::kInternal, "gemv over " + std::to_string(n) + " tokens");
  with_format(w.layout, [&](auto fmt) {
    using Fmt = decltype(fmt);
    if (n == 1) launch_gemv<Fmt, 1>(w, x, 1, y, bias, accumulate, s);
    else if (n <= 4) launch_gemv<Fmt, 4>(w, x, int(n), y, bias, accumulate, s);
    else launch_gemv<Fmt, 8>(w, x, int(n), y, bias, accumulate, s);
  });
  BRISK_LAUNCH_CHECK();
}

void dequantize_matrix(const GpuMatrix& w, void* out, bool to_f32, cudaStream_t s) {
  with_format(w.layout, [&](auto fmt) {
    using Fmt = decltype(fmt);
    const int64_t total = Fmt::units(w.cols) * w.rows;
    dequant_kernel<Fmt><<<blocks_for(total, 256), 256, 0, s>>>(w.data, w.row_bytes, w.rows, w.cols, w.aux, out,
                                                               to_f32 ? 2 : w.layout == GpuLayout::F16 ? 1 : 0);
  });
  BRISK_LAUNCH_CHECK();
}

void embed_rows(const GpuMatrix& w, const int32_t* ids, int64_t n, float scale, float* out, cudaStream_t s) {
  with_format(w.layout, [&](auto fmt) {
    using Fmt = decltype(fmt);
    const int64_t units = Fmt::units(w.cols);
    dim3 grid(blocks_for(units, 128), unsigned(n));
    embed_kernel<Fmt><<<grid, 128, 0, s>>>(w.data, w.row_bytes, w.cols, w.aux, ids, scale, out);
  });
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
